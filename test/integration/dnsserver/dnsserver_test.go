//go:build integration

package dnsserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/pkg/grant"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/providers/coredns"
)

// kuadrantAPI is the spec.endpoints of the authoritative record Kuadrant's dns-operator keeps for
// api.k.example.com, in its JSON, once two clusters contributed: EU (with the default geo) and US,
// each record set with its ownership TXT (quoted value, same set identifier and routing properties).
const kuadrantAPI = `[
  {"dnsName":"api.k.example.com","recordTTL":300,"recordType":"CNAME","targets":["klb.api.k.example.com"]},
  {"dnsName":"klb.api.k.example.com","providerSpecific":[{"name":"geo-code","value":"GEO-EU"}],"recordTTL":300,"recordType":"CNAME","setIdentifier":"GEO-EU","targets":["geo-eu.klb.api.k.example.com"]},
  {"dnsName":"klb.api.k.example.com","providerSpecific":[{"name":"geo-code","value":"*"}],"recordTTL":300,"recordType":"CNAME","setIdentifier":"default","targets":["geo-eu.klb.api.k.example.com"]},
  {"dnsName":"klb.api.k.example.com","providerSpecific":[{"name":"geo-code","value":"US"}],"recordTTL":300,"recordType":"CNAME","setIdentifier":"US","targets":["us.klb.api.k.example.com"]},
  {"dnsName":"geo-eu.klb.api.k.example.com","providerSpecific":[{"name":"weight","value":"120"}],"recordTTL":60,"recordType":"CNAME","setIdentifier":"2w7ryu-1h4y2q.klb.api.k.example.com","targets":["2w7ryu-1h4y2q.klb.api.k.example.com"]},
  {"dnsName":"us.klb.api.k.example.com","providerSpecific":[{"name":"weight","value":"120"}],"recordTTL":60,"recordType":"CNAME","setIdentifier":"9xk2pa-1h4y2q.klb.api.k.example.com","targets":["9xk2pa-1h4y2q.klb.api.k.example.com"]},
  {"dnsName":"2w7ryu-1h4y2q.klb.api.k.example.com","recordTTL":60,"recordType":"A","targets":["172.18.200.1"]},
  {"dnsName":"9xk2pa-1h4y2q.klb.api.k.example.com","recordTTL":60,"recordType":"A","targets":["172.18.100.1"]},
  {"dnsName":"kuadrant-4bf1h7kq-cname-api.k.example.com","recordTTL":300,"recordType":"TXT","targets":["\"heritage=external-dns,external-dns/owner=eu1owner,external-dns/version=1\""]},
  {"dnsName":"kuadrant-1jvq7n2c-cname-api.k.example.com","recordTTL":300,"recordType":"TXT","targets":["\"heritage=external-dns,external-dns/owner=us1owner,external-dns/version=1\""]},
  {"dnsName":"kuadrant-4bf1h7kq-cname-klb.api.k.example.com","providerSpecific":[{"name":"geo-code","value":"GEO-EU"}],"recordTTL":300,"recordType":"TXT","setIdentifier":"GEO-EU","targets":["\"heritage=external-dns,external-dns/owner=eu1owner,external-dns/version=1\""]},
  {"dnsName":"kuadrant-4bf1h7kq-cname-klb.api.k.example.com","providerSpecific":[{"name":"geo-code","value":"*"}],"recordTTL":300,"recordType":"TXT","setIdentifier":"default","targets":["\"heritage=external-dns,external-dns/owner=eu1owner,external-dns/version=1\""]},
  {"dnsName":"kuadrant-1jvq7n2c-cname-klb.api.k.example.com","providerSpecific":[{"name":"geo-code","value":"US"}],"recordTTL":300,"recordType":"TXT","setIdentifier":"US","targets":["\"heritage=external-dns,external-dns/owner=us1owner,external-dns/version=1\""]},
  {"dnsName":"kuadrant-4bf1h7kq-a-2w7ryu-1h4y2q.klb.api.k.example.com","recordTTL":60,"recordType":"TXT","targets":["\"heritage=external-dns,external-dns/owner=eu1owner,external-dns/version=1\""]},
  {"dnsName":"kuadrant-1jvq7n2c-a-9xk2pa-1h4y2q.klb.api.k.example.com","recordTTL":60,"recordType":"TXT","targets":["\"heritage=external-dns,external-dns/owner=us1owner,external-dns/version=1\""]}
]`

