//go:build integration

package dnsrecord_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/rfc2136"
	"github.com/dnspolicy/dnspolicy-controller/test/integration/internal/recordplane"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// answersA asks the nameserver at addr for the A records of host, as a resolver would, and returns
// the addresses sorted and joined by ",", or what went wrong.
func answersA(addr, host string) string {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(host), dns.TypeA)
	in, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		return "query failed: " + err.Error()
	}
	var ips []string
	for _, rr := range in.Answer {
		if a, ok := rr.(*dns.A); ok {
			ips = append(ips, a.A.String())
		}
	}
	slices.Sort(ips)
	return strings.Join(ips, ",")
}

// activeGroupsOnBIND reads the zone's active groups through the rfc2136 backend, as a controller
// about to switch them reads them.
func activeGroupsOnBIND(t *testing.T, data map[string]string, zone string) string {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "test", Name: "reader"}, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	b, err := rfc2136.New(t.Context(), s, providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
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

// Automatic failover between two control planes publishing one host into a zone on BIND, g1 first
// in the order, with short leases, a 2 s failover-after and a 20 s hold-down. g1 serves; its
// controller is stopped (its lease stops changing); g2's controller counts g1 dead once g1's lease
// expires by its clock, switches the TXT to g2 after failover-after, and its records publish and
// remove g1's target: BIND answers g2's address. g1's controller comes back (same cluster, same
// records): the TXT stays on g2 through the hold-down, then g1 takes over again, and BIND answers
// g1's address. Each switch is a GroupFailover event and a dnspolicy_group_failovers_total count.
func TestAutomaticGroupFailoverAndFailBack(t *testing.T) {
	factory := providers.NewFactory()
	factory.Register(v1alpha1.SecretTypeRFC2136, rfc2136.New)
	const z, host = "failover.example.com", "app.failover.example.com"
	const after, holdDown = 2 * time.Second, 20 * time.Second
	const leaseDuration = 3 * time.Second
	data := startBINDZone(t, z, "dnspolicy")
	nameserver := net.JoinHostPort(data[v1alpha1.RFC2136HostKey], data[v1alpha1.RFC2136PortKey])
	opts := fastOptions()
	opts.InactiveGroupRecheck = 200 * time.Millisecond
	type member struct {
		group, target string
		env           *testenv.Env
		cl            *cluster
		stop          func()
	}
	members := []*member{{group: "g1", target: "10.8.0.1", env: envs[0]}, {group: "g2", target: "10.8.0.2", env: envs[1]}}
	controller := func(m *member) recordplane.Controller {
		return recordplane.Controller{Factory: factory, Record: opts, App: app.Options{EnableRecordController: true, Group: m.group,
			FailoverOrder: []string{"g1", "g2"}, FailoverAfter: after, FailoverHoldDown: holdDown,
			OwnerLeases: app.OwnerLeaseOptions{Every: time.Second, Duration: leaseDuration, Expiry: true}}}
	}
	for i, m := range members {
		ns := testenv.NewNamespace(t, m.env, fmt.Sprintf("fo%d-", i))
		m.cl = &cluster{name: m.group, c: m.env.Client, ns: ns}
		m.stop = recordplane.StartIn(t, m.env, ns, controller(m))
		sd := map[string]string{"NAMESERVERS": nameserver}
		for k, v := range data {
			sd[k] = v
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: ns}, Type: v1alpha1.SecretTypeRFC2136, StringData: sd}
		if err := m.cl.c.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		m.cl.record(t, "web", host, a(host, 60, m.target))
	}
	serving := func(m *member) string {
		return firstOf(
			func() string {
				if got := activeGroupsOnBIND(t, data, z); got != m.group {
					return "active groups " + got + ", want " + m.group
				}
				return ""
			}(),
			func() string {
				if got := answersA(nameserver, host); got != m.target {
					return "BIND answers " + got + ", want " + m.target
				}
				return ""
			}())
	}
	failovers := func(from, to string) float64 {
		v, _ := testenv.Metric("dnspolicy_group_failovers_total", map[string]string{"zone": z, "from": from, "to": to})
		return v
	}

	setActiveGroups(t, data, z, "g1")
	eventually(t, 60*time.Second, func() string { return serving(members[0]) })

	// g1's controller stops: its lease and member record are no longer renewed.
	members[0].stop()
	stopped := time.Now()
	eventually(t, 90*time.Second, func() string { return serving(members[1]) })
	took := time.Since(stopped)
	t.Logf("g2 active and answering %v after g1's controller stopped", took.Round(100*time.Millisecond))
	if v := failovers("g1", "g2"); v != 1 {
		t.Errorf("dnspolicy_group_failovers_total{from=g1,to=g2} = %v, want 1", v)
	}
	expectEvent(t, members[1].cl, v1alpha1.ReasonGroupFailover)
	switched := time.Now()

	// g1's controller comes back: alive again, it waits for the hold-down since the switch.
	members[0].stop = recordplane.StartIn(t, members[0].env, members[0].cl.ns, controller(members[0]))
	for time.Since(switched) < holdDown-2*time.Second {
		if got := activeGroupsOnBIND(t, data, z); got != "g2" {
			t.Fatalf("%v after the switch, within the hold-down of %v, the active groups are %s", time.Since(switched).Round(time.Second), holdDown, got)
		}
		time.Sleep(200 * time.Millisecond) // polling the zone for the hold-down's length
	}
	eventually(t, 60*time.Second, func() string { return serving(members[0]) })
	t.Logf("g1 active again %v after the switch to g2", time.Since(switched).Round(100*time.Millisecond))
	if v := failovers("g2", "g1"); v != 1 {
		t.Errorf("dnspolicy_group_failovers_total{from=g2,to=g1} = %v, want 1", v)
	}
}
