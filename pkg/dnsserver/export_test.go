package dnsserver

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

func exportOf() Export {
	long := `"heritage=external-dns,external-dns/owner=owner-a,external-dns/version=1,external-dns/claim-targets=` + strings.Repeat("10.0.0.1;", 60) + `"`
	return Export{
		Cluster: "abcd1234",
		Changed: time.Unix(1_700_000_000, 0),
		Endpoints: []*v1alpha1.Endpoint{
			ep("api.example.com", "CNAME", 300, "klb.api.example.com"),
			geoEP("klb.api.example.com", "ie.klb.api.example.com", "IE", "IE"),
			weightedEP("ie.klb.api.example.com", "c1.klb.api.example.com", 120),
			ep("kuadrant-a-txt.example.com", "TXT", 0, long),
			ep("dnspolicy-lease-abcd1234.example.com", "TXT", 60, `"dnspolicy-lease=1 holder=x renewed=1 every=5 duration=20"`),
		},
	}
}

func TestExportRoundTrip(t *testing.T) {
	ex := exportOf()
	rrs := EncodeExport(ExportName("example.com"), ex)
	for _, rr := range rrs {
		if _, err := dns.NewRR(rr.String()); err != nil {
			t.Fatalf("record %s does not read back: %v", rr, err)
		}
	}
	got, err := DecodeExport("example.com", rrs)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cluster != ex.Cluster || !got.Changed.Equal(ex.Changed) || len(got.Endpoints) != len(ex.Endpoints) {
		t.Fatalf("decoded %+v, want %+v", got, ex)
	}
	for i := range ex.Endpoints {
		if got.Endpoints[i].Key() != ex.Endpoints[i].Key() || !got.Endpoints[i].SameValues(ex.Endpoints[i]) {
			t.Errorf("endpoint %d: %v, want %v", i, got.Endpoints[i], ex.Endpoints[i])
		}
	}
}

func TestDecodeExportRefusesGarbage(t *testing.T) {
	origin := ExportName("example.com")
	good := EncodeExport(origin, exportOf())
	outside := EncodeExport(origin, Export{Cluster: "x", Endpoints: []*v1alpha1.Endpoint{ep("api.example.org", "A", 60, "10.0.0.1")}})
	for name, rrs := range map[string][]dns.RR{
		"no header":         good[1:],
		"an A record":       append(good[:1:1], &dns.A{Hdr: header(origin, dns.TypeA, 0)}),
		"another name":      append(good[:1:1], &dns.TXT{Hdr: header("x."+origin, dns.TypeTXT, 0), Txt: []string{"ep"}}),
		"unknown field":     append(good[:1:1], &dns.TXT{Hdr: header(origin, dns.TypeTXT, 0), Txt: []string{"ep", "name=a.example.com", "type=A", "t=1.1.1.1", "x=y"}}),
		"no targets":        append(good[:1:1], &dns.TXT{Hdr: header(origin, dns.TypeTXT, 0), Txt: []string{"ep", "name=a.example.com", "type=A"}}),
		"bad escape":        append(good[:1:1], &dns.TXT{Hdr: header(origin, dns.TypeTXT, 0), Txt: []string{"ep", "name=%zz", "type=A", "t=1"}}),
		"lone continuation": append(good[:1:1], &dns.TXT{Hdr: header(origin, dns.TypeTXT, 0), Txt: []string{"+x"}}),
		"outside the zone":  outside,
	} {
		if _, err := DecodeExport("example.com", rrs); !errors.Is(err, ErrExport) {
			t.Errorf("%s: decoded with error %v, want ErrExport", name, err)
		}
	}
}

