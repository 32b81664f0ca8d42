// Command delegation prints what a parent zone needs to delegate a subdomain to the embedded DNS
// servers of several clusters (docs/multicluster-dns.md): an NS record per server, and the glue
// address records of the servers' names that lie inside the parent zone, as zone-file lines.
//
//	go run ./hack/delegation -zone gslb.example.com -parent example.com \
//	    -servers ns1.example.com=192.0.2.1,ns2.example.com=198.51.100.1
package main

import (
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "delegation:", err)
		os.Exit(2)
	}
}

// server is one cluster's DNS server: its NS name and, for glue, its addresses.
type server struct {
	name  string
	addrs []netip.Addr
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("delegation", flag.ContinueOnError)
	zone := fs.String("zone", "", "the delegated subdomain, e.g. gslb.example.com")
	parent := fs.String("parent", "", "the parent zone, e.g. example.com")
	list := fs.String("servers", "", "comma-separated name=address pairs, one per cluster's server (a name may repeat for several addresses)")
	ttl := fs.Int("ttl", 3600, "TTL of the NS and glue records")
	if err := fs.Parse(args); err != nil {
		return err
	}
	z, p := normal(*zone), normal(*parent)
	if z == "" || p == "" || !strings.HasSuffix(z, "."+p) {
		return fmt.Errorf("-zone %q must be a subdomain of -parent %q", *zone, *parent)
	}
	servers, err := parseServers(*list)
	if err != nil {
		return err
	}
	if *ttl <= 0 {
		return fmt.Errorf("-ttl must be positive")
	}
	fmt.Fprintf(out, "; delegation of %s to %d servers: add to zone %s\n", z, len(servers), p)
	for _, e := range delegation(z, p, servers, v1alpha1.TTL(*ttl)) {
		for _, t := range e.Targets {
			fmt.Fprintf(out, "%s.\t%d\tIN\t%s\t%s\n", e.DNSName, e.RecordTTL, e.RecordType, fqdn(e.RecordType, t))
		}
	}
	return nil
}

// delegation is the NS record set of zone, and the glue of the servers whose names are in parent.
func delegation(zone, parent string, servers []server, ttl v1alpha1.TTL) []*v1alpha1.Endpoint {
	ns := v1alpha1.NewEndpoint(zone, v1alpha1.RecordTypeNS, ttl)
	out := []*v1alpha1.Endpoint{ns}
	for _, s := range servers {
		ns.Targets = append(ns.Targets, s.name)
		if s.name != parent && !strings.HasSuffix(s.name, "."+parent) {
			// Out of the parent's bailiwick: its addresses come from its own zone, not from glue.
			continue
		}
		var v4, v6 []string
		for _, a := range s.addrs {
			if a.Is4() {
				v4 = append(v4, a.String())
			} else {
				v6 = append(v6, a.String())
			}
		}
		if len(v4) > 0 {
			out = append(out, v1alpha1.NewEndpoint(s.name, v1alpha1.RecordTypeA, ttl, v4...))
		}
		if len(v6) > 0 {
			out = append(out, v1alpha1.NewEndpoint(s.name, v1alpha1.RecordTypeAAAA, ttl, v6...))
		}
	}
	return out
}

func parseServers(list string) ([]server, error) {
	byName := map[string]*server{}
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, addr, ok := strings.Cut(item, "=")
		a, err := netip.ParseAddr(strings.TrimSpace(addr))
		if !ok || normal(name) == "" || err != nil {
			return nil, fmt.Errorf("-servers: %q is not name=address", item)
		}
		s := byName[normal(name)]
		if s == nil {
			s = &server{name: normal(name)}
			byName[s.name] = s
		}
		s.addrs = append(s.addrs, a)
	}
	if len(byName) == 0 {
		return nil, fmt.Errorf("-servers lists no server")
	}
	out := make([]server, 0, len(byName))
	for _, s := range byName {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

func normal(name string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), "."))
}

func fqdn(recordType, target string) string {
	if recordType == v1alpha1.RecordTypeNS {
		return target + "."
	}
	return target
}
