package dnsserver

import (
	"strings"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/health"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
)

// Of the lease and health records of an exported zone, only this cluster's lease at the apex and
// well-formed statements of owners no peer claims are its own; other records are not judged.
func TestNotOwn(t *testing.T) {
	const zone = "z.example.com"
	r := &Reconciler{ClusterID: "cluster-a", Exports: []string{zone}}
	now := time.Unix(1_800_000_000, 0)
	statement := health.Statement{Owner: "owner-a", Healthy: true, Renewal: 1}
	for _, c := range []struct {
		name string
		ep   *v1alpha1.Endpoint
		want string
	}{
		{"own lease", lease.Renew("cluster-a", now, 30*time.Second, 75*time.Second).Record(zone), ""},
		{"another cluster's lease", lease.Renew("cluster-b", now, 30*time.Second, 75*time.Second).Record(zone), "the lease of cluster " + lease.Key("cluster-b")},
		{"own lease below the apex", lease.Renew("cluster-a", now, 30*time.Second, 75*time.Second).Record("sub." + zone), "the lease of cluster " + lease.Key("cluster-a")},
		{"a lease's value elsewhere", v1alpha1.NewEndpoint("www."+zone, "TXT", 60, `"dnspolicy-lease=1 holder=x"`), "a malformed lease record"},
		{"a lease's name, another value", v1alpha1.NewEndpoint(lease.RecordName("cluster-a", zone), "TXT", 60, `"hello"`), "a malformed lease record"},
		{"own statement", statement.Record("www." + zone), ""},
		{"a peer owner's statement", health.Statement{Owner: "owner-p", Renewal: 1}.Record("www." + zone), "a health statement of owner owner-p"},
		{"a statement under another owner's name", v1alpha1.NewEndpoint(health.RecordName("owner-b", "www."+zone), "TXT", 60, `"dnspolicy-health=1 owner=owner-a state=healthy renewal=1"`), "a malformed health statement"},
		{"an ordinary TXT", v1alpha1.NewEndpoint("www."+zone, "TXT", 60, `"v=spf1 -all"`), ""},
	} {
		got := r.notOwn(zone, c.ep, map[string]bool{"owner-p": true})
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
