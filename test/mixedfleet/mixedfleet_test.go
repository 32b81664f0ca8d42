//go:build mixedfleet

package mixedfleet

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// wait bounds every wait for the fleet to converge: Kuadrant's operator re-checks a record every
// 5 s (its --min-requeue-time) and the primaries act on watch events, so two minutes are generous
// even on two loaded cores.
const wait = 2 * time.Minute

// scenario is one of Kuadrant's delegation scenarios (its integration tests,
// internal/controller/dnsrecord_controller_delegation_test.go, and its testsuite), run in its own
// namespace and zone on every cluster of a fleet.
type scenario struct {
	name string
	run  func(t *testing.T, f *fleet, s *space)
}

// One primary and one secondary.
var scenarios = []scenario{
	{"merge", merge},
	{"secondary-edits-and-deletes", secondaryEdits},
	{"delegate-false-stays-out", delegateFalseStaysOut},
	{"last-contributor", lastContributor},
	{"finalizer-waits-for-primary", finalizerWaits},
}

// Two primaries, Kuadrant's and ours, and a secondary.
var twoPrimaryScenarios = []scenario{
	{"identical-authoritative-records", identicalAuthoritative},
	{"finalizer-waits-for-every-primary", finalizerWaitsForEvery},
}

// space is a scenario's namespace (the same name on every cluster), zone and root host.
type space struct{ ns, zone, host string }

func spaceOf(name string) *space {
	zone := name + ".mixed.test"
	return &space{ns: name, zone: zone, host: "app." + zone}
}

// fleet is one or more primary clusters, each with a DNS server answering for its authoritative
// records, and a secondary cluster.
type fleet struct {
	primaries []*cluster
	primary   *cluster // the first of primaries
	secondary *cluster
}

// TestMixedFleet runs the scenarios of one primary and one secondary in both directions.
func TestMixedFleet(t *testing.T) {
	for _, d := range []struct {
		name               string
		primary, secondary operator
	}{
		{"kuadrant-primary", kuadrant, ours},
		{"ours-primary", ours, kuadrant},
	} {
		runFleet(t, d.name, []operator{d.primary}, d.secondary, scenarios)
	}
}

// TestTwoPrimaries runs the scenarios of two primaries, Kuadrant's and ours, each reaching the
// other and the secondary, as Kuadrant's documentation sets several primaries up; with each
// operator as the secondary in turn.
func TestTwoPrimaries(t *testing.T) {
	for _, secondary := range []operator{ours, kuadrant} {
		name := "two-primaries-" + string(secondary) + "-secondary"
		runFleet(t, name, []operator{kuadrant, ours}, secondary, twoPrimaryScenarios)
	}
}

// runFleet starts a fleet and runs list on it, recording each scenario's result; a fleet that
// does not start (an operator refusing its flags, say) is a row of the table too.
func runFleet(t *testing.T, direction string, primaries []operator, secondary operator, list []scenario) {
	var entered, started bool
	t.Run(direction, func(t *testing.T) {
		entered = true
		f := startFleet(t, direction, primaries, secondary, list)
		started = true
		runScenarios(t, direction, f, list)
	})
	if entered && !started {
		record(direction, "(the fleet did not start)", false, 0)
	}
}

func runScenarios(t *testing.T, direction string, f *fleet, list []scenario) {
	for _, sc := range list {
		var started time.Time
		ok := t.Run(sc.name, func(t *testing.T) {
			started = time.Now()
			sc.run(t, f, f.space(t, sc.name))
		})
		if !started.IsZero() { // not left out by -run
			record(direction, sc.name, ok, time.Since(started))
		}
	}
}

// startFleet starts the control planes, connects every primary to the secondary and to the other
// primaries, and starts the operators, each primary with a DNS server answering for its
// authoritative records. The namespace of each of list is granted its zone on those servers.
func startFleet(t *testing.T, name string, primaryOps []operator, secondaryOp operator, list []scenario) *fleet {
	t.Helper()
	f := &fleet{secondary: startCluster(t, name+"-secondary", secondaryOp)}
	for i, op := range primaryOps {
		f.primaries = append(f.primaries, startCluster(t, fmt.Sprintf("%s-primary%d", name, i+1), op))
	}
	f.primary = f.primaries[0]
	for _, p := range f.primaries {
		connect(t, p, f.secondary)
		for _, other := range f.primaries {
			if other != p {
				connect(t, p, other)
			}
		}
	}
	startOperator(t, f.secondary, "secondary")
	for _, p := range f.primaries {
		// Our DNS server serves the authoritative records of granted namespaces: the grants are
		// the administrator's, given at start.
		p.dns = freeport.Addr(t)
		dnsArgs := []string{"--dns-server-address", p.dns}
		for _, sc := range list {
			s := spaceOf(sc.name)
			dnsArgs = append(dnsArgs, "--grant", s.ns+"="+s.zone)
		}
		switch p.op {
		case ours:
			startOperator(t, p, "primary", dnsArgs...)
		case kuadrant:
			startOperator(t, p, "primary")
			startDNSServer(t, p, dnsArgs)
		}
	}
	return f
}

// space creates a scenario's namespace on every cluster and, on each primary, its default
// provider Secret: kuadrant.io/coredns for the scenario's zone, labelled
// kuadrant.io/default-provider, the Secret a delegating record's authoritative record is
// published through.
func (f *fleet) space(t *testing.T, name string) *space {
	t.Helper()
	s := spaceOf(name)
	for _, cl := range f.clusters() {
		if err := cl.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range f.primaries {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "dns-provider-credentials-coredns", Namespace: s.ns,
				Labels: map[string]string{v1alpha1.DefaultProviderLabel: "true"}},
			Type: v1alpha1.SecretTypeCoreDNS,
			Data: map[string][]byte{v1alpha1.CoreDNSZonesKey: []byte(s.zone)},
		}
		if err := p.c.Create(context.Background(), secret); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s", f.describe(s))
		}
	})
	return s
}

func (f *fleet) clusters() []*cluster { return append([]*cluster{f.secondary}, f.primaries...) }
