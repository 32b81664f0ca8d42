package dnsserver

import (
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

const (
	testKey     = "transfer-key."
	testSecret  = "c2VjcmV0LXNoYXJlZC13aXRoLXRoZS1zZWNvbmRhcnk="
	otherKey    = "other-key."
	otherSecret = "b3RoZXItc2VjcmV0LW9mLTMyLWJ5dGVzLi4uLi4uLi4="
)

var (
	testKeys         = []TSIGKey{{Name: testKey, Secret: testSecret}}
	testTransferKeys = map[string][]string{"example.com": {testKey}, "k.example.com": {testKey}, "bulk.example.net": {testKey}}
)

// transferZone runs an AXFR or IXFR with the miekg/dns client and returns every record received.
func transferZone(t *testing.T, s *Server, zone string, qtype uint16, serial uint32, key, secret string) ([]dns.RR, error) {
	t.Helper()
	m := new(dns.Msg)
	if qtype == dns.TypeIXFR {
		m.SetIxfr(zone, serial, "ns.", "mbox.")
	} else {
		m.SetAxfr(zone)
	}
	tr := &dns.Transfer{}
	if key != "" {
		m.SetTsig(key, dns.HmacSHA256, 300, time.Now().Unix())
		tr.TsigSecret = map[string]string{key: secret}
	}
	ch, err := tr.In(m, s.Addr().String())
	if err != nil {
		return nil, err
	}
	var out []dns.RR
	for env := range ch {
		if env.Error != nil {
			return out, env.Error
		}
		out = append(out, env.RR...)
	}
	return out, nil
}

func TestZoneTransfer(t *testing.T) {
	s := exampleServer(t, Options{TSIGKeys: append(testKeys, TSIGKey{Name: otherKey, Secret: otherSecret}), TransferKeys: testTransferKeys})
	serial, _ := s.Serial("example.com")

	t.Run("AXFR with our key", func(t *testing.T) {
		rrs, err := transferZone(t, s, "example.com.", dns.TypeAXFR, 0, testKey, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		if rrs[0].Header().Rrtype != dns.TypeSOA || rrs[len(rrs)-1].Header().Rrtype != dns.TypeSOA || rrs[0].(*dns.SOA).Serial != serial {
			t.Fatalf("transfer does not start and end with the SOA: %v ... %v", rrs[0], rrs[len(rrs)-1])
		}
		text := rrText(rrs)
		for _, want := range []string{
			"www.example.com.\t0\tIN\tA\t192.0.2.10",
			"*.wild.example.com.\t0\tIN\tA\t192.0.2.30",
			"sub.example.com.\t0\tIN\tNS\tns.sub.example.com.",
			"example.com.\t0\tIN\tNS\tns2.example.net.",
			// A routed CNAME set transfers as what an unlocated client gets: the default geo, and the
			// heaviest weight.
			"klb.api.example.com.\t0\tIN\tCNAME\tus.klb.api.example.com.",
			"ie.klb.api.example.com.\t0\tIN\tCNAME\tc2.klb.api.example.com.",
		} {
			if !slices.Contains(text, want) {
				t.Errorf("transfer lacks %q", want)
			}
		}
		if len(rrs) < 150 {
			t.Errorf("only %d records", len(rrs))
		}
	})
	t.Run("AXFR of several envelopes, signed in a chain", func(t *testing.T) {
		var eps []*v1alpha1.Endpoint
		for i := range 2000 {
			eps = append(eps, ep(fmt.Sprintf("host-%04d.bulk.example.net", i), "A", 60, fmt.Sprintf("10.1.%d.%d", i/250, i%250)))
		}
		setZone(t, s, "bulk.example.net", ZoneData{Endpoints: eps})
		rrs, err := transferZone(t, s, "bulk.example.net.", dns.TypeAXFR, 0, testKey, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		// SOA, NS, 2000 addresses, SOA: about 80 KB, so at least five 16 KB envelopes.
		if len(rrs) != 2003 {
			t.Errorf("%d records", len(rrs))
		}
	})
	t.Run("IXFR from an older serial is the whole zone", func(t *testing.T) {
		rrs, err := transferZone(t, s, "example.com.", dns.TypeIXFR, serial-1, testKey, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		if len(rrs) < 150 {
			t.Errorf("only %d records", len(rrs))
		}
	})
	t.Run("IXFR from the current serial is the SOA", func(t *testing.T) {
		rrs, err := transferZone(t, s, "example.com.", dns.TypeIXFR, serial, testKey, testSecret)
		if err != nil {
			t.Fatal(err)
		}
		if len(rrs) != 1 || rrs[0].(*dns.SOA).Serial != serial {
			t.Errorf("%v", rrs)
		}
	})
	for _, tc := range []struct {
		name, key, secret string
	}{
		{name: "AXFR without TSIG is refused"},
		{name: "AXFR with an unknown key is refused", key: "stranger.", secret: testSecret},
		{name: "AXFR with a wrong secret is refused", key: testKey, secret: "d3Jvbmc="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rrs, err := transferZone(t, s, "example.com.", dns.TypeAXFR, 0, tc.key, tc.secret)
			if err == nil || len(rrs) != 0 {
				t.Fatalf("transfer allowed: %d records, %v", len(rrs), err)
			}
		})
	}
	t.Run("AXFR of a name below the apex", func(t *testing.T) {
		rrs, err := transferZone(t, s, "www.example.com.", dns.TypeAXFR, 0, testKey, testSecret)
		if err == nil || len(rrs) != 0 {
			t.Fatalf("transfer allowed: %d records", len(rrs))
		}
	})
	t.Run("AXFR over UDP is refused", func(t *testing.T) {
		m := new(dns.Msg)
		m.SetAxfr("example.com.")
		m.SetTsig(testKey, dns.HmacSHA256, 300, time.Now().Unix())
		c := &dns.Client{TsigSecret: map[string]string{testKey: testSecret}}
		resp, _, err := c.Exchange(m, s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Rcode != dns.RcodeRefused {
			t.Errorf("rcode %s", dns.RcodeToString[resp.Rcode])
		}
	})
}

func TestSignedQueries(t *testing.T) {
	s := exampleServer(t, Options{TSIGKeys: testKeys, TransferKeys: testTransferKeys})
	query := func(key, secret string, fudgeShift int64) (*dns.Msg, error) {
		m := new(dns.Msg)
		m.SetQuestion("example.com.", dns.TypeSOA)
		m.SetTsig(key, dns.HmacSHA256, 300, time.Now().Unix()+fudgeShift)
		c := &dns.Client{TsigSecret: map[string]string{key: secret}}
		resp, _, err := c.Exchange(m, s.Addr().String())
		return resp, err
	}
	// The client verifies the answer's TSIG: a nil error means it was signed with our key.
	resp, err := query(testKey, testSecret, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Answer) != 1 || resp.IsTsig() == nil {
		t.Fatalf("signed SOA query: %v", resp)
	}
	for _, tc := range []struct {
		name, key, secret string
		shift             int64
		tsigErr           uint16
	}{
		{name: "unknown key", key: "stranger.", secret: testSecret, tsigErr: dns.RcodeBadKey},
		{name: "bad signature", key: testKey, secret: "d3Jvbmc=", tsigErr: dns.RcodeBadSig},
		{name: "clock skew", key: testKey, secret: testSecret, shift: 3600, tsigErr: dns.RcodeBadTime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _ := query(tc.key, tc.secret, tc.shift)
			if resp == nil || resp.Rcode != dns.RcodeNotAuth || resp.IsTsig() == nil || resp.IsTsig().Error != tc.tsigErr {
				t.Fatalf("answer %v", resp)
			}
		})
	}
}

// TestNotify runs a fake secondary that records NOTIFY messages.
func TestNotify(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *dns.Msg, 16)
	secondary := &dns.Server{PacketConn: pc, TsigSecret: map[string]string{testKey: testSecret},
		Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
			if w.TsigStatus() != nil {
				t.Errorf("NOTIFY TSIG: %v", w.TsigStatus())
			}
			got <- r
			m := new(dns.Msg).SetReply(r)
			_ = w.WriteMsg(m)
		})}
	go func() { _ = secondary.ActivateAndServe() }()
	t.Cleanup(func() { _ = secondary.Shutdown() })

	s := startServer(t, Options{TSIGKeys: testKeys, TransferKeys: testTransferKeys})
	data := ZoneData{Endpoints: []*v1alpha1.Endpoint{ep("a.example.com", "A", 60, "192.0.2.1")}, Secondaries: []string{pc.LocalAddr().String()}}
	expect := func(serial uint32) {
		t.Helper()
		select {
		case m := <-got:
			if m.Opcode != dns.OpcodeNotify || m.Question[0].Name != "example.com." || m.IsTsig() == nil {
				t.Fatalf("not a signed NOTIFY: %v", m)
			}
			if soa, ok := m.Answer[0].(*dns.SOA); !ok || soa.Serial != serial {
				t.Fatalf("NOTIFY carries %v, want serial %d", m.Answer, serial)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no NOTIFY for serial %d", serial)
		}
	}
	first := setZone(t, s, "example.com", data)
	expect(first.Serial)
	setZone(t, s, "example.com", data)
	data.Endpoints = append(data.Endpoints, ep("b.example.com", "A", 60, "192.0.2.2"))
	second := setZone(t, s, "example.com", data)
	expect(second.Serial)
	select {
	case m := <-got:
		t.Fatalf("NOTIFY without a change: %v", m)
	case <-time.After(300 * time.Millisecond):
	}
}
