//go:build integration

package dnsrecord_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/rfc2136"
	"github.com/dnspolicy/dnspolicy-controller/test/integration/internal/recordplane"
	"github.com/dnspolicy/dnspolicy-controller/test/resolver"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// activeGroupsOnBIND reads the zone's active groups through the rfc2136 backend, as a controller
// about to switch them reads them.
func activeGroupsOnBIND(t *testing.T, data map[string]string, zone string) string {
	t.Helper()
	b := bindBackend(t, data)
	view, err := b.Zones.Records(t.Context(), providers.Zone{ID: zone, DNSName: zone})
	if err != nil {
		return "read failed: " + err.Error()
	}
	txt := groups.FindTXT(view.Endpoints, zone)
	if txt == nil {
		return "none"
	}
	return strings.Join(groups.Parse(txt.Targets), ",")
}

// failoverMember is one control plane of a failover test: its group, the address it publishes,
// and its controller's stop.
type failoverMember struct {
	group, target string
	env           *testenv.Env
	cl            *cluster
	stop          func()
}

// failoverPlane runs g1 (first in the order) and g2 on two control planes publishing host into a
// zone on BIND, with 1 s lease renewals, a 3 s lease, failover-after 2 s and the hold-down given.
// hc, when set, is the records' health check. It returns the members, the BIND Secret data and a
// function that starts a member's controller.
type failoverPlane struct {
	zone, host, nameserver string
	data                   map[string]string
	members                []*failoverMember
	start                  func(m *failoverMember) func()
}

