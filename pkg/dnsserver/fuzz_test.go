package dnsserver

import (
	"bytes"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// FuzzHandler feeds arbitrary messages to the handler, over UDP and TCP semantics. The handler must
// never panic, and whatever it sends must be a well-formed response to that query that fits the
// transport. Seeds: testdata/fuzz/FuzzHandler and the queries below.
func FuzzHandler(f *testing.F) {
	s, err := New(Options{GeoIPDatabase: writeGeoDB(f), TSIGKeys: testKeys, TransferKeys: testTransferKeys})
	if err != nil {
		f.Fatal(err)
	}
	setZone(f, s, "example.com", ZoneData{Endpoints: exampleZone()})
	setZone(f, s, "k.example.com", ZoneData{Endpoints: kuadrantZone(f)})

	seed := func(m *dns.Msg) {
		b, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b, true)
	}
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"api.example.com.", dns.TypeA}, {"x.wild.example.com.", dns.TypeAAAA}, {"www.sub.example.com.", dns.TypeA},
		{"example.com.", dns.TypeAXFR}, {"example.com.", dns.TypeIXFR}, {"big.example.com.", dns.TypeANY},
	} {
		m := new(dns.Msg).SetQuestion(q.name, q.qtype)
		seed(m)
		m.SetEdns0(512, true)
		m.IsEdns0().Option = []dns.EDNS0{&dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: clientIE.AsSlice()}}
		seed(m)
	}
	signed := new(dns.Msg).SetQuestion("example.com.", dns.TypeSOA)
	signed.SetTsig(testKey, dns.HmacSHA256, 300, time.Now().Unix())
	b, _, err := dns.TsigGenerate(signed, testSecret, "", false)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, false)

	r := newResponder(s)
	r.req.client = loopbackIE
	f.Fuzz(func(t *testing.T, msg []byte, tcp bool) {
		r.req.tcp = tcp
		in := bytes.Clone(msg)
		out := r.handle(msg)
		if r.xfr != nil || out == nil {
			return
		}
		resp := new(dns.Msg)
		if err := resp.Unpack(out); err != nil {
			t.Fatalf("answer does not parse: %v\nquery %x\nanswer %x", err, in, out)
		}
		if !resp.Response || resp.Id != uint16(in[0])<<8|uint16(in[1]) {
			t.Fatalf("not a response to the query: %v", resp)
		}
		if !tcp && len(out) > max(r.s.maxUDP, dns.MinMsgSize) && resp.IsTsig() == nil {
			t.Fatalf("UDP answer of %d bytes", len(out))
		}
	})
}
