//go:build integration

package dnsrecord_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnspolicyv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/rfc2136"
	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// startBINDZone runs named on loopback as the primary of zone, which the TSIG key keyName may update
// and transfer, and returns the kuadrant.io/rfc2136 Secret data for it.
func startBINDZone(t *testing.T, zone, keyName string) map[string]string {
	t.Helper()
	addr := freeport.Addr(t)
	secret := bind.StartDynamicPrimary(t, addr, zone, keyName)
	ap := netip.MustParseAddrPort(addr)
	return map[string]string{
		v1alpha1.RFC2136HostKey: ap.Addr().String(), v1alpha1.RFC2136PortKey: fmt.Sprint(ap.Port()),
		v1alpha1.RFC2136ZoneKey: zone, v1alpha1.RFC2136TSIGKeyNameKey: keyName, v1alpha1.RFC2136TSIGSecretKey: secret,
	}
}

// bindRecords reads the zone by AXFR as the backend does, and returns its non-TXT record sets but
// the apex NS as lines.
func bindRecords(t *testing.T, data map[string]string, zone string) []string {
	t.Helper()
	b := bindBackend(t, data)
	view, err := b.Zones.Records(t.Context(), providers.Zone{ID: zone, DNSName: zone})
	if err != nil {
		return []string{"read failed: " + err.Error()}
	}
	var lines []string
	for _, ep := range view.Endpoints {
		if ep.RecordType == v1alpha1.RecordTypeTXT || ep.RecordType == v1alpha1.RecordTypeNS {
			continue
		}
		targets := slices.Sorted(slices.Values(ep.Targets))
		lines = append(lines, fmt.Sprintf("%s %s %d %s", ep.DNSName, ep.RecordType, ep.RecordTTL, strings.Join(targets, ",")))
	}
	slices.Sort(lines)
	return lines
}

// Two clusters publish load-balanced trees (geos GEO-EU and US, weights) for one host into a zone
// on BIND, whose backend answers every client alike: the zone holds one A set at the host, the
// union of both clusters' leaves and nothing of the trees; each record is Ready and says, in
// ProviderAccepted, that it is published as a round robin. A leaf whose health check fails leaves
// the union; a cluster that leaves takes its leaves with it.
func TestLoadBalancedTreeOnAServerWithoutRoutingIsARoundRobin(t *testing.T) {
	factory := providers.NewFactory()
	factory.Register(v1alpha1.SecretTypeRFC2136, rfc2136.New)
	cls := startClusters(t, 2, nil, fastOptions(), factory)
	const z, host = "rr.example.com", "app.rr.example.com"
	data := startBINDZone(t, z, "dnspolicy")
	gws := startGateways(t, "127.0.0.6", "127.0.0.7", "127.0.0.10")
	trees := []struct {
		clusterID, geo string
		weight         int
		ips            []string
	}{
		{"cluster-eu-uid", "GEO-EU", 120, []string{"127.0.0.6", "127.0.0.7"}},
		{"cluster-us-uid", "US", 60, []string{"127.0.0.10"}},
	}
	for i, cl := range cls {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: cl.ns}, Type: v1alpha1.SecretTypeRFC2136, StringData: data}
		if err := cl.c.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		var addresses []gatewayapiv1.GatewayStatusAddress
		for _, ip := range trees[i].ips {
			addresses = append(addresses, gatewayapiv1.GatewayStatusAddress{Value: ip})
		}
		eps, err := builder.Build(builder.Input{Hostname: host, Addresses: addresses, GatewayName: "gw", GatewayNamespace: "gateways",
			ClusterID: trees[i].clusterID, LoadBalancing: &dnspolicyv1.LoadBalancingSpec{Geo: trees[i].geo, Weight: trees[i].weight, DefaultGeo: i == 0}})
		if err != nil {
			t.Fatal(err)
		}
		rec := &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: cl.ns},
			Spec: v1alpha1.DNSRecordSpec{RootHost: host, ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
				HealthCheck: healthCheck(gws.port), Endpoints: eps},
		}
		if err := cl.c.Create(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}

	union := []string{host + " A 60 127.0.0.10,127.0.0.6,127.0.0.7"}
	eventually(t, 60*time.Second, func() string { return same(bindRecords(t, data, z), union) })
	for _, cl := range cls {
		eventually(t, 10*time.Second, func() string {
			r := cl.get(t, "web")
			if rd := condition(r, v1alpha1.ConditionTypeReady); !strings.HasPrefix(rd, "True ProviderSuccess") {
				return cl.name + " ready " + rd
			}
			if pa := condition(r, v1alpha1.ConditionTypeProviderAccepted); pa != "False RoundRobin: "+fmt.Sprintf(v1alpha1.MessageRoundRobin, host) {
				return cl.name + " provider accepted " + pa
			}
			return ""
		})
	}

	// A failing leaf leaves the union; the other leaves of its cluster stay.
	gws.set("127.0.0.7", false)
	eventually(t, 60*time.Second, func() string {
		return same(bindRecords(t, data, z), []string{host + " A 60 127.0.0.10,127.0.0.6"})
	})

	// The US cluster leaves: its leaf goes with it.
	cls[1].delete(t, "web")
	eventually(t, 60*time.Second, func() string { return same(bindRecords(t, data, z), []string{host + " A 60 127.0.0.6"}) })
}

