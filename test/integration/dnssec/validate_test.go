//go:build integration

package dnssec

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/hack/run/demo"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
	"github.com/dnspolicy/dnspolicy-controller/test/resolver"
)

// answer is what a validating resolver said: its rcode, whether it vouched for the answer (AD),
// and the addresses and denial it passed on.
type answer struct {
	msg   *dns.Msg
	addrs []string
}

func ask(t *testing.T, r netip.AddrPort, name string, qtype uint16, ecs netip.Addr) answer {
	t.Helper()
	a := answer{msg: resolver.Query(t, r, name, qtype, ecs)}
	for _, rr := range a.msg.Answer {
		if x, ok := rr.(*dns.A); ok {
			a.addrs = append(a.addrs, x.A.String())
		}
	}
	return a
}

func (a answer) String() string { return a.msg.String() }

// nsecAt is the NSEC the resolver passed on for name, nil when none.
func (a answer) nsecAt(name string) *dns.NSEC {
	for _, rr := range a.msg.Ns {
		if n, ok := rr.(*dns.NSEC); ok && strings.EqualFold(n.Hdr.Name, dns.Fqdn(name)) {
			return n
		}
	}
	return nil
}

// The demo zone signed by our server validates through BIND and Unbound from the parent's key: the
// loadbalanced host's geo answer, a name that does not exist (RFC 9824's compact denial: NOERROR
// and an NSEC at the name whose bitmap holds NXNAME), a type the host lacks, the apex's keys, and
// a delegated child the zone proves has no DS (insecure: answered, not vouched for, not bogus).
func TestResolversValidate(t *testing.T) {
	for _, shape := range keyShapes {
		t.Run(shape.name, func(t *testing.T) {
			w := startWorld(t, keys(t, shape.alg, shape.split))
			c := w.config(w.ours, true)
			for name, r := range map[string]netip.AddrPort{"named": resolver.StartBIND(t, c), "unbound": resolver.StartUnbound(t, c)} {
				t.Run(name, func(t *testing.T) {
					// The resolver's own address is in no network of the geo database: the default geo.
					if a := ask(t, r, demo.Host, dns.TypeA, netip.Addr{}); a.msg.Rcode != dns.RcodeSuccess || !a.msg.AuthenticatedData || strings.Join(a.addrs, ",") != "172.31.1.10" {
						t.Errorf("%s A: want 172.31.1.10 with AD:\n%s", demo.Host, a)
					}
					nx := ask(t, r, "nowhere."+demo.Zone, dns.TypeA, netip.Addr{})
					if nx.msg.Rcode != dns.RcodeSuccess || !nx.msg.AuthenticatedData || len(nx.msg.Answer) != 0 {
						t.Errorf("a name that does not exist: want NOERROR, no answer, AD:\n%s", nx)
					}
					if n := nx.nsecAt("nowhere." + demo.Zone); n == nil || !slices.Contains(n.TypeBitMap, dns.TypeNXNAME) {
						t.Errorf("a name that does not exist: want an NSEC at it with NXNAME:\n%s", nx)
					}
					// The host's aliases lead to a leaf with no AAAA: the chain, and the leaf's NSEC.
					if a := ask(t, r, demo.Host, dns.TypeAAAA, netip.Addr{}); a.msg.Rcode != dns.RcodeSuccess || !a.msg.AuthenticatedData || count(a.msg, dns.TypeAAAA) != 0 || count(a.msg, dns.TypeCNAME) != 3 {
						t.Errorf("%s AAAA (no such type): want NOERROR, the CNAME chain and no AAAA, AD:\n%s", demo.Host, a)
					}
					if a := ask(t, r, demo.Zone, dns.TypeDNSKEY, netip.Addr{}); !a.msg.AuthenticatedData || len(a.msg.Answer) == 0 {
						t.Errorf("%s DNSKEY: want the keys with AD:\n%s", demo.Zone, a)
					}
					// The child is unsigned: our NSEC at the cut proves no DS, so its answer is
					// insecure. Without that proof the resolver would refuse it as bogus.
					if a := ask(t, r, child, dns.TypeDS, netip.Addr{}); a.msg.Rcode != dns.RcodeSuccess || !a.msg.AuthenticatedData || len(a.msg.Answer) != 0 {
						t.Errorf("%s DS: want a proven NODATA:\n%s", child, a)
					}
					if a := ask(t, r, childHost, dns.TypeA, netip.Addr{}); a.msg.Rcode != dns.RcodeSuccess || a.msg.AuthenticatedData || strings.Join(a.addrs, ",") != childAddr {
						t.Errorf("%s A under the insecure delegation: want %s without AD:\n%s", childHost, childAddr, a)
					}
					if out := resolver.Delv(t, r, w.anchor, demo.Host, dns.TypeA); !strings.Contains(out, "; fully validated") || !strings.Contains(out, "172.31.1.10") {
						t.Errorf("delv through %s:\n%s", name, out)
					}
				})
			}
		})
	}
}

