// Command delegation prints what a parent zone needs to delegate a subdomain to the embedded DNS
// servers of several clusters (docs/multicluster-dns.md): an NS record per server, and the glue
// address records of the servers' names that lie inside the parent zone. As zone-file lines (the
// default), or as a DNSRecord that publishes them into the parent zone through one of our backends
// (-format dnsrecord), when the parent zone is in a cloud this controller writes.
//
//	go run ./hack/delegation -zone gslb.example.com -parent example.com \
//	    -servers ns1.example.com=192.0.2.1,ns2.example.com=198.51.100.1
//	go run ./hack/delegation -format dnsrecord -namespace dns -secret route53 ... | kubectl apply -f -
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/peers"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "delegation:", err)
		os.Exit(2)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("delegation", flag.ContinueOnError)
	zone := fs.String("zone", "", "the delegated subdomain, e.g. gslb.example.com")
	parent := fs.String("parent", "", "the parent zone, e.g. example.com")
	list := fs.String("servers", "", "comma-separated name=address pairs, one per cluster's server (a name may repeat for several addresses)")
	ttl := fs.Int("ttl", 3600, "TTL of the NS and glue records")
	format := fs.String("format", "zone", "zone (zone-file lines) or dnsrecord (a DNSRecord for the parent zone's provider Secret)")
	namespace := fs.String("namespace", "default", "with -format dnsrecord: the DNSRecord's namespace, where the Secret is")
	name := fs.String("name", "", "with -format dnsrecord: the DNSRecord's name (default delegation-<first label of -zone>)")
	secret := fs.String("secret", "", "with -format dnsrecord: the provider Secret of the parent zone")
	if err := fs.Parse(args); err != nil {
		return err
	}
	servers, err := peers.ParseServers(*list)
	if err != nil {
		return fmt.Errorf("-servers: %w", err)
	}
	switch *format {
	case "zone":
		eps, err := peers.Delegation(*zone, *parent, servers, v1alpha1.TTL(*ttl))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "; delegation of %s to %d servers: add to zone %s\n", v1alpha1.NormalizeName(*zone), len(servers), v1alpha1.NormalizeName(*parent))
		for _, e := range eps {
			for _, t := range e.Targets {
				if e.RecordType == v1alpha1.RecordTypeNS {
					t += "."
				}
				fmt.Fprintf(out, "%s.\t%d\tIN\t%s\t%s\n", e.DNSName, e.RecordTTL, e.RecordType, t)
			}
		}
		return nil
	case "dnsrecord":
		if *secret == "" {
			return fmt.Errorf("-format dnsrecord needs -secret, the provider Secret of the parent zone")
		}
		n := *name
		if n == "" {
			n = "delegation-" + firstLabel(v1alpha1.NormalizeName(*zone))
		}
		rec, err := peers.DelegationRecord(*namespace, n, *secret, *zone, *parent, servers, v1alpha1.TTL(*ttl))
		if err != nil {
			return err
		}
		y, err := yaml.Marshal(rec)
		if err != nil {
			return err
		}
		_, err = out.Write(y)
		return err
	default:
		return fmt.Errorf("-format %q: zone or dnsrecord", *format)
	}
}

func firstLabel(name string) string {
	for i, c := range name {
		if c == '.' {
			return name[:i]
		}
	}
	return name
}