func startFailoverPlane(t *testing.T, zone, host string, holdDown time.Duration, targets [2]string, hc *v1alpha1.HealthCheckSpec) *failoverPlane {
	t.Helper()
	factory := providers.NewFactory()
	factory.Register(v1alpha1.SecretTypeRFC2136, rfc2136.New)
	p := &failoverPlane{zone: zone, host: host, data: startBINDZone(t, zone, "dnspolicy")}
	p.nameserver = net.JoinHostPort(p.data[v1alpha1.RFC2136HostKey], p.data[v1alpha1.RFC2136PortKey])
	opts := fastOptions()
	opts.InactiveGroupRecheck = 200 * time.Millisecond
	p.start = func(m *failoverMember) func() {
		return recordplane.StartIn(t, m.env, m.cl.ns, recordplane.Controller{Factory: factory, Record: opts, App: app.Options{
			EnableRecordController: true, Group: m.group,
			// The gateways of the health-check test are on loopback, which probes reach only when allowed.
			HealthCheckAllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			FailoverOrder:           []string{"g1", "g2"}, FailoverAfter: 2 * time.Second, FailoverHoldDown: holdDown,
			OwnerLeases: app.OwnerLeaseOptions{Every: time.Second, Duration: 3 * time.Second, Expiry: true}}})
	}
	p.members = []*failoverMember{{group: "g1", target: targets[0], env: envs[0]}, {group: "g2", target: targets[1], env: envs[1]}}
	for i, m := range p.members {
		ns := testenv.NewNamespace(t, m.env, fmt.Sprintf("fo%d-", i))
		m.cl = &cluster{name: m.group, c: m.env.Client, ns: ns}
		m.stop = p.start(m)
		sd := map[string]string{"NAMESERVERS": p.nameserver}
		for k, v := range p.data {
			sd[k] = v
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: ns}, Type: v1alpha1.SecretTypeRFC2136, StringData: sd}
		if err := m.cl.c.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		rec := &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec: v1alpha1.DNSRecordSpec{RootHost: host, ProviderRef: &v1alpha1.ProviderRef{Name: "provider"}, HealthCheck: hc,
				Endpoints: []*v1alpha1.Endpoint{a(host, 60, m.target)}},
		}
		if err := m.cl.c.Create(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// serving says what is wrong with m's group serving: the TXT lists it alone and BIND answers its
// address alone.
func (p *failoverPlane) serving(t *testing.T, m *failoverMember) string {
	if got := activeGroupsOnBIND(t, p.data, p.zone); got != m.group {
		return "active groups " + got + ", want " + m.group
	}
	if got := resolver.AnswersA(p.nameserver, p.host); got != m.target {
		return "BIND answers " + got + ", want " + m.target
	}
	return ""
}

// holds checks that the TXT lists group from now until d has passed since from, reading it all
// along: the hold-down is a time in which nothing may happen.
func (p *failoverPlane) holds(t *testing.T, group string, from time.Time, d time.Duration) {
	t.Helper()
	for time.Since(from) < d {
		if got := activeGroupsOnBIND(t, p.data, p.zone); got != group {
			t.Fatalf("%v after the switch, within the hold-down, the active groups are %s, want %s", time.Since(from).Round(time.Second), got, group)
		}
		time.Sleep(200 * time.Millisecond) // reading the zone for the hold-down's length
	}
}

func failovers(zone, from, to string) float64 {
	v, _ := testenv.Metric("dnspolicy_group_failovers_total", map[string]string{"zone": zone, "from": from, "to": to})
	return v
}

// Automatic failover between two control planes publishing one host into a zone on BIND, g1 first
// in the order, with short leases, a 2 s failover-after and a 20 s hold-down. g1 serves; its
// controller is stopped (its lease stops changing); g2's controller counts g1 dead once g1's lease
// expires by its clock, switches the TXT to g2 after failover-after, and its records publish and
// remove g1's target: BIND answers g2's address. g1's controller comes back (same cluster, same
// records): the TXT stays on g2 through the hold-down, then g1 takes over again, and BIND answers
// g1's address. Each switch is a GroupFailover event and a dnspolicy_group_failovers_total count.
func TestAutomaticGroupFailoverAndFailBack(t *testing.T) {
	const holdDown = 20 * time.Second
	p := startFailoverPlane(t, "failover.example.com", "app.failover.example.com", holdDown, [2]string{"10.8.0.1", "10.8.0.2"}, nil)
	g1, g2 := p.members[0], p.members[1]
	setActiveGroups(t, p.data, p.zone, "g1")
	eventually(t, 60*time.Second, func() string { return p.serving(t, g1) })

	// g1's controller stops: its lease and member record are no longer renewed.
	g1.stop()
	stopped := time.Now()
	eventually(t, 90*time.Second, func() string { return p.serving(t, g2) })
	took := time.Since(stopped)
	t.Logf("g2 active and answering %v after g1's controller stopped", took.Round(100*time.Millisecond))
	if took < 3*time.Second+2*time.Second {
		t.Errorf("g2 took over %v after g1 stopped, before g1's lease (3 s) and failover-after (2 s) could have run out", took)
	}
	if v := failovers(p.zone, "g1", "g2"); v != 1 {
		t.Errorf("dnspolicy_group_failovers_total{from=g1,to=g2} = %v, want 1", v)
	}
	expectEvent(t, g2.cl, v1alpha1.ReasonGroupFailover)
	switched := time.Now()

	// g1's controller comes back: alive again, it waits for the hold-down since the switch.
	g1.stop = p.start(g1)
	p.holds(t, "g2", switched, holdDown-2*time.Second)
	eventually(t, 60*time.Second, func() string { return p.serving(t, g1) })
	t.Logf("g1 active again %v after the switch to g2", time.Since(switched).Round(100*time.Millisecond))
	if v := failovers(p.zone, "g2", "g1"); v != 1 {
		t.Errorf("dnspolicy_group_failovers_total{from=g2,to=g1} = %v, want 1", v)
	}
}

// The same with health checks: both controllers run, g1's only address starts failing its check
// (it stays published, fail-open, while no other owner publishes there): g1's member record says
// unhealthy and g2 takes over; the address passes again and, after the hold-down, g1 serves again.
func TestAutomaticGroupFailoverOnFailingHealthChecks(t *testing.T) {
	const holdDown = 15 * time.Second
	gws := startGateways(t, "127.0.0.21", "127.0.0.22")
	p := startFailoverPlane(t, "hcfailover.example.com", "app.hcfailover.example.com", holdDown, [2]string{"127.0.0.21", "127.0.0.22"}, healthCheck(gws.port))
	g1, g2 := p.members[0], p.members[1]
	setActiveGroups(t, p.data, p.zone, "g1")
	eventually(t, 60*time.Second, func() string { return p.serving(t, g1) })

	gws.set("127.0.0.21", false)
	failing := time.Now()
	eventually(t, 60*time.Second, func() string { return p.serving(t, g2) })
	t.Logf("g2 active and answering %v after g1's address started failing", time.Since(failing).Round(100*time.Millisecond))
	// Either controller may switch: g1's sees its own checks fail, g2's reads g1's member record.
	eventually(t, 10*time.Second, func() string {
		if failovers(p.zone, "g1", "g2") != 1 {
			return fmt.Sprintf("dnspolicy_group_failovers_total{from=g1,to=g2} = %v, want 1", failovers(p.zone, "g1", "g2"))
		}
		if m1, m2 := missingEvent(t, g1.cl, v1alpha1.ReasonGroupFailover), missingEvent(t, g2.cl, v1alpha1.ReasonGroupFailover); m1 != "" && m2 != "" {
			return m1 + "; " + m2
		}
		return ""
	})
	switched := time.Now()

	gws.set("127.0.0.21", true)
	p.holds(t, "g2", switched, holdDown-2*time.Second)
	eventually(t, 60*time.Second, func() string { return p.serving(t, g1) })
	t.Logf("g1 active again %v after the switch to g2", time.Since(switched).Round(100*time.Millisecond))
	if v := failovers(p.zone, "g2", "g1"); v != 1 {
		t.Errorf("dnspolicy_group_failovers_total{from=g2,to=g1} = %v, want 1", v)
	}
}

// missingEvent says what is wrong when cl's record "web" has no event of reason.
func missingEvent(t *testing.T, cl *cluster, reason string) string {
	list := &corev1.EventList{}
	if err := cl.c.List(t.Context(), list, client.InNamespace(cl.ns)); err != nil {
		return err.Error()
	}
	for _, e := range list.Items {
		if e.Reason == reason && e.InvolvedObject.Name == "web" {
			return ""
		}
	}
	return fmt.Sprintf("no %s event in %s", reason, cl.ns)
}
