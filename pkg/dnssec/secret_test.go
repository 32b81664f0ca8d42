package dnssec

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func ring(t testing.TB, split bool, alg uint8) Keyring {
	t.Helper()
	p := testPolicy(split)
	p.Algorithm = alg
	st, err := StepKeys(Keyring{Zone: "Example.COM"}, p, t0, "", ParentDS{})
	if err != nil {
		t.Fatal(err)
	}
	return st.Keys
}

func TestSecretRoundTrip(t *testing.T) {
	for _, alg := range []uint8{ECDSAP256SHA256, ED25519} {
		in := ring(t, true, alg)
		in.Times[in.Keys[0].ID] = KeyTimes{Changed: t0, DSSeen: t0.Add(time.Minute)}
		data, err := Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Parse("example.com", data)
		if err != nil {
			t.Fatal(err)
		}
		if out.Zone != "example.com." || len(out.Keys) != 2 {
			t.Fatalf("%d: read back %+v", alg, out)
		}
		for i, k := range out.Keys {
			want := in.Keys[i]
			if k.ID != want.ID || k.Role != want.Role || k.State != want.State || k.WantDS != want.WantDS || k.DNSKEY.String() != want.DNSKEY.String() {
				t.Fatalf("%d: key %d read back as %+v, want %+v", alg, i, k, want)
			}
			if !in.Times[k.ID].Changed.Equal(out.Times[k.ID].Changed) || !in.Times[k.ID].DSSeen.Equal(out.Times[k.ID].DSSeen) {
				t.Fatalf("%d: times %v, want %v", alg, out.Times[k.ID], in.Times[k.ID])
			}
			// The private key read back signs what the DNSKEY verifies.
			a := &dns.A{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: []byte{192, 0, 2, 1}}
			sig := &dns.RRSIG{Hdr: dns.RR_Header{Name: "www.example.com.", Rrtype: dns.TypeRRSIG, Class: dns.ClassINET, Ttl: 60},
				Algorithm: alg, SignerName: "example.com.", KeyTag: k.KeyTag(), Inception: 1, Expiration: 1 << 31}
			if err := sig.Sign(k.Signer, []dns.RR{a}); err != nil {
				t.Fatal(err)
			}
			if err := sig.Verify(want.DNSKEY, []dns.RR{a}); err != nil {
				t.Fatalf("%d: %v", alg, err)
			}
		}
		if ds := in.DSRecords(); len(ds) != 1 || ds[0] != out.DSRecords()[0] {
			t.Fatalf("DS changed on reading back: %v, %v", ds, out.DSRecords())
		}
	}
}

// Bad Secret data is refused with an error naming the key, never quoting key material.
func TestParseRefusesBadData(t *testing.T) {
	good := ring(t, true, ECDSAP256SHA256)
	ksk, zsk := good.Keys[0].ID, good.Keys[1].ID
	other := ring(t, false, ECDSAP256SHA256)
	cases := []struct {
		name string
		edit func(d map[string][]byte)
		want string
	}{
		{"no state", func(d map[string][]byte) { delete(d, StateKey) }, "no keys.json"},
		{"state not JSON", func(d map[string][]byte) { d[StateKey] = []byte("{") }, "keys.json is not the keys' JSON"},
		{"another zone", func(d map[string][]byte) {
			d[StateKey] = bytes.Replace(d[StateKey], []byte(`"zone": "example.com."`), []byte(`"zone": "example.org."`), 1)
		}, "holds the keys of zone example.org."},
		{"private key missing", func(d map[string][]byte) { delete(d, zsk+".private") }, "key " + zsk + ": no private key"},
		{"private key not PEM", func(d map[string][]byte) { d[ksk+".private"] = []byte("garbage") }, "key " + ksk + ": " + ksk + ".private: not a PEM block"},
		{"private key not PKCS#8", func(d map[string][]byte) {
			d[ksk+".private"] = []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
		}, "not a PKCS#8 private key"},
		{"private key of another key", func(d map[string][]byte) {
			od, _ := Marshal(other)
			d[ksk+".private"] = od[other.Keys[0].ID+".private"]
		}, "key " + ksk + ": the private key in " + ksk + ".private is not the one of its DNSKEY"},
		{"unknown role", func(d map[string][]byte) {
			d[StateKey] = bytes.Replace(d[StateKey], []byte(`"role": "zsk"`), []byte(`"role": "xsk"`), 1)
		}, "key " + zsk + `: role "xsk"`},
		{"unknown state", func(d map[string][]byte) {
			d[StateKey] = bytes.Replace(d[StateKey], []byte(`"state": "active"`), []byte(`"state": "asleep"`), 1)
		}, "key " + ksk + `: state "asleep"`},
		{"ZSK flags on a KSK", func(d map[string][]byte) {
			d[StateKey] = bytes.Replace(d[StateKey], []byte(`"role": "ksk"`), []byte(`"role": "zsk"`), 1)
		}, "key " + ksk + ": DNSKEY flags 257 do not fit role zsk"},
		{"DNSKEY broken", func(d map[string][]byte) {
			d[StateKey] = bytes.Replace(d[StateKey], []byte("DNSKEY\\t256"), []byte("TXT\\t256"), 1)
		}, "key " + zsk + ": dnskey is a TXT record"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, err := Marshal(good)
			if err != nil {
				t.Fatal(err)
			}
			c.edit(data)
			_, err = Parse("example.com", data)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			for name, v := range data {
				if strings.HasSuffix(name, ".private") && len(v) > 40 && strings.Contains(err.Error(), string(v[30:40])) {
					t.Fatalf("the error quotes key material: %v", err)
				}
			}
		})
	}
}

func TestDescribeIsStable(t *testing.T) {
	r := ring(t, true, ED25519)
	d := r.Describe()
	if !strings.Contains(d, r.Keys[0].ID+" (KSK, tag ") || !strings.Contains(d, "active, DS wanted)") || strings.Contains(d, "2026") {
		t.Fatalf("describe %q", d)
	}
	r.Times[r.Keys[0].ID] = KeyTimes{Changed: t0.Add(time.Hour)}
	if r.Describe() != d {
		t.Fatal("a time changed the description")
	}
}

// FuzzParse: no Secret data makes Parse panic, and what it accepts can be signed with or is refused
// by Valid, never half read.
func FuzzParse(f *testing.F) {
	data, err := Marshal(ring(f, false, ED25519))
	if err != nil {
		f.Fatal(err)
	}
	for name, v := range data {
		if name != StateKey {
			f.Add(data[StateKey], name, v)
		}
	}
	f.Fuzz(func(t *testing.T, state []byte, name string, private []byte) {
		r, err := Parse("example.com", map[string][]byte{StateKey: state, name: private})
		if err != nil {
			return
		}
		for _, k := range r.Keys {
			if k.DNSKEY == nil || (k.State != Removed && k.Signer == nil) {
				t.Fatalf("key %s read without its halves", k.ID)
			}
		}
	})
}