// writeAuthoritative creates an authoritative record as Kuadrant's dns-operator names and labels it,
// in a namespace granted the zone (as the administrator grants the namespace of a dns-operator
// publishing there): managers started after it have the grant.
func writeAuthoritative(t *testing.T, ns, zone, rootHost string, eps []*v1alpha1.Endpoint) *v1alpha1.DNSRecord {
	t.Helper()
	grantZones(ns, zone)
	return writeUngranted(t, ns, zone, rootHost, eps)
}

// grants are the grants of every manager startManager starts: each test's namespaces are its own,
// so grants left by earlier tests grant nothing a later one uses.
var (
	grantsMu sync.Mutex
	grants   grant.Grants
)

// grantZones grants the comma-separated zones to the namespace, for managers started from now on.
func grantZones(ns, zones string) {
	grantsMu.Lock()
	defer grantsMu.Unlock()
	grants = append(grants, grant.Grant{Namespaces: []string{ns}, Domains: strings.Split(zones, ",")})
}

func currentGrants() grant.Grants {
	grantsMu.Lock()
	defer grantsMu.Unlock()
	return slices.Clone(grants)
}

// writeUngranted creates an authoritative record without granting its namespace anything.
func writeUngranted(t *testing.T, ns, zone, rootHost string, eps []*v1alpha1.Endpoint) *v1alpha1.DNSRecord {
	t.Helper()
	r := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns,
			Name:      "authoritative-record-" + hash.Base36(rootHost, 8),
			Labels: map[string]string{
				"kuadrant.io/authoritative-record":      "true",
				"kuadrant.io/authoritative-record-hash": hash.Base36(rootHost, 8),
				"kuadrant.io/coredns-zone-name":         zone,
			},
		},
		Spec: v1alpha1.DNSRecordSpec{RootHost: rootHost, Endpoints: eps},
	}
	if err := env.Client.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), r) })
	return r
}

// Records written as Kuadrant's dns-operator writes them, in two namespaces, with no controller of
// ours publishing, are served as one zone: geo by client subnet with the default geo, the ownership
// TXT without its quotes, and the simple host of the other namespace.
func TestKuadrantShapedRecordsAreServed(t *testing.T) {
	var api []*v1alpha1.Endpoint
	if err := json.Unmarshal([]byte(kuadrantAPI), &api); err != nil {
		t.Fatal(err)
	}
	writeAuthoritative(t, newNamespace(t), "k.example.com", "api.k.example.com", api)
	writeAuthoritative(t, newNamespace(t), "k.example.com", "simple.k.example.com", []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("simple.k.example.com", "A", 60, "172.18.200.9"),
	})
	m := startManager(t, nil)

	eu := "NOERROR klb.api.k.example.com geo-eu.klb.api.k.example.com 2w7ryu-1h4y2q.klb.api.k.example.com 172.18.200.1"
	us := "NOERROR klb.api.k.example.com us.klb.api.k.example.com 9xk2pa-1h4y2q.klb.api.k.example.com 172.18.100.1"
	eventually(t, 10*time.Second, m.addr, "simple.k.example.com", dns.TypeA, netip.Addr{}, "NOERROR 172.18.200.9")
	for _, tc := range []struct {
		from netip.Addr
		want string
	}{
		{clientIE, eu}, {clientDE, eu}, {clientUS, us},
		// No Asian set: the default geo.
		{clientJP, eu},
	} {
		r, err := query(m.addr, "api.k.example.com", dns.TypeA, tc.from)
		if err != nil {
			t.Fatal(err)
		}
		if got := answer(r); got != tc.want || !r.Authoritative {
			t.Errorf("api.k.example.com from %s: %q (aa=%v), want %q", tc.from, got, r.Authoritative, tc.want)
		}
	}
	r, err := query(m.addr, "kuadrant-4bf1h7kq-cname-api.k.example.com", dns.TypeTXT, netip.Addr{})
	if err != nil {
		t.Fatal(err)
	}
	if got := answer(r); got != "NOERROR heritage=external-dns,external-dns/owner=eu1owner,external-dns/version=1" {
		t.Errorf("ownership TXT: %q", got)
	}
	if r, err := query(m.addr, "www.example.org", dns.TypeA, netip.Addr{}); err != nil || r.Rcode != dns.RcodeRefused {
		t.Errorf("a name of no zone: %v %v, want REFUSED", r, err)
	}
}

