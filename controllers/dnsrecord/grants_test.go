package dnsrecord

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/backends"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
	"github.com/dnspolicy/dnspolicy-controller/pkg/grant"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// hostZones stands for a backend whose zones the embedded server serves (coredns).
type hostZones struct{ providers.HostZones }

// Grants gate a zone-hosting backend's records, and every backend's with GrantsAllBackends; a
// gated record with any name (root host or endpoint) not granted ends the pass NotGranted, for
// good, naming the names; authoritative records a backend serves are left to the DNS server, those
// published into a zone are gated.
func TestCheckGrants(t *testing.T) {
	grants := grant.Grants{{Namespaces: []string{"team-a"}, Domains: []string{"a.example.com"}}}
	record := func(ns, root string, names ...string) *v1alpha1.DNSRecord {
		rec := &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "r"}, Spec: v1alpha1.DNSRecordSpec{RootHost: root}}
		for _, n := range names {
			rec.Spec.Endpoints = append(rec.Spec.Endpoints, v1alpha1.NewEndpoint(n, "A", 60, "192.0.2.1"))
		}
		return rec
	}
	cloud, hosting := &backends.Backend{}, &backends.Backend{Hosts: hostZones{}}
	authoritative := record("team-b", "b.example.com", "b.example.com")
	authoritative.Labels = map[string]string{v1alpha1.AuthoritativeRecordLabel: "true"}
	for _, tc := range []struct {
		name    string
		all     bool
		backend *backends.Backend
		rec     *v1alpha1.DNSRecord
		want    string // Ready message; "" when the pass goes on
	}{
		{"granted", false, hosting, record("team-a", "app.a.example.com", "app.a.example.com", "x.app.a.example.com"), ""},
		{"cloud backend, embedded scope", false, cloud, record("team-b", "app.a.example.com", "app.a.example.com"), ""},
		{"zone-hosting backend", false, hosting, record("team-b", "app.a.example.com", "app.a.example.com"),
			"namespace team-b has no grant for app.a.example.com (grants are set by the administrator: --grant, --grants-file); nothing of this record is published"},
		{"cloud backend, all scope", true, cloud, record("team-a", "app.a.example.com", "app.a.example.com", "app.b.example.com"),
			"namespace team-a has no grant for app.b.example.com (grants are set by the administrator: --grant, --grants-file); nothing of this record is published"},
		{"root host not granted", false, hosting, record("team-a", "example.com", "x.a.example.com"),
			"namespace team-a has no grant for example.com (grants are set by the administrator: --grant, --grants-file); nothing of this record is published"},
		{"authoritative", true, hosting, authoritative, ""},
		{"authoritative record published into a zone, all scope", true, cloud, authoritative,
			"namespace team-b has no grant for b.example.com (grants are set by the administrator: --grant, --grants-file); nothing of this record is published"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Options: Options{Grants: grants, GrantsAllBackends: tc.all}}
			s := &scope{record: tc.rec, backend: tc.backend}
			_, done, err := r.checkGrants(context.Background(), s)
			c := conditions.Get(tc.rec.Status.Conditions, v1alpha1.ConditionTypeReady)
			if tc.want == "" {
				if done || err != nil || c != nil {
					t.Errorf("pass ended (%v, %v) with Ready %+v, want it to go on", done, err, c)
				}
				return
			}
			if !done || !errors.Is(err, reconcile.TerminalError(nil)) {
				t.Errorf("done %v, err %v: want the pass ended with a terminal error", done, err)
			}
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonNotGranted || c.Message != tc.want {
				t.Errorf("Ready %+v, want False NotGranted %q", c, tc.want)
			}
		})
	}
}
