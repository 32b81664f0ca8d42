//go:build integration

package rfc2136

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/conformance"
)

// servers starts each kind of server once per test.
var servers = []struct {
	kind  string
	start func(t *testing.T, n int) *server
}{
	{"bind", startBIND},
	{"knot", startKnot},
	{"powerdns", startPowerDNS},
}

// secret is a kuadrant.io/rfc2136 Secret for the server and zones, with data overriding its keys.
func (s *server) secret(zones []string, data map[string]string) *corev1.Secret {
	ap := netip.MustParseAddrPort(s.addr)
	d := map[string]string{
		v1alpha1.RFC2136HostKey:          ap.Addr().String(),
		v1alpha1.RFC2136PortKey:          fmt.Sprint(ap.Port()),
		v1alpha1.RFC2136ZoneKey:          strings.Join(zones, ","),
		v1alpha1.RFC2136TSIGKeyNameKey:   keyName,
		v1alpha1.RFC2136TSIGSecretKey:    s.tsigSecret,
		v1alpha1.RFC2136TSIGSecretAlgKey: s.algorithm,
	}
	for k, v := range data {
		d[k] = v
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "rfc2136-" + s.kind},
		Type:       v1alpha1.SecretTypeRFC2136,
		Data:       map[string][]byte{},
	}
	for k, v := range d {
		if v != "" {
			secret.Data[k] = []byte(v)
		}
	}
	return secret
}

// provider builds the backend through its constructor, as the controller builds it.
func (s *server) provider(t *testing.T, zones []string, data map[string]string) providers.Provider {
	t.Helper()
	b, err := New(t.Context(), s.secret(zones, data), providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return b.Zones
}

func zoneOf(name string) providers.Zone { return providers.Zone{ID: name, DNSName: name} }

// The conformance suite passes against BIND, Knot DNS and PowerDNS.
func TestConformance(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.kind, func(t *testing.T) {
			s := srv.start(t, 16)
			conformance.Run(t, conformance.Harness{NewZone: func(t *testing.T) (providers.Provider, providers.Zone) {
				z := s.zone(t)
				return s.provider(t, []string{z}, nil), zoneOf(z)
			}})
		})
	}
}

// read returns a zone's record sets, failing the test on an error.
func read(t *testing.T, p providers.Provider, zone string) providers.View {
	t.Helper()
	v, err := p.Records(t.Context(), zoneOf(zone))
	if err != nil {
		t.Fatalf("Records(%s): %v", zone, err)
	}
	return v
}

// find returns the set of a name and type in eps, or nil.
func find(eps []*v1alpha1.Endpoint, name, recordType string) *v1alpha1.Endpoint {
	for _, ep := range eps {
		if ep.DNSName == name && ep.RecordType == recordType {
			return ep
		}
	}
	return nil
}

// planAndApply plans one owner's wishes against the zone as read (the engine's pure core) and
// applies the batch, re-reading and re-planning after a stale view as the engine does.
func planAndApply(t *testing.T, p providers.Provider, zone, owner string, desired []*v1alpha1.Endpoint, between func()) *plan.Result {
	t.Helper()
	adjusted, err := p.AdjustEndpoints(desired)
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		view := read(t, p, zone)
		res, err := plan.Plan(plan.Input{OwnerID: owner, ZoneName: zone, Current: view.Endpoints, Desired: adjusted})
		if err != nil {
			t.Fatal(err)
		}
		if between != nil && attempt == 0 {
			between()
		}
		err = p.Apply(t.Context(), zoneOf(zone), view.State, res.Changes)
		if err == nil {
			return res
		}
		if providers.KindOf(err) != providers.StaleView || attempt > 2 {
			t.Fatalf("Apply: %v", err)
		}
		t.Logf("attempt %d: %v", attempt, err)
	}
}

// nsupdate sends an update as a person would, with the test's key.
func (s *server) nsupdate(t *testing.T, zone string, lines ...string) {
	t.Helper()
	ap := netip.MustParseAddrPort(s.addr)
	script := fmt.Sprintf("server %s %d\nzone %s\n%s\nsend\n", ap.Addr(), ap.Port(), zone, strings.Join(lines, "\n"))
	cmd := exec.Command(tool(t, "nsupdate"), "-v", "-y", "hmac-sha256:"+keyName+":"+s.tsigSecret)
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nsupdate: %v\n%s", err, out)
	}
}

