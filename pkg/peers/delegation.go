package peers

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Server is one cluster's embedded DNS server as the parent zone names it: its NS name and, for
// glue, its addresses.
type Server struct {
	Name  string
	Addrs []netip.Addr
}

// ParseServers reads "name=address" pairs separated by commas; a name may repeat for several
// addresses. The servers are sorted by name.
func ParseServers(list string) ([]Server, error) {
	byName := map[string]*Server{}
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, addr, ok := strings.Cut(item, "=")
		a, err := netip.ParseAddr(strings.TrimSpace(addr))
		if !ok || v1alpha1.NormalizeName(strings.TrimSpace(name)) == "" || err != nil {
			return nil, fmt.Errorf("%q is not name=address", item)
		}
		s := byName[v1alpha1.NormalizeName(strings.TrimSpace(name))]
		if s == nil {
			s = &Server{Name: v1alpha1.NormalizeName(strings.TrimSpace(name))}
			byName[s.Name] = s
		}
		s.Addrs = append(s.Addrs, a)
	}
	if len(byName) == 0 {
		return nil, fmt.Errorf("no server listed")
	}
	out := make([]Server, 0, len(byName))
	for _, s := range byName {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Delegation is what zone parent needs to delegate zone to the servers: the NS record set of zone,
// and the glue (A, AAAA) of the servers whose names are in parent; a server named outside parent
// has its addresses from its own zone.
func Delegation(zone, parent string, servers []Server, ttl v1alpha1.TTL) ([]*v1alpha1.Endpoint, error) {
	zone, parent = v1alpha1.NormalizeName(zone), v1alpha1.NormalizeName(parent)
	if zone == "" || parent == "" || !strings.HasSuffix(zone, "."+parent) {
		return nil, fmt.Errorf("zone %q must be a subdomain of parent zone %q", zone, parent)
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("no server to delegate %s to", zone)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("the TTL must be positive")
	}
	ns := v1alpha1.NewEndpoint(zone, v1alpha1.RecordTypeNS, ttl)
	out := []*v1alpha1.Endpoint{ns}
	for _, s := range servers {
		ns.Targets = append(ns.Targets, s.Name)
		if s.Name != parent && !strings.HasSuffix(s.Name, "."+parent) {
			continue
		}
		var v4, v6 []string
		for _, a := range s.Addrs {
			if a.Is4() {
				v4 = append(v4, a.String())
			} else {
				v6 = append(v6, a.String())
			}
		}
		if len(v4) > 0 {
			out = append(out, v1alpha1.NewEndpoint(s.Name, v1alpha1.RecordTypeA, ttl, v4...))
		}
		if len(v6) > 0 {
			out = append(out, v1alpha1.NewEndpoint(s.Name, v1alpha1.RecordTypeAAAA, ttl, v6...))
		}
	}
	return out, nil
}

// DelegationRecord is the delegation as a DNSRecord whose root host is the parent zone, published
// through the provider Secret named secret like any record: the parent zone is then written by one
// of our backends (a Route 53 zone holding example.com, the embedded servers gslb.example.com), its
// records claimed by the record's owner, never a human's.
func DelegationRecord(namespace, name, secret, zone, parent string, servers []Server, ttl v1alpha1.TTL) (*v1alpha1.DNSRecord, error) {
	eps, err := Delegation(zone, parent, servers, ttl)
	if err != nil {
		return nil, err
	}
	return &v1alpha1.DNSRecord{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "DNSRecord"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1alpha1.DNSRecordSpec{
			RootHost:    v1alpha1.NormalizeName(parent),
			ProviderRef: &v1alpha1.ProviderRef{Name: secret},
			Endpoints:   eps,
		},
	}, nil
}
