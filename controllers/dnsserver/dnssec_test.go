package dnsserver

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// peerServer runs an embedded server on loopback serving zone, signed with keys when given.
func peerServer(t *testing.T, zone string, keys *dnssec.KeySet) string {
	t.Helper()
	s, err := dnsserver.New(dnsserver.Options{Addr: freeport.Addr(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetZone(zone, dnsserver.ZoneData{Signing: keys, Sources: []dnsserver.Source{{Name: "ns/www",
		Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www."+zone, "A", 60, "192.0.2.1")}}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s.Addr().String()
}

func csk(t *testing.T, zone string) *dnssec.KeySet {
	t.Helper()
	k, err := dnssec.Generate(zone, dnssec.ECDSAP256SHA256, dnssec.CSK)
	if err != nil {
		t.Fatal(err)
	}
	k.State, k.WantDS = dnssec.Active, true
	return &dnssec.KeySet{Keys: []dnssec.Key{k}}
}

// Peers serving the zone with the same keys agree; one with keys of its own, or unsigned, is named
// with the tags it lacks and has; one that does not answer is left to the Peers condition.
func TestDivergingPeers(t *testing.T) {
	const zone = "div.example.com"
	ours, other := csk(t, zone), csk(t, zone)
	same := peerServer(t, zone, ours)
	if got := diverging(context.Background(), zone, ours, []string{same, freeport.Addr(t)}); got != "" {
		t.Fatalf("peers with our keys, or silent: %q", got)
	}
	apart, unsigned := peerServer(t, zone, other), peerServer(t, zone, nil)
	got := diverging(context.Background(), zone, ours, []string{same, apart, unsigned})
	for _, want := range []string{
		fmt.Sprintf("peer %s serves other DNSKEYs for zone %s (lacks tags [%d], has tags [%d] not ours)", apart, zone, ours.Keys[0].KeyTag(), other.Keys[0].KeyTag()),
		fmt.Sprintf("peer %s serves zone %s unsigned", unsigned, zone),
		"must hold the same keys' Secret",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("divergence %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, same) {
		t.Errorf("the peer with our keys is named: %q", got)
	}
}

// The Signed condition names the keys, the DS for the parent and what a rollover waits for, and
// never a time: the same keys a day later write the same condition.
func TestSignedConditionIsStable(t *testing.T) {
	const zone = "stable.example.com."
	policy := dnssec.Policy{Algorithm: dnssec.ECDSAP256SHA256, DNSKEYTTL: time.Hour, MaxZoneTTL: time.Hour, DSTTL: time.Hour, DSCheckEvery: time.Minute}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	first, err := dnssec.StepKeys(dnssec.Keyring{Zone: zone}, policy, t0, "", dnssec.ParentDS{})
	if err != nil {
		t.Fatal(err)
	}
	c := signedCondition(zone, first.Keys, first, parentView{})
	if c.Reason != ReasonSigned || !strings.Contains(c.Message, first.Keys.DSRecords()[0]) {
		t.Fatalf("first keys: %+v", c)
	}
	rolling, err := dnssec.StepKeys(first.Keys, policy, t0.Add(time.Hour), dnssec.RollCSK, dnssec.ParentDS{Asked: true})
	if err != nil {
		t.Fatal(err)
	}
	// The message changes when a wait ends (the new DNSKEY has reached caches), and not with time.
	var conds []metav1.Condition
	for _, at := range []time.Duration{3 * time.Hour, 25 * time.Hour} {
		later, err := dnssec.StepKeys(rolling.Keys, policy, t0.Add(at), "", dnssec.ParentDS{Asked: true})
		if err != nil {
			t.Fatal(err)
		}
		conds = append(conds, signedCondition(zone, later.Keys, later, parentView{}))
	}
	a, b := conds[0], conds[1]
	if a.Reason != ReasonRolloverWaitingForDS || a != b || strings.Contains(a.Message, "2026") {
		t.Fatalf("waiting for the DS:\n%+v\n%+v", a, b)
	}
}