// A record a person wrote (in the zone file, or by nsupdate while we plan) is never changed or
// deleted: an owner that wants the same name gets a conflict with no winner, and withdrawing
// everything leaves the person's records as they were. A concurrent nsupdate at a name we are
// about to create fails our update on its prerequisite (a stale view), and the re-plan leaves the
// person's record alone.
func TestHumanRecordsAreNeverChanged(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.kind, func(t *testing.T) {
			s := srv.start(t, 1)
			zone := s.zone(t)
			p := s.provider(t, []string{zone}, nil)
			name := func(label string) string { return label + "." + zone }
			human := read(t, p, zone).Endpoints
			if find(human, name("human"), v1alpha1.RecordTypeA) == nil {
				t.Fatalf("the zone file's record is not read: %v", human)
			}
			desired := []*v1alpha1.Endpoint{
				v1alpha1.NewEndpoint(name("human"), v1alpha1.RecordTypeA, 60, "10.0.0.1"),
				v1alpha1.NewEndpoint(name("app"), v1alpha1.RecordTypeA, 60, "10.0.0.2"),
				v1alpha1.NewEndpoint(name("late"), v1alpha1.RecordTypeA, 60, "10.0.0.3"),
			}
			res := planAndApply(t, p, zone, "owner-a", desired, func() {
				s.nsupdate(t, zone, "update add "+name("late")+" 300 A 192.0.2.77")
			})
			after := read(t, p, zone).Endpoints
			for _, want := range []*v1alpha1.Endpoint{
				v1alpha1.NewEndpoint(name("human"), v1alpha1.RecordTypeA, 300, "192.0.2.99"),
				v1alpha1.NewEndpoint(name("late"), v1alpha1.RecordTypeA, 300, "192.0.2.77"),
				v1alpha1.NewEndpoint(name("app"), v1alpha1.RecordTypeA, 60, "10.0.0.2"),
			} {
				if got := find(after, want.DNSName, want.RecordType); got == nil || !got.SameValues(want) {
					t.Errorf("after the plan, %s A = %v, want %v", want.DNSName, got, want)
				}
			}
			var lost []string
			for _, c := range res.Conflicts {
				if c.WinnerOwner == "" {
					lost = append(lost, c.DNSName)
				}
			}
			slices.Sort(lost)
			if want := []string{name("human"), name("late")}; !slices.Equal(lost, want) {
				t.Errorf("conflicts with a person's records at %v, want %v (%+v)", lost, want, res.Conflicts)
			}

			planAndApply(t, p, zone, "owner-a", nil, nil)
			final := read(t, p, zone).Endpoints
			if find(final, name("app"), v1alpha1.RecordTypeA) != nil {
				t.Errorf("withdrawing everything left our record: %v", final)
			}
			for _, ep := range human {
				if got := find(final, ep.DNSName, ep.RecordType); got == nil || !got.SameValues(ep) {
					t.Errorf("after withdrawing, the person's %s %s = %v, want %v", ep.DNSName, ep.RecordType, got, ep)
				}
			}
		})
	}
}

