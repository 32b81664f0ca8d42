// Command webhookserver is external-dns's own webhook provider server (provider/webhook/api of
// sigs.k8s.io/external-dns) serving external-dns's in-memory provider, for the tests of
// providers/webhook. It is a module of its own so that external-dns's dependency tree, and the test
// dependencies of its packages that the module proxy does not serve, stay out of the controller's
// go.mod: importing external-dns from the main module would raise a dozen of the controller's
// dependencies and make `go mod tidy` fail on them. (Here too `go mod tidy` needs -e, for the same
// unserved test dependencies; `go build` needs only what go.sum holds.)
//
// It listens on the loopback address it is given (port 0: any free port), prints the address it
// listens on as its first line of output, and serves until killed. external-dns v0.23.0 needs Go 1.27;
// v0.22.0 is the newest release that builds with the project's Go, and its webhook API is the same
// (v0.23.0 only adds a request body size limit).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/external-dns/endpoint"
	"sigs.k8s.io/external-dns/plan"
	"sigs.k8s.io/external-dns/provider/inmemory"
	"sigs.k8s.io/external-dns/provider/webhook/api"
)

// serialized serves the in-memory provider one call at a time: its maps are not safe for concurrent
// use, while the HTTP server calls it from a goroutine per request (a real DNS API is consistent
// under concurrent calls). It also answers the domain filter the provider was given, as every
// webhook provider does with its --domain-filter; the in-memory provider itself reports none.
type serialized struct {
	mu     sync.Mutex
	p      *inmemory.InMemoryProvider
	filter *endpoint.DomainFilter
}

func (s *serialized) Records(ctx context.Context) ([]*endpoint.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p.Records(ctx)
}

func (s *serialized) ApplyChanges(ctx context.Context, changes *plan.Changes) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p.ApplyChanges(ctx, changes)
}

func (s *serialized) AdjustEndpoints(eps []*endpoint.Endpoint) ([]*endpoint.Endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p.AdjustEndpoints(eps)
}

func (s *serialized) GetDomainFilter() endpoint.DomainFilterInterface { return s.filter }

func list(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "loopback address to listen on")
	zones := flag.String("zones", "", "comma-separated zones of the in-memory provider")
	include := flag.String("domain-filter", "", "comma-separated domains the provider answers for")
	exclude := flag.String("exclude-domains", "", "comma-separated domains excluded from the filter")
	regex := flag.String("regex-domain-filter", "", "a regular expression filter instead of domains")
	flag.Parse()

	filter := endpoint.NewDomainFilterWithExclusions(list(*include), list(*exclude))
	if *regex != "" {
		filter = endpoint.NewDomainFilterWithOptions(endpoint.WithRegexDomainFilter(regexp.MustCompile(*regex)))
	}
	provider := &serialized{
		p:      inmemory.NewInMemoryProvider(inmemory.InMemoryInitZones(list(*zones))),
		filter: filter,
	}

	host, _, err := net.SplitHostPort(*listen)
	if err != nil || (host != "127.0.0.1" && host != "::1") {
		log.Fatalf("-listen %q: only a loopback address is allowed", *listen)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	// The same routes as api.StartHTTPApi, which cannot listen on port 0 and report the port.
	server := api.WebhookServer{Provider: provider}
	mux := http.NewServeMux()
	mux.HandleFunc("/", server.NegotiateHandler)
	mux.HandleFunc(api.UrlRecords, server.RecordsHandler)
	mux.HandleFunc(api.UrlAdjustEndpoints, server.AdjustEndpointsHandler)
	fmt.Fprintln(os.Stdout, l.Addr().String())
	s := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(s.Serve(l))
}