// A change to an authoritative record is served within one second, with a larger serial; a deleted
// zone is no longer served; and after a restart the server serves the zone again from the API
// server, with nothing rewritten.
func TestChangesRestartAndRemoval(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	rec := writeAuthoritative(t, ns, "c.example.com", "www.c.example.com", []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("www.c.example.com", "A", 60, "192.0.2.1"),
	})
	m := startManager(t, nil)
	eventually(t, 10*time.Second, m.addr, "www.c.example.com", dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.1")
	before := serial(t, m.addr, "c.example.com")

	var took []time.Duration
	for i, target := range []string{"192.0.2.2", "192.0.2.3", "192.0.2.4"} {
		// The server writes the record's Served condition, so an update may meet a newer version.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rec), rec); err != nil {
				return err
			}
			rec.Spec.Endpoints[0].Targets = v1alpha1.Targets{target}
			return env.Client.Update(ctx, rec)
		}); err != nil {
			t.Fatal(err)
		}
		took = append(took, eventually(t, time.Second, m.addr, "www.c.example.com", dns.TypeA, netip.Addr{}, "NOERROR "+target))
		t.Logf("change %d served after %s", i+1, took[i])
	}
	if after := serial(t, m.addr, "c.example.com"); after <= before {
		t.Errorf("serial %d after changes, was %d: want it larger", after, before)
	}

	m.stop()
	restarted := startManager(t, nil)
	eventually(t, 10*time.Second, restarted.addr, "www.c.example.com", dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.4")

	if err := env.Client.Delete(ctx, rec); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Second, restarted.addr, "www.c.example.com", dns.TypeA, netip.Addr{}, "REFUSED")
}