// A wrong key, a zone the key may not update and an update the key may not make each give a
// Permanent error whose message is the same on every attempt, and leave the zone as it was.
func TestRefusalsArePermanentStableAndLoseNothing(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.kind, func(t *testing.T) {
			s := srv.start(t, 1)
			zone := s.zone(t)
			good := s.provider(t, []string{zone, s.human}, nil)
			before := read(t, good, zone)
			create := &providers.Changes{Create: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("new."+zone, v1alpha1.RecordTypeA, 60, "10.0.0.9")}}

			// Each server says "not this key for this zone" its own way: BIND REFUSED, Knot DNS
			// NOTAUTH with BADKEY (its acl), PowerDNS REFUSED (for a bad signature too).
			refusedZone := map[string]string{"bind": "REFUSED", "knot": "BADKEY", "powerdns": "REFUSED"}[s.kind]
			wrongSecret := s.provider(t, []string{zone}, map[string]string{v1alpha1.RFC2136TSIGSecretKey: "d3Jvbmcgc2VjcmV0IG9mIDMyIGJ5dGVzIGxvbmcgISE="})
			wrongName := s.provider(t, []string{zone}, map[string]string{v1alpha1.RFC2136TSIGKeyNameKey: "no-such-key"})
			for _, c := range []struct {
				what string
				p    providers.Provider
				zone string
				// state: the view to apply against (the wrong key cannot read one).
				state providers.State
				want  []string
			}{
				{"wrong secret", wrongSecret, zone, before.State, []string{v1alpha1.RFC2136TSIGSecretKey, "zone " + zone}},
				{"unknown key name", wrongName, zone, before.State, []string{"zone " + zone}},
				{"zone the key may not update", good, s.human, read(t, good, s.human).State, []string{refusedZone, "zone " + s.human}},
			} {
				var msgs []string
				for range 2 {
					err := c.p.Apply(t.Context(), zoneOf(c.zone), c.state, retarget(create, c.zone))
					if providers.KindOf(err) != providers.Permanent || err == nil {
						t.Fatalf("%s: Apply = %v, want a Permanent error", c.what, err)
					}
					msgs = append(msgs, err.Error())
				}
				if msgs[0] != msgs[1] {
					t.Errorf("%s: the message changes between attempts:\n%s\n%s", c.what, msgs[0], msgs[1])
				}
				for _, w := range c.want {
					if !strings.Contains(msgs[0], w) {
						t.Errorf("%s: %q does not name %q", c.what, msgs[0], w)
					}
				}
				t.Logf("%s: %s", c.what, msgs[0])
			}
			// An update the key may make but for one name: the whole batch is refused, the
			// allowed creation included.
			refused := s.refusedRecord(zone)
			protected := &providers.Changes{Create: []*v1alpha1.Endpoint{
				v1alpha1.NewEndpoint("allowed."+zone, v1alpha1.RecordTypeA, 60, "10.0.0.10"), refused}}
			var msgs []string
			for range 2 {
				if refused == nil {
					break
				}
				err := good.Apply(t.Context(), zoneOf(zone), read(t, good, zone).State, protected)
				if providers.KindOf(err) != providers.Permanent || err == nil || !strings.Contains(err.Error(), refusedZone) {
					t.Fatalf("refused update: Apply = %v, want a Permanent error naming %s", err, refusedZone)
				}
				msgs = append(msgs, err.Error())
			}
			if refused != nil && msgs[0] != msgs[1] {
				t.Errorf("refused update: the message changes between attempts:\n%s\n%s", msgs[0], msgs[1])
			}
			if refused != nil {
				t.Logf("refused update: %s", msgs[0])
			}
			// A CNAME at the apex, which a server would ignore beside the SOA, is refused before it
			// is sent rather than retried as a stale view.
			apex := &providers.Changes{Create: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(zone, v1alpha1.RecordTypeCNAME, 60, "x.example.net")}}
			if err := good.Apply(t.Context(), zoneOf(zone), read(t, good, zone).State, apex); providers.KindOf(err) != providers.Permanent || err == nil {
				t.Errorf("CNAME at the apex: Apply = %v, want a Permanent error", err)
			}
			for _, p := range []providers.Provider{wrongSecret, wrongName} {
				_, err := p.Records(t.Context(), zoneOf(zone))
				if providers.KindOf(err) != providers.Permanent || err == nil {
					t.Errorf("Records with a wrong key = %v, want a Permanent error", err)
				}
			}
			if after := read(t, good, zone); !sameSets(after.Endpoints, before.Endpoints) {
				t.Errorf("the refused updates changed the zone:\n%v\nwant\n%v", after.Endpoints, before.Endpoints)
			}
			if got := find(read(t, good, s.human).Endpoints, "new."+s.human, v1alpha1.RecordTypeA); got != nil {
				t.Errorf("the refused update wrote %v", got)
			}
		})
	}
}

