package dnsserver

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// kuadrantRecords are spec.endpoints of two authoritative DNSRecords as Kuadrant's dns-operator
// writes them for zone k.example.com, in its JSON: a loadbalanced api.k.example.com published by two
// clusters (EU with the default geo, and US), each record set with its ownership TXT (quoted value,
// same set identifier and routing properties), and a simple host. The shared records appear in both.
const kuadrantRecords = `[
 [
  {"dnsName":"api.k.example.com","recordTTL":300,"recordType":"CNAME","targets":["klb.api.k.example.com"]},
  {"dnsName":"klb.api.k.example.com","providerSpecific":[{"name":"geo-code","value":"GEO-EU"}],"recordTTL":300,"recordType":"CNAME","setIdentifier":"GEO-EU","targets":["geo-eu.klb.api.k.example.com"]},
  {"dnsName":"klb.api.k.example.com","providerSpecific":[{"name":"geo-code","value":"*"}],"recordTTL":300,"recordType":"CNAME","setIdentifier":"default","targets":["geo-eu.klb.api.k.example.com"]},
  {"dnsName":"geo-eu.klb.api.k.example.com","providerSpecific":[{"name":"weight","value":"120"}],"recordTTL":60,"recordType":"CNAME","setIdentifier":"2w7ryu-1h4y2q.klb.api.k.example.com","targets":["2w7ryu-1h4y2q.klb.api.k.example.com"]},
  {"dnsName":"2w7ryu-1h4y2q.klb.api.k.example.com","recordTTL":60,"recordType":"A","targets":["172.18.200.1"]},
  {"dnsName":"kuadrant-4bf1h7kq-cname-api.k.example.com","recordTTL":300,"recordType":"TXT","targets":["\"heritage=external-dns,external-dns/owner=eu1owner,external-dns/version=1\""]},
  {"dnsName":"kuadrant-4bf1h7kq-cname-klb.api.k.example.com","providerSpecific":[{"name":"geo-code","value":"GEO-EU"}],"recordTTL":300,"recordType":"TXT","setIdentifier":"GEO-EU","targets":["\"heritage=external-dns,external-dns/owner=eu1owner,external-dns/version=1\""]},
  {"dnsName":"kuadrant-4bf1h7kq-cname-klb.api.k.example.com","providerSpecific":[{"name":"geo-code","value":"*"}],"recordTTL":300,"recordType":"TXT","setIdentifier":"default","targets":["\"heritage=external-dns,external-dns/owner=eu1owner,external-dns/version=1\""]},
  {"dnsName":"kuadrant-4bf1h7kq-cname-geo-eu.klb.api.k.example.com","providerSpecific":[{"name":"weight","value":"120"}],"recordTTL":60,"recordType":"TXT","setIdentifier":"2w7ryu-1h4y2q.klb.api.k.example.com","targets":["\"heritage=external-dns,external-dns/owner=eu1owner,external-dns/version=1\""]},
  {"dnsName":"kuadrant-4bf1h7kq-a-2w7ryu-1h4y2q.klb.api.k.example.com","recordTTL":60,"recordType":"TXT","targets":["\"heritage=external-dns,external-dns/owner=eu1owner,external-dns/version=1\""]},
  {"dnsName":"simple.k.example.com","recordTTL":60,"recordType":"A","targets":["172.18.200.1","172.18.200.2"]},
  {"dnsName":"kuadrant-4bf1h7kq-a-simple.k.example.com","recordTTL":60,"recordType":"TXT","targets":["\"heritage=external-dns,external-dns/owner=eu1owner,external-dns/version=1\""]}
 ],
 [
  {"dnsName":"api.k.example.com","recordTTL":300,"recordType":"CNAME","targets":["klb.api.k.example.com"]},
  {"dnsName":"klb.api.k.example.com","providerSpecific":[{"name":"geo-code","value":"US"}],"recordTTL":300,"recordType":"CNAME","setIdentifier":"US","targets":["us.klb.api.k.example.com"]},
  {"dnsName":"us.klb.api.k.example.com","providerSpecific":[{"name":"weight","value":"120"}],"recordTTL":60,"recordType":"CNAME","setIdentifier":"9xk2pa-1h4y2q.klb.api.k.example.com","targets":["9xk2pa-1h4y2q.klb.api.k.example.com"]},
  {"dnsName":"9xk2pa-1h4y2q.klb.api.k.example.com","recordTTL":60,"recordType":"A","targets":["172.18.100.1"]},
  {"dnsName":"kuadrant-1jvq7n2c-cname-api.k.example.com","recordTTL":300,"recordType":"TXT","targets":["\"heritage=external-dns,external-dns/owner=us1owner,external-dns/version=1\""]},
  {"dnsName":"kuadrant-1jvq7n2c-cname-klb.api.k.example.com","providerSpecific":[{"name":"geo-code","value":"US"}],"recordTTL":300,"recordType":"TXT","setIdentifier":"US","targets":["\"heritage=external-dns,external-dns/owner=us1owner,external-dns/version=1\""]},
  {"dnsName":"kuadrant-1jvq7n2c-cname-us.klb.api.k.example.com","providerSpecific":[{"name":"weight","value":"120"}],"recordTTL":60,"recordType":"TXT","setIdentifier":"9xk2pa-1h4y2q.klb.api.k.example.com","targets":["\"heritage=external-dns,external-dns/owner=us1owner,external-dns/version=1\""]},
  {"dnsName":"kuadrant-1jvq7n2c-a-9xk2pa-1h4y2q.klb.api.k.example.com","recordTTL":60,"recordType":"TXT","targets":["\"heritage=external-dns,external-dns/owner=us1owner,external-dns/version=1\""]}
 ]
]`