// Replicas fed the same records serve the same serial: it derives from when the records changed in
// the API server, not from when each replica saw them.
func TestReplicasAgreeOnSerial(t *testing.T) {
	writeAuthoritative(t, newNamespace(t), "r.example.com", "r.example.com", []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("r.example.com", "A", 60, "192.0.2.1"),
	})
	one := startManager(t, nil)
	eventually(t, 10*time.Second, one.addr, "r.example.com", dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.1")
	// A second later, so a serial taken from the clock would differ.
	time.Sleep(1100 * time.Millisecond)
	two := startManager(t, nil)
	eventually(t, 10*time.Second, two.addr, "r.example.com", dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.1")
	if a, b := serial(t, one.addr, "r.example.com"), serial(t, two.addr, "r.example.com"); a != b {
		t.Errorf("replicas serve serials %d and %d", a, b)
	}
}

// The whole path with the record controller: a DNSRecord whose provider Secret is of type
// kuadrant.io/coredns is published, as Kuadrant's dns-operator publishes it, into the authoritative
// record of its root host, which the record controller reconciles as Kuadrant does (DESIGN 4b) and
// the server answers; deleting the DNSRecord takes its names out, and the emptied authoritative record
// goes.
func TestCoreDNSRecordIsServed(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	createSecret(t, ns, "e.example.com")
	m := startManager(t, coreDNSFactory(t))

	owner := "owner-e1"
	txt := func(name, recordType string) *v1alpha1.Endpoint {
		return v1alpha1.NewEndpoint(fmt.Sprintf("kuadrant-%s-%s-%s", hash.Base36(owner, 8), recordType, name), "TXT", 300,
			`"heritage=external-dns,external-dns/owner=`+owner+`,external-dns/version=1"`)
	}
	rec := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: v1alpha1.DNSRecordSpec{
			RootHost: "app.e.example.com", OwnerID: owner, ProviderRef: &v1alpha1.ProviderRef{Name: "coredns"},
			Endpoints: []*v1alpha1.Endpoint{
				v1alpha1.NewEndpoint("app.e.example.com", "CNAME", 300, "klb.app.e.example.com"),
				v1alpha1.NewEndpoint("klb.app.e.example.com", "CNAME", 300, "ie.klb.app.e.example.com").
					WithSetIdentifier("IE").WithProviderSpecific("geo-code", "IE"),
				v1alpha1.NewEndpoint("klb.app.e.example.com", "CNAME", 300, "us.klb.app.e.example.com").
					WithSetIdentifier("default").WithProviderSpecific("geo-code", "*"),
				v1alpha1.NewEndpoint("ie.klb.app.e.example.com", "A", 60, "192.0.2.10"),
				v1alpha1.NewEndpoint("us.klb.app.e.example.com", "A", 60, "192.0.2.20"),
			},
		},
	}
	if err := env.Client.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, m.addr, "app.e.example.com", dns.TypeA, clientIE,
		"NOERROR klb.app.e.example.com ie.klb.app.e.example.com 192.0.2.10")
	eventually(t, time.Second, m.addr, "app.e.example.com", dns.TypeA, clientUS,
		"NOERROR klb.app.e.example.com us.klb.app.e.example.com 192.0.2.20")
	r, err := query(m.addr, txt("app.e.example.com", "cname").DNSName, dns.TypeTXT, netip.Addr{})
	if err != nil {
		t.Fatal(err)
	}
	if got := answer(r); !strings.HasPrefix(got, "NOERROR heritage=external-dns,") || !strings.Contains(got, "external-dns/owner="+owner+",") {
		t.Errorf("ownership TXT of the root host: %q", got)
	}
	// Records are answered with their TTLs; the ownership TXT, written without one as Kuadrant
	// writes it into an authoritative record, with the server's default, as any record without one.
	if got := ttls(r); !slices.Equal(got, []uint32{60}) {
		t.Errorf("ownership TXT of the root host answered with TTLs %v, want [60]", got)
	}
	if r, err := query(m.addr, "app.e.example.com", dns.TypeA, clientIE); err != nil || !slices.Equal(ttls(r), []uint32{300, 300, 60}) {
		t.Errorf("app.e.example.com answered %v (%v), want the TTLs 300, 300, 60 of its chain", r, err)
	}

	auth := &v1alpha1.DNSRecord{}
	key := client.ObjectKey{Namespace: ns, Name: coredns.RecordName("app.e.example.com")}
	waitFor(t, 10*time.Second, func() string {
		if err := env.Client.Get(ctx, key, auth); err != nil {
			return err.Error()
		}
		return readyIs(auth, metav1.ConditionTrue, v1alpha1.ReasonProviderSuccess, "Provider ensured the dns record")
	})
	pinAuthoritative(t, auth, "e.example.com", "coredns", []string{owner})
	if !slices.ContainsFunc(auth.Spec.Endpoints, func(ep *v1alpha1.Endpoint) bool { return ep.DNSName == txt("app.e.example.com", "cname").DNSName }) {
		t.Errorf("authoritative record lacks the ownership TXT of its root host: %v", auth.Spec.Endpoints)
	}
	// As Kuadrant writes an authoritative record: claims without a TTL, records labelled with their owners.
	for _, ep := range auth.Spec.Endpoints {
		if ep.RecordType == v1alpha1.RecordTypeTXT && ep.RecordTTL != 0 || ep.RecordType != v1alpha1.RecordTypeTXT && ep.Labels["owner"] != owner {
			t.Errorf("authoritative record holds %v with labels %v; want claims without a TTL, records labelled owner=%s", ep, ep.Labels, owner)
		}
	}
	// The record itself is published as Kuadrant publishes it: through the endpoint provider into
	// the authoritative record of its root host, which is its zone.
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rec), rec); err != nil {
		t.Fatal(err)
	}
	if msg := readyIs(rec, metav1.ConditionTrue, v1alpha1.ReasonProviderSuccess, "Provider ensured the dns record"); msg != "" {
		t.Error(msg)
	}
	pinContributor(t, rec, "app.e.example.com", owner)
	if c := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeProviderAccepted); c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1alpha1.ReasonAccepted {
		t.Errorf("record ProviderAccepted = %+v, want True/Accepted", c)
	}
	// The DNS server's Served condition stands beside the record controller's.
	waitFor(t, 10*time.Second, func() string {
		if err := env.Client.Get(ctx, key, auth); err != nil {
			return err.Error()
		}
		if c := meta.FindStatusCondition(auth.Status.Conditions, "Served"); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Sprintf("authoritative record Served = %+v", c)
		}
		return ""
	})

	if err := env.Client.Delete(ctx, rec); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, m.addr, "app.e.example.com", dns.TypeA, clientIE, "REFUSED")
	waitFor(t, 10*time.Second, func() string {
		if err := env.Client.Get(ctx, key, auth); err == nil {
			return "the authoritative record of a root host without contributors still exists"
		}
		return ""
	})
	// The last record of the zone is gone too: its withdrawal from an empty zone finishes (issue 17).
	waitFor(t, 5*time.Second, func() string {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rec), &v1alpha1.DNSRecord{}); err == nil {
			return "the zone's last DNSRecord still exists (its finalizer stays)"
		}
		return ""
	})
}