// A dead server gives a Transient error that reads the same on every attempt, within the timeout.
func TestUnreachableServerIsTransient(t *testing.T) {
	s := &server{kind: "none", addr: "127.0.0.1:1", tsigSecret: "c2VjcmV0", algorithm: "hmac-sha256"}
	p := s.provider(t, []string{"z.example"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
	defer cancel()
	var msgs []string
	for range 2 {
		_, err := p.Records(ctx, zoneOf("z.example"))
		if providers.KindOf(err) != providers.Transient || err == nil {
			t.Fatalf("Records = %v, want a Transient error", err)
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] {
		t.Errorf("the message changes between attempts:\n%s\n%s", msgs[0], msgs[1])
	}
}

func retarget(c *providers.Changes, zone string) *providers.Changes {
	out := &providers.Changes{}
	for _, ep := range c.Create {
		ep = ep.DeepCopy()
		ep.DNSName = "new." + zone
		out.Create = append(out.Create, ep)
	}
	return out
}

func sameSets(a, b []*v1alpha1.Endpoint) bool {
	if len(a) != len(b) {
		return false
	}
	for _, ep := range a {
		if o := find(b, ep.DNSName, ep.RecordType); o == nil || !o.SameValues(ep) {
			return false
		}
	}
	return true
}

// Updates and transfers go over each transport a Secret may name: UDP (updates; transfers are always
// TCP), TCP, and TLS to BIND's DNS-over-TLS listener with the CA from RFC2136_TLS_CA. A certificate
// signed by another CA is a Permanent error.
func TestTransports(t *testing.T) {
	s := startBIND(t, 3)
	tlsPort := fmt.Sprint(netip.MustParseAddrPort(s.tlsAddr).Port())
	for _, c := range []struct {
		transport string
		data      map[string]string
	}{
		{TransportUDP, map[string]string{v1alpha1.RFC2136TransportKey: TransportUDP}},
		{TransportTCP, map[string]string{v1alpha1.RFC2136TransportKey: TransportTCP}},
		{TransportTLS, map[string]string{v1alpha1.RFC2136TransportKey: TransportTLS, v1alpha1.RFC2136PortKey: tlsPort, v1alpha1.RFC2136TLSCAKey: s.caPEM}},
	} {
		t.Run(c.transport, func(t *testing.T) {
			zone := s.zone(t)
			p := s.provider(t, []string{zone}, c.data)
			ep := v1alpha1.NewEndpoint("app."+zone, v1alpha1.RecordTypeA, 60, "10.0.0.1", "10.0.0.2")
			if err := p.Apply(t.Context(), zoneOf(zone), read(t, p, zone).State, &providers.Changes{Create: []*v1alpha1.Endpoint{ep}}); err != nil {
				t.Fatal(err)
			}
			got := find(read(t, p, zone).Endpoints, ep.DNSName, ep.RecordType)
			if got == nil || !got.SameValues(ep) {
				t.Fatalf("read back %v, want %v", got, ep)
			}
			if err := p.Apply(t.Context(), zoneOf(zone), read(t, p, zone).State, &providers.Changes{Delete: []*v1alpha1.Endpoint{got}}); err != nil {
				t.Fatal(err)
			}
			if got := find(read(t, p, zone).Endpoints, ep.DNSName, ep.RecordType); got != nil {
				t.Errorf("deleted set still read: %v", got)
			}
		})
	}
	t.Run("unsigned transfer", func(t *testing.T) {
		unsigned := map[string]string{v1alpha1.RFC2136TSIGAXFRKey: "false"}
		p := s.provider(t, []string{s.human, s.zones[0]}, unsigned)
		if got := find(read(t, p, s.human).Endpoints, "human."+s.human, v1alpha1.RecordTypeA); got == nil {
			t.Errorf("an unsigned transfer of a zone that allows it by address did not read its record")
		}
		// A zone that allows transfers only with the key refuses an unsigned one.
		_, err := p.Records(t.Context(), zoneOf(s.zones[0]))
		if providers.KindOf(err) != providers.Permanent || err == nil || !strings.Contains(err.Error(), "allow-transfer") {
			t.Errorf("unsigned transfer of a zone that wants the key = %v, want a Permanent error naming allow-transfer", err)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		other, _, _ := selfSigned(t, t.TempDir())
		p := s.provider(t, s.zones[:1], map[string]string{v1alpha1.RFC2136TransportKey: TransportTLS, v1alpha1.RFC2136PortKey: tlsPort, v1alpha1.RFC2136TLSCAKey: other})
		_, err := p.Records(t.Context(), zoneOf(s.zones[0]))
		if providers.KindOf(err) != providers.Permanent || err == nil || !strings.Contains(err.Error(), v1alpha1.RFC2136TLSCAKey) {
			t.Errorf("Records with an untrusted certificate = %v, want a Permanent error naming %s", err, v1alpha1.RFC2136TLSCAKey)
		}
	})
}
