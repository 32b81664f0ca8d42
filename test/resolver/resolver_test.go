//go:build integration

package resolver

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

const (
	labParent = "example.com."
	labZone   = "lab.example.com."
)

// labAddress is the child's name server's address in the parent's glue, as Zonemaster sees it.
var labAddress = netip.MustParseAddr("127.0.0.10")

var labDB = `$TTL 300
@ SOA ns1 hostmaster 1 3600 600 86400 60
@ NS ns1
ns1 A 127.0.0.10
www A 192.0.2.10
`

// lab is Knot DNS signing lab.example.com on line, delegated from a signed example.com that holds
// its DS, and resolvers trusting example.com's key: the harness proven against a server known to
// sign correctly, before it judges ours.
type lab struct {
	knot, parent netip.AddrPort
	anchor       []dns.RR
}

func startLab(t *testing.T, algorithm uint8) lab {
	t.Helper()
	knot := StartKnot(t, labZone, "$ORIGIN "+labZone+"\n"+labDB, algorithm)
	parent, anchor := StartParent(t, labParent, Delegation{Zone: labZone, NS: "ns1." + labZone, Address: labAddress, DS: DS(t, knot, labZone)})
	return lab{knot: knot, parent: parent, anchor: anchor}
}

func (l lab) config(child netip.AddrPort) Config {
	return Config{Anchors: l.anchor, Zones: []Zone{{Name: labParent, Server: l.parent}, {Name: labZone, Server: child}}}
}

// expect queries a resolver with DO and checks the rcode, the AD bit, and how many records of the
// type asked for the answer holds.
func expect(t *testing.T, resolver netip.AddrPort, name string, qtype uint16, rcode int, ad bool, records int) {
	t.Helper()
	r := Query(t, resolver, name, qtype, netip.Addr{})
	n := 0
	for _, rr := range r.Answer {
		if rr.Header().Rrtype == qtype {
			n++
		}
	}
	if r.Rcode != rcode || r.AuthenticatedData != ad || n != records {
		t.Errorf("%s %s at %s: %s ad=%v with %d records, want %s ad=%v with %d:\n%v", name, dns.TypeToString[qtype], resolver,
			dns.RcodeToString[r.Rcode], r.AuthenticatedData, n, dns.RcodeToString[rcode], ad, records, r)
	}
}

// Both resolvers validate Knot's signed answers, its denial of a name and of a type, and the parent's
// denial of a DS; delv, validating on its own from the parent's key, agrees.
func TestValidatesKnot(t *testing.T) {
	for _, alg := range []uint8{13, 15} {
		t.Run(dns.AlgorithmToString[alg], func(t *testing.T) {
			l := startLab(t, alg)
			c := l.config(l.knot)
			for name, r := range map[string]netip.AddrPort{"named": StartBIND(t, c), "unbound": StartUnbound(t, c)} {
				t.Run(name, func(t *testing.T) {
					expect(t, r, "www."+labZone, dns.TypeA, dns.RcodeSuccess, true, 1)
					// Knot 3.2's on-line signing denies a name with a "black lie": NOERROR and an
					// NSEC at the name saying it has no such type, proven all the same.
					expect(t, r, "nowhere."+labZone, dns.TypeA, dns.RcodeSuccess, true, 0)
					expect(t, r, "www."+labZone, dns.TypeTXT, dns.RcodeSuccess, true, 0)
					expect(t, r, labZone, dns.TypeDS, dns.RcodeSuccess, true, 1)
					if out := Delv(t, r, l.anchor, "www."+labZone, dns.TypeA); !strings.Contains(out, "; fully validated") || !strings.Contains(out, "192.0.2.10") {
						t.Errorf("delv through %s:\n%s", name, out)
					}
				})
			}
		})
	}
}

// Through a proxy that damages the signature or the address, both resolvers refuse the answer
// (SERVFAIL) and delv reports the failure: the harness tells a bogus answer from a good one.
func TestRefusesTamperedKnot(t *testing.T) {
	l := startLab(t, 13)
	for what, tamper := range map[string]Tamper{"signature": FlipSignature, "address": FlipAddress} {
		t.Run(what, func(t *testing.T) {
			p := StartProxy(t, l.knot, onlyType(dns.TypeA, tamper))
			c := l.config(p.Addr)
			for name, r := range map[string]netip.AddrPort{"named": StartBIND(t, c), "unbound": StartUnbound(t, c)} {
				expect(t, r, "www."+labZone, dns.TypeA, dns.RcodeServerFailure, false, 0)
				// The resolver's word alone is not enough: the answer it refused must have been damaged.
				if p.Tampered() == 0 {
					t.Fatalf("%s: the proxy changed nothing", name)
				}
				if out := Delv(t, r, l.anchor, "www."+labZone, dns.TypeA); !strings.Contains(out, "resolution failed") {
					t.Errorf("delv through %s accepted a tampered answer:\n%s", name, out)
				}
				// The zone's other answers still validate: what failed is the damaged one.
				expect(t, r, "www."+labZone, dns.TypeTXT, dns.RcodeSuccess, true, 0)
			}
		})
	}
}

// onlyType applies tamper to answers to queries of one type, so the keys and denials a resolver
// fetches on the way stay intact.
func onlyType(qtype uint16, tamper Tamper) Tamper {
	return func(m *dns.Msg) bool {
		return len(m.Question) == 1 && m.Question[0].Qtype == qtype && tamper(m)
	}
}

// Zonemaster, starting from the parent as its root, finds nothing wrong with Knot's signing
// (nothing at ERROR or above in its DNSSEC module), and does find a DS at the parent that matches
// no key: the check can fail.
func TestZonemasterKnot(t *testing.T) {
	knot := StartKnot(t, labZone, "$ORIGIN "+labZone+"\n"+labDB, 13)
	ds := DS(t, knot, labZone)
	wrong := dns.Copy(ds[0]).(*dns.DS)
	wrong.Digest = strings.Repeat("0", len(wrong.Digest))
	for name, c := range map[string]struct {
		ds   []dns.RR
		want string // a tag at ERROR, or none
	}{
		"good DS":  {ds: ds},
		"wrong DS": {ds: []dns.RR{wrong}, want: "DS02_NO_MATCH_DS_DNSKEY"},
	} {
		t.Run(name, func(t *testing.T) {
			parent, _ := StartParent(t, labParent, Delegation{Zone: labZone, NS: "ns1." + labZone, Address: labAddress, DS: c.ds})
			msgs := Zonemaster(t, Check{Zone: labZone,
				NameServers: []NameServer{{Name: "ns1." + labZone, Address: labAddress, Server: knot}},
				Root:        NameServer{Name: "ns1." + labParent, Address: ParentAddress, Server: parent},
				Tests:       []string{"DNSSEC"}})
			bad := Worse(msgs, "ERROR")
			if c.want == "" && len(bad) > 0 || c.want != "" && !hasTag(bad, c.want) {
				t.Errorf("Zonemaster's DNSSEC module reported at ERROR or above %v, want %q", bad, c.want)
			}
			// A run that tested nothing reports nothing: DNSSEC05 names the zone's algorithm.
			if !hasTag(msgs, "ALGORITHM_OK") {
				t.Errorf("Zonemaster did not check the zone's keys: %v", msgs)
			}
		})
	}
}

func hasTag(msgs []Message, tag string) bool {
	for _, m := range msgs {
		if m.Tag == tag {
			return true
		}
	}
	return false
}