// readyIs says how rec's Ready condition differs from status, reason and message ("" when it does
// not).
func readyIs(rec *v1alpha1.DNSRecord, status metav1.ConditionStatus, reason, message string) string {
	c := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeReady)
	if c == nil || c.Status != status || c.Reason != reason || c.Message != message || c.ObservedGeneration != rec.Generation {
		return fmt.Sprintf("%s/%s Ready = %+v, want %s/%s %q at generation %d", rec.Namespace, rec.Name, c, status, reason, message, rec.Generation)
	}
	return ""
}

// pinAuthoritative checks Kuadrant's model of an authoritative record as its own pass leaves it: the
// authoritative labels, the provider label, the zone label, its own owner ID (a hash of its UID),
// the finalizer, the coredns zone as its zone, the Secret as its provider, and the owners claiming
// its root host.
func pinAuthoritative(t *testing.T, auth *v1alpha1.DNSRecord, zone, secret string, owners []string) {
	t.Helper()
	want := map[string]string{
		"kuadrant.io/authoritative-record":      "true",
		"kuadrant.io/authoritative-record-hash": hash.Base36(auth.Spec.RootHost, 8),
		"kuadrant.io/coredns-zone-name":         zone,
		"kuadrant.io/dns-provider-name":         "coredns",
	}
	if fmt.Sprint(auth.Labels) != fmt.Sprint(want) {
		t.Errorf("authoritative record labels %v, want %v", auth.Labels, want)
	}
	if auth.Spec.OwnerID != "" || auth.Status.OwnerID != hash.Base36(string(auth.UID), 8) {
		t.Errorf("authoritative record owner ID spec %q status %q, want status = hash8 of its UID %s", auth.Spec.OwnerID, auth.Status.OwnerID, hash.Base36(string(auth.UID), 8))
	}
	if !slices.Equal(auth.Finalizers, []string{v1alpha1.RecordFinalizer}) {
		t.Errorf("authoritative record finalizers %v, want [%s]", auth.Finalizers, v1alpha1.RecordFinalizer)
	}
	if auth.Status.ZoneID != zone || auth.Status.ZoneDomainName != zone || auth.Status.ProviderRef.Name != secret ||
		auth.Spec.ProviderRef == nil || auth.Spec.ProviderRef.Name != secret {
		t.Errorf("authoritative record zone %q/%q providerRef spec %v status %q; want zone %s and provider %s",
			auth.Status.ZoneID, auth.Status.ZoneDomainName, auth.Spec.ProviderRef, auth.Status.ProviderRef.Name, zone, secret)
	}
	if !slices.Equal(auth.Status.DomainOwners, owners) {
		t.Errorf("authoritative record domainOwners %v, want %v", auth.Status.DomainOwners, owners)
	}
}

