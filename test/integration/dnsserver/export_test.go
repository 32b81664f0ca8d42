//go:build integration

package dnsserver_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/peers"
)

// A tenant's authoritative record holding the lease of another cluster, a malformed lease and a
// malformed health statement leaves this cluster's export as a peer pulls it well-formed, with this
// cluster's lease the only one and none of the tenant's records in it; those records are refused
// from the served zone, and the record says which and why. Before, the other cluster's lease made
// every peer refuse the whole export.
func TestExportCarriesOwnLeaseOnly(t *testing.T) {
	const zone = "x.example.com"
	var kubeSystem corev1.Namespace
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "kube-system"}, &kubeSystem); err != nil {
		t.Fatal(err)
	}
	clusterID := string(kubeSystem.UID)
	other := lease.Renew("another-cluster", time.Now(), 30*time.Second, 75*time.Second).Record(zone)
	malformed := v1alpha1.NewEndpoint(lease.RecordName(clusterID, zone), "TXT", 60, `"dnspolicy-lease=1 holder=`+clusterID+` renewed=soon"`)
	badHealth := v1alpha1.NewEndpoint("dnspolicy-health-00000000.www."+zone, "TXT", 60, `"dnspolicy-health=1 owner=victim state=healthy renewal=1"`)
	ns := newNamespace(t)
	www := writeAuthoritative(t, ns, zone, "www."+zone, []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www."+zone, "A", 60, "192.0.2.1")})
	tenant := writeAuthoritative(t, ns, zone, zone, []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint(zone, "A", 60, "192.0.2.2"), other, malformed, badHealth,
	})
	m := startManager(t, nil, func(o *app.Options) {
		o.DNSServer.ExportPrefixes = map[string][]netip.Prefix{zone: {netip.MustParsePrefix("127.0.0.0/8")}}
	})
	eventually(t, 10*time.Second, m.addr, "www."+zone, dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.1")
	for _, want := range []string{"False RecordsRefused: 3 endpoint(s)",
		other.DNSName + " TXT: the lease of cluster " + lease.Key("another-cluster"),
		malformed.DNSName + " TXT: a malformed lease record",
		badHealth.DNSName + " TXT: a malformed health statement"} {
		waitFor(t, 10*time.Second, servedCondition(t, tenant, want))
	}
	waitFor(t, 10*time.Second, servedCondition(t, www, "True Served"))

	pulled, err := peers.Pull(context.Background(), peers.Peer{Zone: zone, Addr: m.addr}, 5*time.Second, 0, 0, 0)
	if err != nil {
		t.Fatalf("a peer's pull of the export: %v", err)
	}
	var leases []string
	for _, ep := range pulled.Export.Endpoints {
		if l, ok := lease.Parse(ep); ok {
			leases = append(leases, l.Holder)
		}
		if strings.HasPrefix(ep.DNSName, "dnspolicy-") && ep.DNSName != lease.RecordName(clusterID, zone) {
			t.Errorf("the export holds the tenant's %s", ep)
		}
	}
	if len(leases) != 1 || leases[0] != clusterID || pulled.Export.Cluster != lease.Key(clusterID) {
		t.Errorf("the export of cluster %s holds the leases of %v, want this cluster's (%s) alone", pulled.Export.Cluster, leases, clusterID)
	}
	// Nor are they served.
	if got := digShort(t, m.addr, other.DNSName, "TXT"); got != "NXDOMAIN" {
		t.Errorf("dig the other cluster's lease: %q", got)
	}
}