// Two clusters sharing a zone on BIND end their conflicts as on the clouds (TestConflictsEnd, on
// the in-memory zone that is as strict as a cloud): the value published first stays though the owner
// joining later has the lower owner ID, the loser says so (Conflicted naming the field and the
// winner; Ready False where a record it wants is not there at all), the zone then stays as it is,
// and the loser's wish is published when the winner leaves.
func TestConflictsEndOnBIND(t *testing.T) {
	const z = "conflict.example.com"
	host := func(s string) string { return s + "." + z }
	cases := []conflictCase{
		{
			name:   "different TTL on a shared record",
			host:   host("ttl"),
			winner: []*v1alpha1.Endpoint{a(host("ttl"), 60, "10.3.0.1")}, loser: []*v1alpha1.Endpoint{a(host("ttl"), 300, "10.3.0.2")},
			field: "recordTTL", loserReady: metav1.ConditionTrue,
			published: []string{"ttl.conflict.example.com A 60 10.3.0.1,10.3.0.2"},
			after:     []string{"ttl.conflict.example.com A 300 10.3.0.2"},
		},
		{
			name:   "two simple CNAMEs for one host",
			host:   host("cname"),
			winner: []*v1alpha1.Endpoint{cname(host("cname"), 60, "lb-a.example.net")}, loser: []*v1alpha1.Endpoint{cname(host("cname"), 60, "lb-b.example.net")},
			field: "targets", loserReady: metav1.ConditionTrue,
			published: []string{"cname.conflict.example.com CNAME 60 lb-a.example.net"},
			after:     []string{"cname.conflict.example.com CNAME 60 lb-b.example.net"},
		},
		{
			name:   "an A against a CNAME",
			host:   host("mixed"),
			winner: []*v1alpha1.Endpoint{a(host("mixed"), 60, "10.4.0.1")}, loser: []*v1alpha1.Endpoint{cname(host("mixed"), 60, "lb.example.net")},
			field: "recordType", loserReady: metav1.ConditionFalse,
			published: []string{"mixed.conflict.example.com A 60 10.4.0.1"},
			after:     []string{"mixed.conflict.example.com CNAME 60 lb.example.net"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			factory := providers.NewFactory()
			factory.Register(v1alpha1.SecretTypeRFC2136, rfc2136.New)
			cls := startClusters(t, 2, nil, fastOptions(), factory)
			data := startBINDZone(t, z, "dnspolicy")
			for _, cl := range cls {
				s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: cl.ns}, Type: v1alpha1.SecretTypeRFC2136, StringData: data}
				if err := cl.c.Create(context.Background(), s); err != nil {
					t.Fatal(err)
				}
			}
			cls[0].ownedRecord(t, "owner-b", tc.host, tc.winner...)
			eventually(t, 30*time.Second, func() string {
				if w := ready(cls[0].get(t, "web")); w == nil || w.Status != metav1.ConditionTrue {
					return fmt.Sprintf("winner Ready %v", w)
				}
				return ""
			})
			cls[1].ownedRecord(t, "owner-a", tc.host, tc.loser...)
			eventually(t, 30*time.Second, func() string {
				if msg := same(bindRecords(t, data, z), tc.published); msg != "" {
					return msg
				}
				winner, loser := cls[0].get(t, "web"), cls[1].get(t, "web")
				if w := conflicted(winner); w == nil || w.Status != metav1.ConditionFalse {
					return fmt.Sprintf("winner Conflicted %v, want False", w)
				}
				l := conflicted(loser)
				if l == nil || l.Status != metav1.ConditionTrue || !strings.Contains(l.Message, "from owner owner-b") || !strings.Contains(l.Message, ": "+tc.field+" wants ") {
					return fmt.Sprintf("loser Conflicted %v, want True naming %s and owner-b", l, tc.field)
				}
				if r := ready(loser); r == nil || r.Status != tc.loserReady {
					return fmt.Sprintf("loser Ready %v, want %s", r, tc.loserReady)
				}
				return ""
			})

			// Quiet: over ten further passes of each record the zone's records and claims stay as
			// they are (only the clusters' lease records are renewed).
			before := bindZoneWithoutLeases(t, data, z)
			p0, p1 := passes(cls[0], "web"), passes(cls[1], "web")
			eventually(t, 30*time.Second, func() string {
				if d0, d1 := passes(cls[0], "web")-p0, passes(cls[1], "web")-p1; d0 < 10 || d1 < 10 {
					return fmt.Sprintf("only %v and %v further passes", d0, d1)
				}
				return ""
			})
			if msg := same(bindZoneWithoutLeases(t, data, z), before); msg != "" {
				t.Errorf("the owners kept changing the zone after converging: %s", msg)
			}

			cls[0].delete(t, "web")
			eventually(t, 25*time.Second, func() string {
				if msg := same(bindRecords(t, data, z), tc.after); msg != "" {
					return msg
				}
				if c := conflicted(cls[1].get(t, "web")); c == nil || c.Status != metav1.ConditionFalse {
					return fmt.Sprintf("remaining owner Conflicted %v, want False", c)
				}
				return ""
			})
		})
	}
}

// bindZoneWithoutLeases is every record set of the zone but the clusters' lease records, as lines.
func bindZoneWithoutLeases(t *testing.T, data map[string]string, zone string) []string {
	t.Helper()
	b := bindBackend(t, data)
	view, err := b.Zones.Records(t.Context(), providers.Zone{ID: zone, DNSName: zone})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, ep := range view.Endpoints {
		if !strings.HasPrefix(ep.DNSName, "dnspolicy-lease-") {
			lines = append(lines, ep.String())
		}
	}
	slices.Sort(lines)
	return lines
}

// bindBackend is the rfc2136 backend of the Secret data, as a controller builds it: the tests read
// and write BIND's zone through it.
func bindBackend(t *testing.T, data map[string]string) providers.Backend {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "bind"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	b, err := rfc2136.New(t.Context(), s, providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
