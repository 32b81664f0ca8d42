package dnsserver

import (
	"fmt"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/health"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
)

// Lease and health records are how clusters and owners tell each other they are live (packages
// lease and health), and peers read them in this cluster's export: a peer refuses an export that
// holds another cluster's lease. Any namespace entitled to a zone can write an authoritative record
// holding such a record in the name of another cluster or owner, or a malformed one. So in an
// exported zone only the lease and health records this cluster writes are served and exported: its
// own lease at the zone's apex, and well-formed health statements of owners no peer's export claims
// (package peers). The others are refused (ReasonRecordsRefused, naming the record), and the export
// carries the lease this controller renews alone.

// ownRecordsOnly leaves out of sources, in an exported zone, the lease and health records this
// cluster did not write, and returns the rest, their endpoints, and why each record left out was,
// by source name.
func (r *Reconciler) ownRecordsOnly(zone string, sources []dnsserver.Source) ([]dnsserver.Source, []*v1alpha1.Endpoint, map[string][]string) {
	var peerOwners map[string]bool
	exported := r.exported(zone)
	if exported && r.Peers != nil {
		peerOwners = r.Peers.PeerOwners(zone)
	}
	var local []*v1alpha1.Endpoint
	var refused map[string][]string
	out := make([]dnsserver.Source, 0, len(sources))
	for _, src := range sources {
		kept := make([]*v1alpha1.Endpoint, 0, len(src.Endpoints))
		for _, ep := range src.Endpoints {
			if ep == nil {
				continue
			}
			if exported {
				if why := r.notOwn(zone, ep, peerOwners); why != "" {
					if refused == nil {
						refused = map[string][]string{}
					}
					refused[src.Name] = append(refused[src.Name], fmt.Sprintf("%.80s %s: %s", ep.DNSName, ep.RecordType, why))
					continue
				}
			}
			kept = append(kept, ep)
		}
		src.Endpoints = kept
		out = append(out, src)
		local = append(local, kept...)
	}
	return out, local, refused
}

// notOwn says why ep is a lease or health record this cluster did not write; "" for any other.
func (r *Reconciler) notOwn(zone string, ep *v1alpha1.Endpoint, peerOwners map[string]bool) string {
	name := v1alpha1.NormalizeName(ep.DNSName)
	switch {
	case shaped(ep, lease.Kind):
		l, ok := lease.Parse(ep)
		if !ok || ep.SetIdentifier != "" {
			return "a malformed lease record; only this cluster's own lease is served and exported"
		}
		if l.Holder != r.ClusterID || name != lease.RecordName(r.ClusterID, zone) {
			return fmt.Sprintf("the lease of cluster %s; only this cluster's own lease, at the zone's apex, is served and exported", lease.Key(l.Holder))
		}
	case shaped(ep, health.Kind):
		s, ok := health.Parse(ep)
		_, host, _ := strings.Cut(name, ".")
		if !ok || ep.SetIdentifier != "" || name != health.RecordName(s.Owner, host) {
			return "a malformed health statement; only statements of this cluster's owners are served and exported"
		}
		if peerOwners[s.Owner] {
			return fmt.Sprintf("a health statement of owner %s, whose records another cluster's export holds; only statements of this cluster's owners are served and exported", s.Owner)
		}
	}
	return ""
}

// shaped says whether ep looks like an owner-named record of kind: its name is one
// (registry.NamedRecordName: dnspolicy-<kind>-<hash8>.<name>) or a value states one
// ("dnspolicy-<kind>=...").
func shaped(ep *v1alpha1.Endpoint, kind string) bool {
	first, _, _ := strings.Cut(v1alpha1.NormalizeName(ep.DNSName), ".")
	if strings.HasPrefix(first, "dnspolicy-"+kind+"-") {
		return true
	}
	for _, t := range ep.Targets {
		if strings.Contains(t, "dnspolicy-"+kind+"=") {
			return true
		}
	}
	return false
}

// withRefused adds the records ownRecordsOnly left out to the server's refusals, by source.
func withRefused(server, own map[string][]string) map[string][]string {
	if len(own) == 0 {
		return server
	}
	out := make(map[string][]string, len(server)+len(own))
	for name, reasons := range server {
		out[name] = reasons
	}
	for name, reasons := range own {
		out[name] = append(append([]string(nil), reasons...), out[name]...)
	}
	return out
}