// Unbound passes each client's subnet (EDNS Client Subnet) on to our server and validates the
// answer chosen for it: the demo's three client networks get their geo's Gateway, signed.
func TestGeoAnswersValidate(t *testing.T) {
	w := startWorld(t, keys(t, dnssec.ECDSAP256SHA256, false))
	r := resolver.StartUnbound(t, w.config(w.ours, true))
	want := map[string]string{"IE": "172.31.1.10", "US": "172.31.2.10", "DE": "172.31.1.10"} // DE: the default geo
	for _, n := range demo.Networks {
		a := ask(t, r, demo.Host, dns.TypeA, netip.MustParseAddr(n.Client))
		if a.msg.Rcode != dns.RcodeSuccess || !a.msg.AuthenticatedData || strings.Join(a.addrs, ",") != want[n.Country] {
			t.Errorf("client %s (%s): want %s with AD:\n%s", n.Client, n.Country, want[n.Country], a)
		}
	}
}

// delv, asking our server directly and trusting only the demo zone's DS, validates each kind of
// answer on its own.
func TestDelvDirect(t *testing.T) {
	w := startWorld(t, keys(t, dnssec.ED25519, true))
	for _, q := range []struct {
		name  string
		qtype uint16
		want  string
	}{
		{demo.Host, dns.TypeA, "172.31.1.10"},
		{demo.Zone, dns.TypeSOA, "ns1." + demo.Zone},
		{"nowhere." + demo.Zone, dns.TypeA, "; negative response, fully validated"},
		// The aliases to the leaf are answered, and the leaf's lack of AAAA proven.
		{demo.Host, dns.TypeAAAA, `IN \-AAAA ;-$NXRRSET`},
	} {
		if out := resolver.Delv(t, w.ours, w.ds, q.name, q.qtype); !strings.Contains(out, "fully validated") || !strings.Contains(out, q.want) {
			t.Errorf("delv %s %s at our server: want %q, fully validated:\n%s", q.name, dns.TypeToString[q.qtype], q.want, out)
		}
	}
}

// Through a proxy that damages our signatures, or an address under an intact signature, both
// resolvers refuse the answer (SERVFAIL) and delv reports the failure, while the zone's other
// answers still validate.
func TestTamperedAnswersFail(t *testing.T) {
	w := startWorld(t, keys(t, dnssec.ECDSAP256SHA256, false))
	for what, tamper := range map[string]resolver.Tamper{"signature": resolver.FlipSignature, "address": resolver.FlipAddress} {
		t.Run(what, func(t *testing.T) {
			p := resolver.StartProxy(t, w.ours, onlyA(tamper))
			c := w.config(p.Addr, false)
			for name, r := range map[string]netip.AddrPort{"named": resolver.StartBIND(t, c), "unbound": resolver.StartUnbound(t, c)} {
				if a := ask(t, r, demo.Host, dns.TypeA, netip.Addr{}); a.msg.Rcode != dns.RcodeServerFailure || len(a.addrs) != 0 {
					t.Errorf("%s accepted a tampered answer:\n%s", name, a)
				}
				if p.Tampered() == 0 {
					t.Fatalf("%s: the proxy changed nothing", name)
				}
				if out := resolver.Delv(t, r, w.anchor, demo.Host, dns.TypeA); !strings.Contains(out, "resolution failed") {
					t.Errorf("delv through %s accepted a tampered answer:\n%s", name, out)
				}
				if a := ask(t, r, demo.Host, dns.TypeAAAA, netip.Addr{}); a.msg.Rcode != dns.RcodeSuccess || !a.msg.AuthenticatedData {
					t.Errorf("%s: the zone's untouched answers should still validate:\n%s", name, a)
				}
			}
		})
	}
}

// Zonemaster, starting from the parent as its root, finds the delegation, the DS and our signed
// zone, and reports nothing at ERROR or above in its DNSSEC module, for every key shape.
func TestZonemaster(t *testing.T) {
	for _, shape := range keyShapes {
		t.Run(shape.name, func(t *testing.T) {
			w := startWorld(t, keys(t, shape.alg, shape.split))
			msgs := resolver.Zonemaster(t, resolver.Check{Zone: demo.Zone,
				NameServers: []resolver.NameServer{{Name: "ns1." + demo.Zone, Address: nsAddress, Server: w.ours}},
				Root:        resolver.NameServer{Name: "ns1." + parentZone, Address: resolver.ParentAddress, Server: w.parent},
				Tests:       []string{"DNSSEC"}})
			if bad := resolver.Worse(msgs, "ERROR"); len(bad) > 0 {
				t.Errorf("Zonemaster's DNSSEC module: %v", bad)
			}
			for _, m := range resolver.Worse(msgs, "NOTICE") {
				t.Logf("Zonemaster: %s", m)
			}
			if !hasTag(msgs, "ALGORITHM_OK") {
				t.Errorf("Zonemaster did not check the zone's keys: %v", msgs)
			}
		})
	}
}

// onlyA damages answers to A queries only, so the keys and denials a resolver fetches on the way
// stay intact and the failure is the damaged answer's.
func onlyA(tamper resolver.Tamper) resolver.Tamper {
	return func(m *dns.Msg) bool {
		return len(m.Question) == 1 && m.Question[0].Qtype == dns.TypeA && tamper(m)
	}
}

// count is the number of records of rrtype in the answer section.
func count(m *dns.Msg, rrtype uint16) int {
	n := 0
	for _, rr := range m.Answer {
		if rr.Header().Rrtype == rrtype {
			n++
		}
	}
	return n
}

func hasTag(msgs []resolver.Message, tag string) bool {
	for _, m := range msgs {
		if m.Tag == tag {
			return true
		}
	}
	return false
}