// pinContributor checks Kuadrant's model of a record published into an authoritative record: the
// endpoint provider label, the authoritative record as its zone and its root host as the zone's name.
func pinContributor(t *testing.T, rec *v1alpha1.DNSRecord, rootHost, owner string) {
	t.Helper()
	if got := rec.Labels[v1alpha1.ProviderNameLabel]; got != "endpoint" {
		t.Errorf("record labelled %s=%q, want endpoint", v1alpha1.ProviderNameLabel, got)
	}
	if rec.Status.ZoneID != "authoritative-record-"+hash.Base36(rootHost, 8) || rec.Status.ZoneDomainName != rootHost {
		t.Errorf("record zone %q/%q, want authoritative-record-%s/%s", rec.Status.ZoneID, rec.Status.ZoneDomainName, hash.Base36(rootHost, 8), rootHost)
	}
	if rec.Status.OwnerID != owner || !slices.Contains(rec.Status.DomainOwners, owner) {
		t.Errorf("record owner %q domainOwners %v, want %s in both", rec.Status.OwnerID, rec.Status.DomainOwners, owner)
	}
}

// createSecret creates the kuadrant.io/coredns provider Secret "coredns" for the zones, and grants
// the zones to the namespace (the Secret alone entitles nothing).
func createSecret(t *testing.T, ns, zones string) {
	t.Helper()
	grantZones(ns, zones)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "coredns"},
		Type:       v1alpha1.SecretTypeCoreDNS,
		StringData: map[string]string{v1alpha1.CoreDNSZonesKey: zones},
	}
	if err := env.Client.Create(context.Background(), secret); err != nil {
		t.Fatal(err)
	}
}

func waitFor(t *testing.T, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		if last = cond(); last == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("not within %s: %s", timeout, last)
}