// TestExportIsServedToPeersOnly pulls an export with the miekg/dns client: with the export key, and
// unsigned from an allowed prefix; never with the zone's own transfer key, another key, or
// unsigned from elsewhere; and resolvers' queries for its name are refused.
func TestExportIsServedToPeersOnly(t *testing.T) {
	keys := append(testKeys, TSIGKey{Name: otherKey, Secret: otherSecret}, TSIGKey{Name: "peer-key.", Secret: otherSecret})
	s := startServer(t, Options{TSIGKeys: keys, TransferKeys: testTransferKeys,
		Exports: map[string]ExportAccess{
			"example.com":   {Keys: []string{"peer-key."}},
			"k.example.com": {Prefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		}})
	ex := exportOf()
	setZone(t, s, "example.com", ZoneData{Endpoints: exampleZone(), Export: &ex})
	kex := Export{Cluster: "k", Endpoints: []*v1alpha1.Endpoint{ep("www.k.example.com", "A", 60, "10.0.0.9")}}
	setZone(t, s, "k.example.com", ZoneData{Endpoints: []*v1alpha1.Endpoint{ep("www.k.example.com", "A", 60, "10.0.0.9")}, Export: &kex})

	rrs, err := transferZone(t, s, ExportName("example.com"), dns.TypeAXFR, 0, "peer-key.", otherSecret)
	if err != nil {
		t.Fatalf("pulling the export with its key: %v", err)
	}
	got, err := DecodeExport("example.com", rrs)
	if err != nil || len(got.Endpoints) != len(ex.Endpoints) {
		t.Fatalf("export read back as %d endpoints (%v), want %d", len(got.Endpoints), err, len(ex.Endpoints))
	}
	if rrs, err := transferZone(t, s, ExportName("k.example.com"), dns.TypeAXFR, 0, "", ""); err != nil {
		t.Errorf("unsigned pull from an allowed prefix: %v", err)
	} else if got, err := DecodeExport("k.example.com", rrs); err != nil || len(got.Endpoints) != 1 {
		t.Errorf("unsigned pull read back as %v (%v)", got.Endpoints, err)
	}
	for name, pull := range map[string]func() error{
		"unsigned, no prefix": func() error {
			_, err := transferZone(t, s, ExportName("example.com"), dns.TypeAXFR, 0, "", "")
			return err
		},
		"the zone's own transfer key": func() error {
			_, err := transferZone(t, s, ExportName("example.com"), dns.TypeAXFR, 0, testKey, testSecret)
			return err
		},
		"a key signed with the wrong secret": func() error {
			_, err := transferZone(t, s, ExportName("example.com"), dns.TypeAXFR, 0, "peer-key.", testSecret)
			return err
		},
	} {
		if err := pull(); err == nil {
			t.Errorf("%s: the export was transferred", name)
		}
	}
	for _, qtype := range []uint16{dns.TypeTXT, dns.TypeSOA, dns.TypeA} {
		if m := exchange(t, s, ExportName("example.com"), qtype, queryOpts{}); m.Rcode != dns.RcodeRefused {
			t.Errorf("%s query at the export: %s, want REFUSED", dns.TypeToString[qtype], dns.RcodeToString[m.Rcode])
		}
	}
	// The zone itself answers as before.
	if m := exchange(t, s, "www.example.com.", dns.TypeA, queryOpts{}); m.Rcode != dns.RcodeSuccess || len(m.Answer) == 0 {
		t.Errorf("the zone no longer answers: %v", m)
	}
	// Without an export the name is no longer served; removing the zone removes its export.
	setZone(t, s, "example.com", ZoneData{Endpoints: exampleZone()})
	if _, err := transferZone(t, s, ExportName("example.com"), dns.TypeAXFR, 0, "peer-key.", otherSecret); err == nil {
		t.Error("an export no longer set is still transferred")
	}
	s.RemoveZone("k.example.com")
	if _, err := transferZone(t, s, ExportName("k.example.com"), dns.TypeAXFR, 0, "", ""); err == nil {
		t.Error("the export of a removed zone is still transferred")
	}
}

// FuzzDecodeExport: any TXT a peer sends decodes or fails with ErrExport, never panics, and what
// decodes encodes back to the same endpoints.
func FuzzDecodeExport(f *testing.F) {
	origin := ExportName("example.com")
	for _, rr := range EncodeExport(origin, exportOf())[1:] {
		f.Add(strings.Join(rr.(*dns.TXT).Txt, "\x00"))
	}
	f.Add("ep\x00name=a.example.com\x00type=A\x00t=1.2.3.4\x00+5")
	f.Add("ep\x00ps=%zz\x00name=a.example.com")
	f.Fuzz(func(t *testing.T, fields string) {
		header := EncodeExport(origin, Export{Cluster: "c", Changed: time.Unix(1, 0)})[0]
		rr := &dns.TXT{Hdr: *header.Header(), Txt: strings.Split(fields, "\x00")}
		ex, err := DecodeExport("example.com", []dns.RR{header, rr})
		if err != nil {
			if !errors.Is(err, ErrExport) {
				t.Fatalf("error %v is not ErrExport", err)
			}
			return
		}
		again, err := DecodeExport("example.com", EncodeExport(origin, ex))
		if err != nil {
			t.Fatalf("%v re-encoded does not decode: %v", ex.Endpoints, err)
		}
		if len(again.Endpoints) != len(ex.Endpoints) {
			t.Fatalf("round trip changed %d endpoints into %d", len(ex.Endpoints), len(again.Endpoints))
		}
		for i := range ex.Endpoints {
			a, b := ex.Endpoints[i], again.Endpoints[i]
			if a.Key() != b.Key() || !a.SameValues(b) {
				t.Fatalf("round trip changed %v into %v", a, b)
			}
		}
	})
}
