//go:build integration

package dnsserver

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
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
	s := startServer(t, Options{TSIGKeys: []TSIGKey{{Name: key, Secret: secret}}, TransferKeys: map[string][]string{"example.com": {key}}})
	secondary := freeport.Addr(t)
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

// TestBINDSecondaryTSIG: a real BIND secondary with a key per zone. SHA-384 and SHA-512 keys
// transfer the zones they are allowed for; BIND's attempt at a zone with a key not allowed for it is
// refused; after a change, BIND accepts our NOTIFY signed with the zone's key and transfers again.
func TestBINDSecondaryTSIG(t *testing.T) {
	secretA := bind.TSIGKeyWith(t, "hmac-sha384", "xfr-a")
	secretB := bind.TSIGKeyWith(t, "hmac-sha512", "xfr-b")
	s := startServer(t, Options{
		TSIGKeys:     []TSIGKey{{Name: "xfr-a", Algorithm: "hmac-sha384", Secret: secretA}, {Name: "xfr-b", Algorithm: "hmac-sha512", Secret: secretB}},
		TransferKeys: map[string][]string{"a.example": {"xfr-a"}, "b.example": {"xfr-b"}, "c.example": {"xfr-b"}},
	})
	secondary := freeport.Addr(t)
	zones := map[string]ZoneData{}
	for _, z := range []string{"a.example", "b.example", "c.example"} {
		zones[z] = ZoneData{Endpoints: []*v1alpha1.Endpoint{ep("www."+z, "A", 60, "192.0.2.1")}, Secondaries: []string{secondary}}
		setZone(t, s, z, zones[z])
	}
	log := bind.StartSecondaryZones(t, secondary, s.Addr(),
		bind.Zone{Name: "a.example", KeyName: "xfr-a", Algorithm: "hmac-sha384", Secret: secretA},
		bind.Zone{Name: "b.example", KeyName: "xfr-b", Algorithm: "hmac-sha512", Secret: secretB},
		// The key of zone a asks for zone c, whose only transfer key is xfr-b.
		bind.Zone{Name: "c.example", KeyName: "xfr-a", Algorithm: "hmac-sha384", Secret: secretA})
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 20s\n%s", what, log)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, z := range []string{"a.example", "b.example"} {
		serial, _ := s.Serial(z)
		waitFor("BIND carries "+z, func() bool { got, err := querySOASerial(secondary, z+"."); return err == nil && got == serial })
	}
	waitFor("BIND is refused c.example", func() bool {
		return strings.Contains(log.String(), "c.example/IN") && strings.Contains(log.String(), "REFUSED")
	})
	if _, err := querySOASerial(secondary, "c.example."); err == nil {
		t.Errorf("BIND serves c.example, transferred with a key not allowed for it")
	}

	data := zones["a.example"]
	data.Endpoints = append(data.Endpoints, ep("new.a.example", "A", 60, "192.0.2.2"))
	next := setZone(t, s, "a.example", data)
	waitFor("BIND follows the change", func() bool {
		got, err := querySOASerial(secondary, "a.example.")
		return err == nil && got == next.Serial
	})
	if !strings.Contains(log.String(), "received notify for zone 'a.example': TSIG 'xfr-a'") {
		t.Errorf("BIND did not log a NOTIFY signed with xfr-a\n%s", log)
	}
}