// The DNS server's flags, each also an environment variable.
func TestDNSServerFlags(t *testing.T) {
	env := map[string]string{"DNSPOLICY_DNS_SECONDARIES": "e.example.com=127.0.0.1:5301,E.example.com.=127.0.0.1:5302"}
	o, err := app.Parse([]string{
		"--dns-server-address=127.0.0.1:1053", "--dns-geoip-database=/geo.mmdb",
		"--dns-tsig-key-file=/keys/tsig.conf", "--dns-transfer-keys=e.example.com=xfr,e.example.com=other,f.example.com=xfr",
		"--dns-zone-namespaces=e.example.com=team-a,E.example.com.=team-b",
		"--dns-nameservers=ns1.example.com,ns2.example.com", "--dns-max-tcp-connections=10",
		"--dns-rrl-responses-per-second=20", "--dns-tcp-write-timeout=2s",
		"--enable-record-controller=false", "--enable-policy-controller=false",
	}, func(name string) (string, bool) { v, ok := env[name]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	d := o.DNSServer
	if o.DNSServerAddress != "127.0.0.1:1053" || o.DNSGeoIPDatabase != "/geo.mmdb" || d.TSIGKeyFile != "/keys/tsig.conf" ||
		fmt.Sprint(d.TransferKeys) != "map[e.example.com:[xfr other] f.example.com:[xfr]]" ||
		fmt.Sprint(d.ZoneNamespaces) != "map[e.example.com:[team-a team-b]]" || !o.Grants.Grants.Covers("team-b", nil, "www.e.example.com") ||
		fmt.Sprint(o.DNSSecondaries) != "map[e.example.com:[127.0.0.1:5301 127.0.0.1:5302]]" ||
		fmt.Sprint(o.DNSNameservers) != "[ns1.example.com ns2.example.com]" || d.MaxTCPConnections != 10 ||
		d.RateLimit.ResponsesPerSecond != 20 || d.RateLimit.Slip != 2 || d.TCPWriteTimeout != 2*time.Second ||
		d.MaxTCPPerSource != 64 || d.TCPIdleTimeout != 10*time.Second {
		t.Errorf("parsed %+v", o)
	}
	for _, bad := range []string{"--dns-tsig-keys=xfr:c2VjcmV0", "--dns-transfer-keys=e.example.com=xfr", "--dns-tsig-secret=nosep",
		"--dns-zone-namespaces=team-a", "--dns-secondaries=127.0.0.1:53", "--dns-secondaries=z=nohostport"} {
		if _, err := app.Parse([]string{bad}, func(string) (string, bool) { return "", false }); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// Where a coredns zone reports what its server cannot route (an invalid geo code or weight), as
// Kuadrant reports it and its suite checks: the record is accepted (Ready) and the authoritative
// record of its root host is not, with Kuadrant's message, and stays so without being rewritten.
// The record says it too, in its ProviderAccepted condition and a Warning event. A valid value
// clears both.
func TestCoreDNSProviderErrors(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	createSecret(t, ns, "g.example.com")
	startManager(t, coreDNSFactory(t))

	for _, tc := range []struct {
		name, property, bad, good, want string
	}{
		{"geo", v1alpha1.ProviderSpecificGeoCode, "notageocode", "US",
			"unexpected geo code. Prefix with GEO- for continents or use ISO_3166 Alpha 2 supported code for countries"},
		{"weight", v1alpha1.ProviderSpecificWeight, "-1", "100", "invalid weight expected a value >= 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host := tc.name + ".g.example.com"
			rec := &v1alpha1.DNSRecord{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name},
				Spec: v1alpha1.DNSRecordSpec{
					RootHost: host, OwnerID: "test-owner", ProviderRef: &v1alpha1.ProviderRef{Name: "coredns"},
					Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(host, "CNAME", 300, "foo.example.com").
						WithSetIdentifier("foo.example.com").WithProviderSpecific(tc.property, tc.bad)},
				},
			}
			if err := env.Client.Create(ctx, rec); err != nil {
				t.Fatal(err)
			}
			auth := &v1alpha1.DNSRecord{}
			key := client.ObjectKey{Namespace: ns, Name: coredns.RecordName(host)}
			failed := "The DNS provider failed to ensure the record: " + tc.want
			waitFor(t, 30*time.Second, func() string {
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rec), rec); err != nil {
					return err.Error()
				}
				if msg := readyIs(rec, metav1.ConditionTrue, v1alpha1.ReasonProviderSuccess, "Provider ensured the dns record"); msg != "" {
					return msg
				}
				if err := env.Client.Get(ctx, key, auth); err != nil {
					return err.Error()
				}
				if meta.FindStatusCondition(auth.Status.Conditions, "Served") == nil {
					return "the DNS server has not yet said what it serves of the authoritative record"
				}
				return readyIs(auth, metav1.ConditionFalse, v1alpha1.ReasonProviderError, failed)
			})
			pinContributor(t, rec, host, "test-owner")
			pinAuthoritative(t, auth, "g.example.com", "coredns", []string{"test-owner"})
			c := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeProviderAccepted)
			wantMsg := fmt.Sprintf(v1alpha1.MessageNotAccepted, ns+"/"+key.Name, tc.want)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonValidationError || c.Message != wantMsg {
				t.Errorf("record ProviderAccepted = %+v, want False/ValidationError %q", c, wantMsg)
			}
			waitFor(t, 10*time.Second, func() string {
				var events corev1.EventList
				if err := env.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
					return err.Error()
				}
				for _, e := range events.Items {
					if e.InvolvedObject.Name == rec.Name && e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.ReasonValidationError && strings.Contains(e.Message, tc.want) {
						return ""
					}
				}
				return "no Warning event ValidationError on the record"
			})

			// Kuadrant's suite: "is not being updated repeatedly".
			version := auth.ResourceVersion
			time.Sleep(3 * time.Second)
			if err := env.Client.Get(ctx, key, auth); err != nil || auth.ResourceVersion != version {
				t.Errorf("the failing authoritative record was rewritten: version %s, then %s (%v)", version, auth.ResourceVersion, err)
			}

			if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rec), rec); err != nil {
					return err
				}
				rec.Spec.Endpoints[0].ProviderSpecific[0].Value = tc.good
				return env.Client.Update(ctx, rec)
			}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 30*time.Second, func() string {
				if err := env.Client.Get(ctx, key, auth); err != nil {
					return err.Error()
				}
				if msg := readyIs(auth, metav1.ConditionTrue, v1alpha1.ReasonProviderSuccess, "Provider ensured the dns record"); msg != "" {
					return msg
				}
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rec), rec); err != nil {
					return err.Error()
				}
				if c := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeProviderAccepted); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != rec.Generation {
					return fmt.Sprintf("record ProviderAccepted = %+v", c)
				}
				return ""
			})

			if err := env.Client.Delete(ctx, rec); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 10*time.Second, func() string {
				if err := env.Client.Get(ctx, key, &v1alpha1.DNSRecord{}); !apierrors.IsNotFound(err) {
					return fmt.Sprintf("authoritative record after its last contributor's deletion: %v", err)
				}
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rec), &v1alpha1.DNSRecord{}); !apierrors.IsNotFound(err) {
					return fmt.Sprintf("record after deletion: %v", err)
				}
				return ""
			})
		})
	}
}

