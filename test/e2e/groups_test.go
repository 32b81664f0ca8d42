//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

const (
	groupsNS = "groups"
	// The failover runs at test speed: leases of 5 s asking for 20 s (as in leases_test.go), the
	// active group replaced 5 s after it is judged dead, a fail-back no sooner than 40 s after a
	// switch.
	groupsAfter    = 5 * time.Second
	groupsHoldDown = 40 * time.Second
	// groupsRecheck is how often a grouped record reads the active groups, and so how often its
	// controller judges them (the record controller's InactiveGroupRecheck, Kuadrant's 15 s).
	groupsRecheck = 15 * time.Second
)

// Issue 24, acceptance 3, on the Route 53 emulator: two control planes, the controller of each a
// process started with --group (g1, g2) and automatic failover in the order g1,g2; the active groups
// are read over DNS from a server serving the emulator's zone (the Secret's NAMESERVERS). With g1
// active only g1's address is answered. g1's controller is killed with SIGKILL: within its lease, the
// failover delay and a pass, g2's controller switches the TXT to g2 (a GroupFailover event), g2
// publishes and removes g1's address, and the answers are g2's. g1 restarted stays inactive until the
// hold-down since the switch has passed, then the TXT lists g1 again and the answers are g1's.
func TestGroupFailoverAfterSIGKILL(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	bin := buildController(t)
	cloud := route53Cloud(t)
	reader := leaseReader(t, cloud)
	nameserver, answers := serveZoneAt(t, reader.read, leaseZone, leaseHost)

	names := []string{"g1", "g2"}
	ips := []string{"10.3.0.1", "10.3.0.2"}
	procs := make([]*controllerProcess, 2)
	for i, g := range names {
		env, err := testenv.Start(testenv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Stop() })
		procs[i] = startControllerProcess(t, bin, "cluster-"+g, env, cloud.provider,
			"--owner-lease-renewal", leaseEvery.String(), "--owner-lease-duration", leaseDuration.String(),
			"--group", g, "--group-failover-order", "g1,g2",
			"--group-failover-after", groupsAfter.String(), "--group-failover-hold-down", groupsHoldDown.String())
		cl := procs[i].cluster
		cl.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: groupsNS}})
		s := cloud.secret(groupsNS, "provider")
		s.Data["NAMESERVERS"] = []byte(nameserver)
		cl.create(t, s)
		cl.create(t, &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: groupsNS},
			Spec: v1alpha1.DNSRecordSpec{OwnerID: "owner-" + g, RootHost: leaseHost, ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
				Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(leaseHost, v1alpha1.RecordTypeA, 60, ips[i])}},
		})
	}
	activeGroups := func() []string {
		eps, err := reader.read()
		if err != nil {
			t.Fatal(err)
		}
		txt := groups.FindTXT(eps, leaseZone)
		if txt == nil {
			return nil
		}
		return groups.Parse(txt.Targets)
	}
	answering := func(want string) string {
		if got := answers(t); !slices.Equal(got, []string{want}) {
			return fmt.Sprintf("the DNS server answers %v, want %s", got, want)
		}
		return ""
	}
	reader.apply(t, groups.Changes(leaseZone, nil, []string{"g1"}))
	eventually(t, 2*time.Minute, func() string {
		if msg := answering(ips[0]); msg != "" {
			return msg
		}
		if got := condition(procs[1].cluster.record(t, groupsNS, "app"), v1alpha1.ConditionTypeReady); got != "False MemberOfInactiveGroup: No further actions to take while in inactive group" {
			return "g2's record: Ready " + got
		}
		return ""
	})

	procs[0].kill(t)
	killed := time.Now()
	// g1's lease: its last renewal up to a period before the kill, its duration and the reader's
	// tolerance; g2's next read of the zone (a period); the failover delay; g2's record's next pass;
	// its write, the quiet pass that removes g1's address, and the server's mirror, on loaded cores.
	bound := leaseDuration + lease.DefaultTolerance + 2*leaseEvery + groupsAfter + groupsRecheck + 15*time.Second
	var switched time.Time
	eventually(t, 3*bound, func() string {
		if got := activeGroups(); !slices.Equal(got, []string{"g2"}) {
			return fmt.Sprintf("the zone's active groups are %v", got)
		}
		if switched.IsZero() {
			switched = time.Now()
		}
		return answering(ips[1])
	})
	t.Logf("g2 active %v and answering %v after g1's SIGKILL (bound %v)", switched.Sub(killed).Round(100*time.Millisecond),
		time.Since(killed).Round(100*time.Millisecond), bound)
	if took := time.Since(killed); took > bound {
		t.Errorf("g2 answered %v after the SIGKILL, more than %v", took, bound)
	}
	if !procs[1].cluster.hasEvent(t, groupsNS, "app", corev1.EventTypeNormal, v1alpha1.ReasonGroupFailover) {
		t.Error("g2's record has no GroupFailover event")
	}
	eventually(t, time.Minute, func() string {
		if !procs[1].cluster.hasEvent(t, groupsNS, "app", corev1.EventTypeNormal, v1alpha1.ReasonInactiveGroupsRemoved) {
			return "g2's record has no InactiveGroupsRemoved event"
		}
		return ""
	})

	procs[0].restart(t)
	var back time.Time
	eventually(t, groupsHoldDown+3*bound, func() string {
		if got := activeGroups(); !slices.Equal(got, []string{"g1"}) {
			if !slices.Equal(got, []string{"g2"}) {
				t.Fatalf("the zone's active groups are %v, want g2 until the fail-back", got)
			}
			return fmt.Sprintf("the zone's active groups are %v", got)
		}
		if back.IsZero() {
			back = time.Now()
		}
		return answering(ips[0])
	})
	t.Logf("g1 active again %v after the switch to g2 (hold-down %v)", back.Sub(switched).Round(100*time.Millisecond), groupsHoldDown)
	// switched is when the test saw the switch, at most a read after it was written.
	if back.Sub(switched) < groupsHoldDown-2*time.Second {
		t.Errorf("g1 took over again %v after the switch, before the hold-down of %v", back.Sub(switched), groupsHoldDown)
	}
}