func kuadrantZone(t testing.TB) []*v1alpha1.Endpoint {
	t.Helper()
	var records [][]*v1alpha1.Endpoint
	if err := json.Unmarshal([]byte(kuadrantRecords), &records); err != nil {
		t.Fatal(err)
	}
	// The zone's content is the union of the authoritative records labelled with it.
	return slices.Concat(records...)
}

func TestKuadrantShapedRecords(t *testing.T) {
	s := startServer(t, Options{GeoIPDatabase: writeGeoDB(t), TSIGKeys: map[string]string{testKey: testSecret}})
	st := setZone(t, s, "k.example.com", ZoneData{Endpoints: kuadrantZone(t)})
	if len(st.Skipped) != 0 {
		t.Fatalf("skipped %q", st.Skipped)
	}
	const heritage = "heritage=external-dns,external-dns/owner=%s,external-dns/version=1"

	for _, tc := range []struct {
		client netip.Addr
		chain  []string
		addr   string
	}{
		{clientIE, []string{"klb.api.k.example.com.", "geo-eu.klb.api.k.example.com.", "2w7ryu-1h4y2q.klb.api.k.example.com."}, "172.18.200.1"},
		{clientDE, []string{"klb.api.k.example.com.", "geo-eu.klb.api.k.example.com.", "2w7ryu-1h4y2q.klb.api.k.example.com."}, "172.18.200.1"},
		{clientUS, []string{"klb.api.k.example.com.", "us.klb.api.k.example.com.", "9xk2pa-1h4y2q.klb.api.k.example.com."}, "172.18.100.1"},
		// No JP or Asian set: the default geo, which Kuadrant's plugin ignores (dns-operator #409).
		{clientJP, []string{"klb.api.k.example.com.", "geo-eu.klb.api.k.example.com.", "2w7ryu-1h4y2q.klb.api.k.example.com."}, "172.18.200.1"},
	} {
		m := exchange(t, s, "api.k.example.com.", dns.TypeA, withECS(tc.client, 24))
		if got := cnameTargets(m); !slices.Equal(got, tc.chain) || !slices.Equal(addresses(m), []string{tc.addr}) {
			t.Errorf("%s: chain %q addresses %q", tc.client, got, addresses(m))
		}
	}

	m := exchange(t, s, "simple.k.example.com.", dns.TypeA, queryOpts{})
	if got := addresses(m); !slices.Equal(got, []string{"172.18.200.1", "172.18.200.2"}) {
		t.Errorf("simple host %q", got)
	}

	txt := func(name string, o queryOpts) []string {
		t.Helper()
		m := exchange(t, s, name, dns.TypeTXT, o)
		var out []string
		for _, rr := range m.Answer {
			out = append(out, strings.Join(rr.(*dns.TXT).Txt, ""))
		}
		return out
	}
	// The quotes delimit the value, as Route53 reads them: clients see the value without them.
	if got := txt("kuadrant-4bf1h7kq-a-simple.k.example.com.", queryOpts{}); !slices.Equal(got, []string{fmt.Sprintf(heritage, "eu1owner")}) {
		t.Errorf("ownership TXT %q", got)
	}
	// Ownership records of a geo set route like the records they describe.
	if got := txt("kuadrant-1jvq7n2c-cname-klb.api.k.example.com.", withECS(clientUS, 24)); !slices.Equal(got, []string{fmt.Sprintf(heritage, "us1owner")}) {
		t.Errorf("US ownership TXT %q", got)
	}

	rrs, err := transferZone(t, s, "k.example.com.", dns.TypeAXFR, 0, testKey, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	text := rrText(rrs)
	for _, want := range []string{
		`kuadrant-4bf1h7kq-a-simple.k.example.com.	0	IN	TXT	"heritage=external-dns,external-dns/owner=eu1owner,external-dns/version=1"`,
		"api.k.example.com.\t0\tIN\tCNAME\tklb.api.k.example.com.",
		"klb.api.k.example.com.\t0\tIN\tCNAME\tgeo-eu.klb.api.k.example.com.",
		"9xk2pa-1h4y2q.klb.api.k.example.com.\t0\tIN\tA\t172.18.100.1",
	} {
		if !slices.Contains(text, want) {
			t.Errorf("transfer lacks %q", want)
		}
	}
	if n := strings.Count(strings.Join(text, "\n"), "api.k.example.com.\t0\tIN\tCNAME\tklb.api.k.example.com."); n != 1 {
		t.Errorf("the shared record is served %d times", n)
	}
}