// A DNSRecord publishing through a kuadrant.io/coredns Secret from a namespace granted only part of
// its names publishes nothing: Ready=False NotGranted names the names without a grant, no
// authoritative record is written, and the record takes no finalizer, so its deletion withdraws
// nothing (it could otherwise withdraw what an owner ID it borrowed published).
func TestCoreDNSRecordNotGranted(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	if err := env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "coredns"}, Type: v1alpha1.SecretTypeCoreDNS,
		StringData: map[string]string{v1alpha1.CoreDNSZonesKey: "h.example.com"},
	}); err != nil {
		t.Fatal(err)
	}
	grantZones(ns, "klb.app.h.example.com")
	m := startManager(t, coreDNSFactory(t))
	rec := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: v1alpha1.DNSRecordSpec{
			RootHost: "app.h.example.com", ProviderRef: &v1alpha1.ProviderRef{Name: "coredns"},
			Endpoints: []*v1alpha1.Endpoint{
				v1alpha1.NewEndpoint("app.h.example.com", "CNAME", 300, "klb.app.h.example.com"),
				v1alpha1.NewEndpoint("klb.app.h.example.com", "A", 60, "192.0.2.10"),
			},
		},
	}
	if err := env.Client.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	want := "namespace " + ns + " has no grant for app.h.example.com (grants are set by the administrator: --grant, --grants-file); nothing of this record is published"
	waitFor(t, 10*time.Second, func() string {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rec), rec); err != nil {
			return err.Error()
		}
		return readyIs(rec, metav1.ConditionFalse, v1alpha1.ReasonNotGranted, want)
	})
	if len(rec.Finalizers) != 0 || rec.Status.ZoneID != "" {
		t.Errorf("a record not granted has finalizers %v and zone %q, want neither", rec.Finalizers, rec.Status.ZoneID)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: coredns.RecordName("app.h.example.com")}, &v1alpha1.DNSRecord{}); !apierrors.IsNotFound(err) {
		t.Errorf("authoritative record of a record not granted: %v, want not found", err)
	}
	if r, err := query(m.addr, "klb.app.h.example.com", dns.TypeA, netip.Addr{}); err != nil || r.Rcode != dns.RcodeRefused {
		t.Errorf("klb.app.h.example.com: %v %v, want REFUSED (no zone served)", r, err)
	}
	if err := env.Client.Delete(ctx, rec); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, func() string {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rec), &v1alpha1.DNSRecord{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("the deleted record: %v", err)
		}
		return ""
	})
}
