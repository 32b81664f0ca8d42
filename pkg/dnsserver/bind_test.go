//go:build integration

package dnsserver

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/test/bind"
)

func querySOASerial(addr, zone string) (uint32, error) {
	m := new(dns.Msg).SetQuestion(zone, dns.TypeSOA)
	resp, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, addr)
	if err != nil {
		return 0, err
	}
	if len(resp.Answer) != 1 {
		return 0, fmt.Errorf("SOA answer %s %v", dns.RcodeToString[resp.Rcode], resp.Answer)
	}
	return resp.Answer[0].(*dns.SOA).Serial, nil
}

// TestBINDSecondary has a real BIND carry our zone: it transfers by AXFR with TSIG, answers the
// simple records as we do, and follows a change within seconds of our NOTIFY.
func TestBINDSecondary(t *testing.T) {
	const key = "transfer-key."
	secret := bind.TSIGKey(t, "transfer-key")
	s := startServer(t, Options{TSIGKeys: map[string]string{key: secret}, NotifyKey: key})
	secondary := bind.FreeAddr(t)
	log := bind.StartSecondary(t, secondary, "example.com", s.Addr(), "transfer-key", secret)
	data := ZoneData{Endpoints: exampleZone(), Nameservers: []string{"ns1.example.com", "ns2.example.net"}, Secondaries: []string{secondary}}
	first := setZone(t, s, "example.com", data)

	waitSerial := func(want uint32) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			got, err := querySOASerial(secondary, "example.com.")
			if err == nil && got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("BIND serial %d (%v), want %d\n%s", got, err, want, log)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitSerial(first.Serial)

	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"www.example.com.", dns.TypeA},
		{"www.example.com.", dns.TypeAAAA},
		{"app.example.com.", dns.TypeA},
		{"chain.example.com.", dns.TypeA},
		{"txt.example.com.", dns.TypeTXT},
		{"mail.example.com.", dns.TypeMX},
		{"a.b.c.example.com.", dns.TypeA},
		{"x.wild.example.com.", dns.TypeA},
		{"example.com.", dns.TypeNS},
		{"nope.example.com.", dns.TypeA},
		{"txt.example.com.", dns.TypeA},
	} {
		ours := exchange(t, s, q.name, q.qtype, queryOpts{})
		m := new(dns.Msg).SetQuestion(q.name, q.qtype)
		theirs, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, secondary)
		if err != nil {
			t.Fatal(err)
		}
		if !theirs.Authoritative || theirs.Rcode != ours.Rcode {
			t.Errorf("%s %s: BIND rcode %s AA=%v, ours %s", q.name, dns.TypeToString[q.qtype],
				dns.RcodeToString[theirs.Rcode], theirs.Authoritative, dns.RcodeToString[ours.Rcode])
		}
		a, b := rrText(ours.Answer), rrText(theirs.Answer)
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Errorf("%s %s: BIND %q, ours %q", q.name, dns.TypeToString[q.qtype], b, a)
		}
	}

	data.Endpoints = append(data.Endpoints, ep("new.example.com", "A", 60, "192.0.2.99"))
	changed := time.Now()
	second := setZone(t, s, "example.com", data)
	if second.Serial == first.Serial {
		t.Fatal("serial did not move")
	}
	waitSerial(second.Serial)
	t.Logf("BIND had serial %d %v after the change", second.Serial, time.Since(changed).Round(time.Millisecond))
	m := new(dns.Msg).SetQuestion("new.example.com.", dns.TypeA)
	resp, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, secondary)
	if err != nil || len(resp.Answer) != 1 || resp.Answer[0].(*dns.A).A.String() != "192.0.2.99" {
		t.Errorf("BIND answers %v, %v", resp, err)
	}
}
