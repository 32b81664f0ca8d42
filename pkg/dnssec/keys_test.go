package dnssec

import (
	"testing"

	"github.com/miekg/dns"
)

func TestGenerateSignsAndVerifies(t *testing.T) {
	for _, alg := range []uint8{ECDSAP256SHA256, ED25519} {
		for _, role := range []Role{KSK, ZSK, CSK} {
			k, err := Generate("Example.COM", alg, role)
			if err != nil {
				t.Fatalf("%d %s: %v", alg, role, err)
			}
			if k.DNSKEY.Hdr.Name != "example.com." || k.State != Published {
				t.Fatalf("%d %s: %+v", alg, role, k.DNSKEY.Hdr)
			}
			if sep := k.DNSKEY.Flags&1 == 1; sep != (role != ZSK) {
				t.Fatalf("%d %s: flags %d", alg, role, k.DNSKEY.Flags)
			}
			a := &dns.A{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}}
			a.A = []byte{192, 0, 2, 1}
			sig := &dns.RRSIG{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeRRSIG, Class: dns.ClassINET, Ttl: 60},
				Algorithm: alg, SignerName: "example.com.", KeyTag: k.KeyTag(), Inception: 1, Expiration: 1 << 31}
			if err := sig.Sign(k.Signer, []dns.RR{a}); err != nil {
				t.Fatalf("%d %s: sign: %v", alg, role, err)
			}
			if err := sig.Verify(k.DNSKEY, []dns.RR{a}); err != nil {
				t.Fatalf("%d %s: verify: %v", alg, role, err)
			}
			if ds := k.DS(); ds.KeyTag != k.KeyTag() || ds.DigestType != dns.SHA256 {
				t.Fatalf("%d %s: DS %v", alg, role, ds)
			}
		}
	}
	if _, err := Generate("example.com", dns.RSASHA256, CSK); err == nil {
		t.Fatal("RSA accepted")
	}
}

func TestKeySetJobs(t *testing.T) {
	ksk, _ := Generate("example.com", ECDSAP256SHA256, KSK)
	zsk, _ := Generate("example.com", ECDSAP256SHA256, ZSK)
	next, _ := Generate("example.com", ECDSAP256SHA256, ZSK)
	old, _ := Generate("example.com", ECDSAP256SHA256, ZSK)
	ksk.State, zsk.State, old.State = Active, Active, Removed
	ksk.WantDS = true
	s := KeySet{Keys: []Key{ksk, zsk, next, old}}
	if err := s.Valid(); err != nil {
		t.Fatal(err)
	}
	if got := len(s.Published()); got != 3 {
		t.Fatalf("published %d, want 3 (removed key left out)", got)
	}
	if ks := s.KeySigners(); len(ks) != 1 || ks[0].ID != ksk.ID {
		t.Fatalf("key signers %v", ks)
	}
	if zs := s.ZoneSigners(); len(zs) != 1 || zs[0].ID != zsk.ID {
		t.Fatalf("zone signers %v", zs)
	}
	if ds := s.WantDS(); len(ds) != 1 || ds[0].ID != ksk.ID {
		t.Fatalf("want DS %v", ds)
	}
	noZSK := KeySet{Keys: []Key{ksk}}
	if noZSK.Valid() == nil {
		t.Fatal("a set with no zone signer is valid")
	}
	csk, _ := Generate("example.com", ED25519, CSK)
	csk.State = Active
	csk.Signer = nil
	if (&KeySet{Keys: []Key{csk}}).Valid() == nil {
		t.Fatal("an active key without its private half is valid")
	}
}
