//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/route53"
	route53emu "github.com/dnspolicy/dnspolicy-controller/test/emulators/route53"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// The conflict status of a DNSRecord (issue 10): its own condition beside Ready, so a loser whose
// traffic flows is not reported as not published.
const (
	conditionConflicted = "Conflicted"
	reasonConflicted    = "Conflicted"
	reasonNoConflict    = "NoConflict"
	msgNoConflict       = "Every value this owner wants is published"
	msgConflictPrefix   = "Another owner's value is published: "
	msgProviderSuccess  = "Provider ensured the dns record"
)

const (
	conflictZone = "conflicts.e2e.example.com"
	// toldWithin bounds how long after the winner's write the loser may learn it lost: the pass that
	// follows the write, not the re-check that comes MinRecheck (30 s, less 10% jitter) later.
	toldWithin = 10 * time.Second
	// quietWindow is how long nobody may write once a conflict settled; it holds a re-check of each
	// record: MinRecheck (30 s) after the last write of the side that named its lease last, and for
	// the other side the re-check after its first quiet one (60 s, plus 10% jitter, after it).
	quietWindow = 75 * time.Second
)

// Acceptance 8 of issue 10: two controllers, each a separate process with its own control plane,
// share one Route 53 (emulator) zone. For the default-geo, TTL, CNAME-targets and A-versus-CNAME
// conflicts, the side that writes first wins (its value stays while it wants it, issue 22), whether
// its owner ID is the lower or the higher; the loser is told within the pass that follows the
// winner's write, its status says what is published (a lost shared wish is the Conflicted condition,
// not Ready=False, and a policy whose targets are published stays Enforced), and nobody writes again.
//
// "The higher owner ID writes first" is made exact with the emulator's hold: the winner's change
// applies, its next requests (the read that checks its write) wait until the loser's change has
// applied. That is the interleaving of two clusters applying their manifests at the same moment; the
// lower owner ID planning while the winner's write is still being checked takes nothing.
func TestTwoControllersConflictsEnd(t *testing.T) {
	ctrllog.SetLogger(logr.Discard()) // the control planes' own logs; the controllers log to files
	bin := buildController(t)
	emu := route53emu.New(route53emu.Options{Zones: []string{conflictZone}, AccessKeys: conflictKeys(), RequestsPerSecond: -1})
	srv, url, err := emu.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })

	var clusters [2]*conflictCluster
	for i := range clusters {
		env, err := testenv.Start(testenv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := env.Stop(); err != nil {
				t.Errorf("stopping control plane %d: %v", i+1, err)
			}
		})
		clusters[i] = startConflictCluster(t, bin, fmt.Sprintf("cluster%d", i+1), env)
	}

	// The eight cases run at once whatever -parallel says (they wait, mostly on their quiet windows),
	// each in its own namespaces with its own Secrets.
	var wg sync.WaitGroup
	for _, kind := range conflictKinds {
		for _, higherFirst := range []bool{false, true} {
			c := &conflictCase{kind: kind, higherFirst: higherFirst, emu: emu, url: url, clusters: clusters}
			wg.Go(func() { t.Run(c.slug(), c.run) })
		}
	}
	wg.Wait()
}

// conflictKind is one thing two owners want differently.
type conflictKind struct {
	name string
	// policies: the owners are DNSPolicies on Gateways (loadbalanced, each defaultGeo with its own
	// geo); else DNSRecords written directly with explicit owner IDs.
	policies bool
	// winner and loser are the DNSRecords' endpoints for host (record kinds only).
	winner, loser func(host string) []*v1alpha1.Endpoint
	// field is what the loser's Conflicted message names.
	field string
	// loserKeyPublished: the loser's record keys all exist in the zone (holding the winner's value
	// where they conflict), so its Ready is True; false when its record type lost (A versus CNAME).
	loserKeyPublished bool
	// published says what is wrong with the zone once both owners are in, or "".
	published func(c *conflictCase, zone []*v1alpha1.Endpoint) string
}

var conflictKinds = []conflictKind{
	{
		name: "default geo", policies: true, field: "targets", loserKeyPublished: true,
		published: func(c *conflictCase, zone []*v1alpha1.Endpoint) string {
			klb := "klb." + c.host()
			want := []string{
				c.host() + " CNAME 300 " + klb,
				klb + " CNAME 300 ie." + klb + " set=IE geo=IE",
				klb + " CNAME 300 us." + klb + " set=US geo=US",
				klb + " CNAME 300 " + strings.ToLower(c.geoOf(c.winnerSide())) + "." + klb + " set=default geo=*",
			}
			for _, side := range []int{0, 1} {
				leaf := c.leaf(side)
				want = append(want,
					leaf+" A 60 "+c.gatewayIP(side),
					strings.ToLower(c.geoOf(side))+"."+klb+" CNAME 60 "+leaf+" set="+leaf+" weight=120")
			}
			return sameLines(endpointLines(zone, c.host()), want)
		},
	},
	{
		name: "ttl", field: "recordTTL", loserKeyPublished: true,
		winner: func(h string) []*v1alpha1.Endpoint {
			return []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(h, "A", 60, "10.20.0.1")}
		},
		loser: func(h string) []*v1alpha1.Endpoint {
			return []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(h, "A", 300, "10.20.0.2")}
		},
		published: func(c *conflictCase, zone []*v1alpha1.Endpoint) string {
			return sameLines(endpointLines(zone, c.host()), []string{c.host() + " A 60 10.20.0.1,10.20.0.2"})
		},
	},
	{
		name: "cname targets", field: "targets", loserKeyPublished: true,
		winner: func(h string) []*v1alpha1.Endpoint {
			return []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(h, "CNAME", 60, "lb-winner.example.net")}
		},
		loser: func(h string) []*v1alpha1.Endpoint {
			return []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(h, "CNAME", 60, "lb-loser.example.net")}
		},
		published: func(c *conflictCase, zone []*v1alpha1.Endpoint) string {
			return sameLines(endpointLines(zone, c.host()), []string{c.host() + " CNAME 60 lb-winner.example.net"})
		},
	},
	{
		name: "a versus cname", field: "recordType", loserKeyPublished: false,
		winner: func(h string) []*v1alpha1.Endpoint {
			return []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(h, "A", 60, "10.30.0.1")}
		},
		loser: func(h string) []*v1alpha1.Endpoint {
			return []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(h, "CNAME", 60, "lb-loser.example.net")}
		},
		published: func(c *conflictCase, zone []*v1alpha1.Endpoint) string {
			return sameLines(endpointLines(zone, c.host()), []string{c.host() + " A 60 10.30.0.1"})
		},
	},
}

// conflictCase is one kind and one order, in its own namespace of each cluster with its own provider
// Secrets (each cluster its own access key), so the cases run at once without sharing a publish queue.
type conflictCase struct {
	kind        conflictKind
	higherFirst bool
	emu         *route53emu.Server
	url         string
	clusters    [2]*conflictCluster
	// winner is the side (0 or 1) that writes first: the plan keeps the value published while its
	// owner wants it (pkg/plan), whichever owner ID is lower. higherFirst: that side's is the higher.
	winner int
	owners [2]string
}

func (c *conflictCase) slug() string {
	order := "lower-first"
	if c.higherFirst {
		order = "higher-first"
	}
	return strings.ReplaceAll(c.kind.name, " ", "-") + "-" + order
}

func (c *conflictCase) host() string    { return c.slug() + "." + conflictZone }
func (c *conflictCase) ns() string      { return c.slug() }
func (c *conflictCase) winnerSide() int { return c.winner }
func (c *conflictCase) loserSide() int  { return 1 - c.winner }

// The DNSRecord of each side: a policy's is <gateway>-<listener>.
func (c *conflictCase) recordName() string {
	if c.kind.policies {
		return "gw-web"
	}
	return "web"
}

func (c *conflictCase) geoOf(side int) string { return []string{"IE", "US"}[side] }
func (c *conflictCase) gatewayIP(side int) string {
	return fmt.Sprintf("10.10.%d.%d", map[bool]int{false: 1, true: 2}[c.higherFirst], side+1)
}

// leaf is the A record name of one side's Gateway in the loadbalanced tree (DESIGN section 3).
func (c *conflictCase) leaf(side int) string {
	return hash.Base36(c.clusters[side].clusterID, 6) + "-" + hash.Base36("gw-"+c.ns(), 6) + ".klb." + c.host()
}

// accessKeyOf is the key of one side's Secret in one case (side 9: the test's reader): the emulator
// counts and holds requests by key.
func accessKeyOf(slug string, side int) string {
	return strings.ToUpper(fmt.Sprintf("AKIA%s%d", strings.ReplaceAll(slug, "-", ""), side+1))
}

func conflictKeys() []string {
	var keys []string
	for _, kind := range conflictKinds {
		for _, higherFirst := range []bool{false, true} {
			c := &conflictCase{kind: kind, higherFirst: higherFirst}
			keys = append(keys, accessKeyOf(c.slug(), 0), accessKeyOf(c.slug(), 1), accessKeyOf(c.slug(), 9))
		}
	}
	return keys
}

func (c *conflictCase) run(t *testing.T) {
	for side, cl := range c.clusters {
		cl.create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns()}})
		if c.kind.policies {
			c.gatewayAndPolicy(t, side)
		} else {
			c.owners[side] = []string{"owner-a-", "owner-b-"}[side] + c.slug()
		}
	}
	if c.kind.policies {
		// The policies' records exist before either can publish (no Secret yet), so their owner IDs
		// (hash8 of the record's UID) and thus the winner are known before anybody writes.
		for side, cl := range c.clusters {
			var rec *v1alpha1.DNSRecord
			eventually(t, 30*time.Second, func() string {
				rec = cl.record(t, c.ns(), c.recordName())
				if rec == nil {
					return fmt.Sprintf("%s: the policy made no DNSRecord %s/%s", cl.name, c.ns(), c.recordName())
				}
				return ""
			})
			c.owners[side] = hash.Base36(string(rec.UID), 8)
		}
	}
	lower := 0
	if c.owners[1] < c.owners[0] {
		lower = 1
	}
	c.winner = lower
	if c.higherFirst {
		c.winner = 1 - lower
	}
	first, second := c.winnerSide(), c.loserSide()
	t.Logf("%s: winner %s (%s) writes first, loser %s (%s)", c.slug(), c.owners[c.winner], c.clusters[c.winner].name,
		c.owners[c.loserSide()], c.clusters[c.loserSide()].name)

	var hold *route53emu.Hold
	if c.higherFirst {
		hold = c.emu.HoldAfterChange(accessKeyOf(c.slug(), first))
		defer hold.Release()
	}
	c.start(t, first)
	c.waitForWrite(t, first, 60*time.Second)
	if c.higherFirst {
		select {
		case <-hold.Holding():
		case <-time.After(10 * time.Second):
			t.Fatalf("the winner's change applied but the emulator's hold did not start")
		}
	} else {
		// The winner is published and settled before the loser starts.
		c.waitReady(t, first, metav1.ConditionTrue, 60*time.Second)
	}
	// The loser's first pass follows the winner's write: it is told in that pass.
	from := time.Now()
	c.start(t, second)
	if c.higherFirst {
		c.waitForWrite(t, second, 60*time.Second)
		c.waitPublished(t, 30*time.Second)
		hold.Release()
	}
	c.waitTold(t, from)

	c.settled(t)
	c.quiet(t)
}

// gatewayAndPolicy creates one side's Gateway (status written as an implementation would) and its
// loadbalanced DNSPolicy naming the provider Secret, which does not exist yet.
func (c *conflictCase) gatewayAndPolicy(t *testing.T, side int) {
	publishGateway(t, c.clusters[side], c.ns(), c.host(), c.gatewayIP(side), func(p *dnsv1.DNSPolicy) {
		p.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Weight: 120, Geo: c.geoOf(side), DefaultGeo: true}
	})
}

// publishGateway creates a Gateway "gw" in ns with one listener for host, writes its status as an
// implementation would (ip, one attached route), and attaches the DNSPolicy "lb" naming the
// provider Secret "provider", as policy shapes it.
func publishGateway(t *testing.T, cl *conflictCluster, ns, host, ip string, policy func(*dnsv1.DNSPolicy)) {
	t.Helper()
	gw := &gatewayapiv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: ns},
		Spec: gatewayapiv1.GatewaySpec{GatewayClassName: "test", Listeners: []gatewayapiv1.Listener{{
			Name: "web", Hostname: ptr.To(gatewayapiv1.Hostname(host)), Port: 80, Protocol: gatewayapiv1.HTTPProtocolType,
		}}},
	}
	cl.create(t, gw)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := cl.c.Get(context.Background(), client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		gw.Status.Addresses = []gatewayapiv1.GatewayStatusAddress{{Type: ptr.To(gatewayapiv1.IPAddressType), Value: ip}}
		gw.Status.Listeners = []gatewayapiv1.ListenerStatus{{
			Name: "web", AttachedRoutes: 1,
			Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", LastTransitionTime: metav1.Now()}},
		}}
		return cl.c.Status().Update(context.Background(), gw)
	})
	if err != nil {
		t.Fatal(err)
	}
	p := &dnsv1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Name: "lb", Namespace: ns}}
	p.Spec.TargetRef.Group = gatewayapiv1.GroupName
	p.Spec.TargetRef.Kind = "Gateway"
	p.Spec.TargetRef.Name = "gw"
	p.Spec.ProviderRefs = []v1alpha1.ProviderRef{{Name: "provider"}}
	policy(p)
	cl.create(t, p)
}

// start lets one side publish: its provider Secret (policies) or its DNSRecord (records).
func (c *conflictCase) start(t *testing.T, side int) {
	cl := c.clusters[side]
	cl.create(t, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: c.ns()},
		Type:       v1alpha1.SecretTypeAWS,
		StringData: map[string]string{
			v1alpha1.AWSAccessKeyIDKey:     accessKeyOf(c.slug(), side),
			v1alpha1.AWSSecretAccessKeyKey: "secret-of-" + cl.name,
			v1alpha1.EndpointOverrideKey:   c.url,
		},
	})
	if c.kind.policies {
		return
	}
	eps := c.kind.winner(c.host())
	if side != c.winner {
		eps = c.kind.loser(c.host())
	}
	cl.create(t, &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: c.recordName(), Namespace: c.ns()},
		Spec: v1alpha1.DNSRecordSpec{
			OwnerID: c.owners[side], RootHost: c.host(), ProviderRef: &v1alpha1.ProviderRef{Name: "provider"}, Endpoints: eps,
		},
	})
}

// writes counts one side's ChangeResourceRecordSets calls.
func (c *conflictCase) writes(side int) int {
	return c.emu.CallsBy(accessKeyOf(c.slug(), side))[route53emu.OpChangeResourceRecordSets]
}

// recordWrites counts one side's applied changes that touch anything but a lease: sharing names,
// the two clusters renew their leases every period (docs/zone-sharing.md#owner-leases), which the
// lease tests count; a conflict that ended writes nothing else.
func (c *conflictCase) recordWrites(side int) int {
	n := 0
	for _, names := range c.emu.ChangedBy(accessKeyOf(c.slug(), side)) {
		if slices.ContainsFunc(names, func(name string) bool { return !strings.HasPrefix(name, "dnspolicy-lease-") }) {
			n++
		}
	}
	return n
}

// waitForWrite waits for one side's first change to the zone.
func (c *conflictCase) waitForWrite(t *testing.T, side int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for c.writes(side) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s (owner %s) made no change to the zone within %s; its record: %s",
				c.slug(), c.clusters[side].name, c.owners[side], timeout, c.describe(t, side))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *conflictCase) waitReady(t *testing.T, side int, status metav1.ConditionStatus, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() string {
		rec := c.clusters[side].record(t, c.ns(), c.recordName())
		if rec == nil {
			return "no record"
		}
		if got := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeReady); got == nil || got.Status != status {
			return fmt.Sprintf("%s: %s's Ready is not %s: %s", c.slug(), c.clusters[side].name, status, c.describe(t, side))
		}
		return ""
	})
}

// waitTold waits for the loser's Conflicted condition and fails when it comes later than toldWithin
// after from (a later re-check) or not at all. It logs when the loser's Ready first named the
// conflict too (how the controller said it before the Conflicted condition).
func (c *conflictCase) waitTold(t *testing.T, from time.Time) {
	t.Helper()
	loser := c.loserSide()
	const since = "the loser started"
	deadline := from.Add(45 * time.Second)
	readyTold := false
	for {
		rec := c.clusters[loser].record(t, c.ns(), c.recordName())
		if rec != nil {
			if cond := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeReady); !readyTold && cond != nil && cond.Reason == reasonConflicted {
				readyTold = true
				t.Logf("%s: the loser's Ready names the conflict %.1fs after %s", c.slug(), time.Since(from).Seconds(), since)
			}
			if cond := meta.FindStatusCondition(rec.Status.Conditions, conditionConflicted); cond != nil && cond.Status == metav1.ConditionTrue {
				now := time.Now()
				t.Logf("%s: the loser's %s=True %.1fs after %s", c.slug(), conditionConflicted, now.Sub(from).Seconds(), since)
				if now.Sub(from) > toldWithin {
					t.Errorf("%s: the loser (owner %s) was told only %.1fs after the winner's write, at a later re-check, not within %s (the pass that follows the write): %s",
						c.slug(), c.owners[loser], now.Sub(from).Seconds(), toldWithin, c.describe(t, loser))
				}
				return
			}
		}
		if time.Now().After(deadline) {
			// The rest of the case still runs: what the zone and the statuses show, and whether anybody
			// keeps writing, is what the engine's author needs next.
			t.Errorf("%s: the loser (owner %s) has no %s=True condition %.0fs after %s: %s",
				c.slug(), c.owners[loser], conditionConflicted, time.Since(from).Seconds(), since, c.describe(t, loser))
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitPublished waits until the zone holds the winner's value beside both owners' own records.
func (c *conflictCase) waitPublished(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		zone, err := c.readZone()
		msg := ""
		if err != nil {
			msg = err.Error()
		} else if msg = c.kind.published(c, zone); msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: within %s the zone did not come to hold the winner's value with both owners' own records:\n%s\nemulator:\n  %s\n%s: %s\n%s: %s",
				c.slug(), timeout, msg, strings.Join(c.emu.Dump(conflictZone), "\n  "),
				c.clusters[0].name, c.describe(t, 0), c.clusters[1].name, c.describe(t, 1))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// settled checks the zone and both sides' statuses once the conflict has been decided.
func (c *conflictCase) settled(t *testing.T) {
	t.Helper()
	c.waitPublished(t, 20*time.Second)
	// Sharing names with another cluster, each owner's claims there name its cluster's lease: the
	// side that wrote first adds it at its next re-check, one write of its claims, the last before
	// the quiet window (zone-sharing.md#owner-leases). That re-check is MinRecheck (30 s) after its
	// write, or, when it had a quiet pass before the other side wrote, 60 s after that pass (the
	// re-check doubles), each plus 10% jitter.
	eventually(t, 100*time.Second, func() string {
		zone, err := c.readZone()
		if err != nil {
			return err.Error()
		}
		// By name, as the engine decides it: an A of one owner beside the other's CNAME claim shares.
		owners, claims := map[string]map[string]bool{}, map[string][]*registry.Claim{}
		for _, r := range registry.Read(zone).Records() {
			for _, cl := range r.Claims {
				if owners[r.Key.DNSName] == nil {
					owners[r.Key.DNSName] = map[string]bool{}
				}
				owners[r.Key.DNSName][cl.Owner] = true
				claims[r.Key.DNSName] = append(claims[r.Key.DNSName], cl)
			}
		}
		for name, at := range owners {
			if !at[c.owners[0]] || !at[c.owners[1]] {
				continue
			}
			for _, cl := range claims[name] {
				if cl.Lease() == "" {
					return fmt.Sprintf("%s: %s's claim of %s %s names no lease yet", c.slug(), cl.Owner, cl.Record.RecordType, name)
				}
			}
		}
		return ""
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		msg := c.statusProblems(t)
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			// Reported, and the quiet window still runs: a wrong status and a write loop are separate findings.
			t.Errorf("statuses not as issue 10 defines them 20s after the zone settled: %s", msg)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// statusProblems says how the two sides' statuses differ from issue 10's conflict semantics, or "".
func (c *conflictCase) statusProblems(t *testing.T) string {
	t.Helper()
	w, l := c.winnerSide(), c.loserSide()
	var problems []string
	wrec, lrec := c.clusters[w].record(t, c.ns(), c.recordName()), c.clusters[l].record(t, c.ns(), c.recordName())
	if wrec == nil || lrec == nil {
		return "a record is gone"
	}
	for side, rec := range map[int]*v1alpha1.DNSRecord{w: wrec, l: lrec} {
		// The winner was worked out from these owner IDs (status.ownerID: spec.ownerID, else hash8 of the UID).
		if rec.Status.OwnerID != c.owners[side] {
			problems = append(problems, fmt.Sprintf("%s's record has status.ownerID %q, want %q", c.clusters[side].name, rec.Status.OwnerID, c.owners[side]))
		}
	}
	if got := condition(wrec, v1alpha1.ConditionTypeReady); got != "True "+v1alpha1.ReasonProviderSuccess+": "+msgProviderSuccess {
		problems = append(problems, fmt.Sprintf("winner (owner %s) Ready is %q, want True %s", c.owners[w], got, v1alpha1.ReasonProviderSuccess))
	}
	if got := condition(wrec, conditionConflicted); got != "False "+reasonNoConflict+": "+msgNoConflict {
		problems = append(problems, fmt.Sprintf("winner (owner %s) %s is %q, want False %s: %s", c.owners[w], conditionConflicted, got, reasonNoConflict, msgNoConflict))
	}
	if got, want := condition(lrec, v1alpha1.ConditionTypeReady), "True "+v1alpha1.ReasonProviderSuccess+": "+msgProviderSuccess; c.kind.loserKeyPublished && got != want {
		problems = append(problems, fmt.Sprintf("loser (owner %s) Ready is %q, want %q: every record key it wants is published (with the winner's %s)", c.owners[l], got, want, c.kind.field))
	} else if !c.kind.loserKeyPublished && !strings.HasPrefix(got, "False "+reasonConflicted+": ") {
		problems = append(problems, fmt.Sprintf("loser (owner %s) Ready is %q, want False %s: its record type lost, so its record is not published", c.owners[l], got, reasonConflicted))
	}
	got := condition(lrec, conditionConflicted)
	wantPrefix := "True " + reasonConflicted + ": " + msgConflictPrefix
	if !strings.HasPrefix(got, wantPrefix) || !strings.Contains(got, ": "+c.kind.field+" wants ") || !strings.Contains(got, "from owner "+c.owners[w]) {
		problems = append(problems, fmt.Sprintf("loser (owner %s) %s is %q, want %q...%q...%q", c.owners[l], conditionConflicted, got,
			wantPrefix, ": "+c.kind.field+" wants ", "from owner "+c.owners[w]))
	}
	if !c.clusters[l].hasEvent(t, c.ns(), c.recordName(), corev1.EventTypeWarning, reasonConflicted) {
		problems = append(problems, fmt.Sprintf("loser (owner %s) has no Warning event with reason %s", c.owners[l], reasonConflicted))
	}
	if c.kind.policies {
		for side, role := range map[int]string{w: "winner", l: "loser"} {
			p := c.clusters[side].policy(t, c.ns(), "lb")
			if got := policyCondition(p, "Enforced"); !strings.HasPrefix(got, "True Enforced: DNSPolicy has been successfully enforced") {
				problems = append(problems, fmt.Sprintf("%s's DNSPolicy Enforced is %q, want True Enforced: its targets are published", role, got))
			}
			if side == l {
				conds := p.Status.RecordConditions[c.host()]
				if !slices.ContainsFunc(conds, func(cond metav1.Condition) bool {
					return cond.Type == conditionConflicted && cond.Status == metav1.ConditionTrue
				}) {
					problems = append(problems, fmt.Sprintf("loser's DNSPolicy recordConditions[%s] = %v, want its record's %s=True condition", c.host(), conds, conditionConflicted))
				}
				if msg := meta.FindStatusCondition(p.Status.Conditions, "Enforced"); msg == nil || !strings.Contains(msg.Message, c.host()) {
					problems = append(problems, fmt.Sprintf("loser's DNSPolicy Enforced message %q does not name the conflicted record %s", policyCondition(p, "Enforced"), c.host()))
				}
			}
		}
	}
	if len(problems) > 0 {
		return c.slug() + ":\n  " + strings.Join(problems, "\n  ")
	}
	return ""
}

// quiet checks that nobody writes over quietWindow while both sides re-check (each at least once),
// and that their statuses do not move.
func (c *conflictCase) quiet(t *testing.T) {
	t.Helper()
	w0, w1 := c.recordWrites(0), c.recordWrites(1)
	p0, p1 := c.clusters[0].passes(t, c.ns(), c.recordName()), c.clusters[1].passes(t, c.ns(), c.recordName())
	start := time.Now()
	reported := map[int]bool{}
	for time.Since(start) < quietWindow {
		if c.kind.policies {
			// The loser's traffic flows all along, so its policy never reads as not enforced.
			for side := range c.clusters {
				if got := policyCondition(c.clusters[side].policy(t, c.ns(), "lb"), "Enforced"); !strings.HasPrefix(got, "True Enforced") && !reported[side] {
					reported[side] = true
					t.Errorf("%s: %.0fs into the quiet window %s's DNSPolicy Enforced is %q, want True Enforced throughout",
						c.slug(), time.Since(start).Seconds(), c.clusters[side].name, got)
				}
			}
		}
		if d0, d1 := c.recordWrites(0)-w0, c.recordWrites(1)-w1; d0 != 0 || d1 != 0 {
			t.Fatalf("%s: %.0fs after settling, %s wrote %d and %s wrote %d more changes; zone:\n  %s\n%s: %s\n%s: %s",
				c.slug(), time.Since(start).Seconds(), c.clusters[0].name, d0, c.clusters[1].name, d1, strings.Join(c.emu.Dump(conflictZone), "\n  "),
				c.clusters[0].name, c.describe(t, 0), c.clusters[1].name, c.describe(t, 1))
		}
		time.Sleep(250 * time.Millisecond)
	}
	if q0, q1 := c.clusters[0].passes(t, c.ns(), c.recordName())-p0, c.clusters[1].passes(t, c.ns(), c.recordName())-p1; q0 < 1 || q1 < 1 {
		t.Errorf("%s: over the %s window %s's record passed %v times and %s's %v times, want each at least once (its re-check): the silence proves nothing",
			c.slug(), quietWindow, c.clusters[0].name, q0, c.clusters[1].name, q1)
	}
	if msg := c.statusProblems(t); msg != "" && !t.Failed() {
		t.Errorf("after the quiet window: %s", msg)
	}
}

// readZone reads the zone through the aws backend, as a third cluster would.
func (c *conflictCase) readZone() ([]*v1alpha1.Endpoint, error) {
	ctx := context.Background()
	backend, err := route53.New(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns(), Name: "reader"},
		Type:       v1alpha1.SecretTypeAWS,
		Data: map[string][]byte{
			v1alpha1.AWSAccessKeyIDKey: []byte(accessKeyOf(c.slug(), 9)), v1alpha1.AWSSecretAccessKeyKey: []byte("reader"),
			v1alpha1.EndpointOverrideKey: []byte(c.url),
		},
	}, providers.Env{Namespace: c.ns()})
	if err != nil {
		return nil, err
	}
	p := backend.Zones
	zones, err := p.Zones(ctx)
	if err != nil {
		return nil, err
	}
	for _, z := range zones {
		if z.DNSName == conflictZone {
			read, err := p.Records(ctx, z)
			return read.Endpoints, err
		}
	}
	return nil, fmt.Errorf("zone %s not listed", conflictZone)
}

// describe renders one side's record status for failure messages.
func (c *conflictCase) describe(t *testing.T, side int) string {
	rec := c.clusters[side].record(t, c.ns(), c.recordName())
	if rec == nil {
		return "no DNSRecord " + c.ns() + "/" + c.recordName()
	}
	var conds []string
	for _, cond := range rec.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s %s: %s", cond.Type, cond.Status, cond.Reason, cond.Message))
	}
	return fmt.Sprintf("owner %s, conditions [%s]", rec.Status.OwnerID, strings.Join(conds, "; "))
}

// endpointLines renders the zone's record sets (not TXT) under host as sorted lines.
func endpointLines(zone []*v1alpha1.Endpoint, host string) []string {
	var out []string
	for _, ep := range zone {
		name := v1alpha1.NormalizeName(ep.DNSName)
		if ep.RecordType == v1alpha1.RecordTypeTXT || (name != host && !strings.HasSuffix(name, "."+host)) {
			continue
		}
		targets := make([]string, len(ep.Targets))
		for i, tg := range ep.Targets {
			targets[i] = v1alpha1.NormalizeName(tg)
		}
		sort.Strings(targets)
		line := fmt.Sprintf("%s %s %d %s", name, ep.RecordType, ep.RecordTTL, strings.Join(targets, ","))
		if ep.SetIdentifier != "" {
			line += " set=" + ep.SetIdentifier
		}
		if w, ok := ep.GetProviderSpecific(v1alpha1.ProviderSpecificWeight); ok {
			line += " weight=" + w
		}
		if g, ok := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode); ok {
			line += " geo=" + g
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}

func sameLines(got, want []string) string {
	sort.Strings(want)
	if slices.Equal(got, want) {
		return ""
	}
	return fmt.Sprintf("zone holds\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
}

func condition(rec *v1alpha1.DNSRecord, typ string) string {
	c := meta.FindStatusCondition(rec.Status.Conditions, typ)
	if c == nil {
		return "absent"
	}
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
}

func policyCondition(p *dnsv1.DNSPolicy, typ string) string {
	c := meta.FindStatusCondition(p.Status.Conditions, typ)
	if c == nil {
		return "absent"
	}
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
}

var eventually = testenv.Eventually

// conflictCluster is one control plane with the controller binary running against it as its own
// process, as a cluster runs it.
type conflictCluster struct {
	name      string
	c         client.Client
	clusterID string
	metrics   string
}

// buildController builds the controller binary once for the test.
func buildController(t *testing.T) string {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "dnspolicy-controller")
	build := exec.Command("go", "build", "-o", bin, "./cmd/dnspolicy-controller")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building ./cmd/dnspolicy-controller: %v\n%s", err, out)
	}
	return bin
}

func startConflictCluster(t *testing.T, bin, name string, env *testenv.Env) *conflictCluster {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := writeKubeconfig(t, dir, name, env)
	metrics := freeport.Addr(t)
	logPath := filepath.Join(dir, "controller.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--metrics-bind-address", metrics,
		"--health-probe-bind-address", freeport.Addr(t), "--log-format", "console", "--providers", route53.ProviderName,
		// Its Secrets point at the emulator; the health tests' gateways are on loopback, which
		// probes reach only when allowed.
		"--allow-provider-endpoint-override", "--health-check-allowed-cidrs", "127.0.0.0/8")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
		if t.Failed() {
			tail(t, name, logPath)
		}
	})
	cl := &conflictCluster{name: name, c: env.Client, clusterID: clusterID(t, env), metrics: metrics}
	eventually(t, time.Minute, func() string {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Sprintf("%s: the controller exited: %v", name, err)
		default:
		}
		if _, err := cl.scrape(); err != nil {
			return fmt.Sprintf("%s: the controller's metrics do not answer: %v", name, err)
		}
		return ""
	})
	return cl
}

// writeKubeconfig writes a kubeconfig for env's cluster, as its controller process reads it.
func writeKubeconfig(t *testing.T, dir, name string, env *testenv.Env) string {
	t.Helper()
	path := filepath.Join(dir, "kubeconfig")
	cfg := env.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// clusterID is the UID of env's kube-system Namespace, as the controller names its cluster.
func clusterID(t *testing.T, env *testenv.Env) string {
	t.Helper()
	id, err := env.ClusterID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// startLogged starts cmd with its output in logPath and stops it when the test ends (SIGTERM, then
// SIGKILL after 20 s), printing the log's tail under name if the test failed. exited receives
// cmd.Wait's result.
func startLogged(t *testing.T, name, logPath string, cmd *exec.Cmd) (exited chan error) {
	t.Helper()
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait(); _ = logFile.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			tail(t, name, logPath)
		}
	})
	return exited
}

// tail logs the last lines of a controller's log.
func tail(t *testing.T, name, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	t.Logf("last lines of %s's controller log:\n%s", name, strings.Join(lines[max(0, len(lines)-80):], "\n"))
}

func (cl *conflictCluster) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := cl.c.Create(context.Background(), obj); err != nil {
		t.Fatalf("%s: creating %T %s: %v", cl.name, obj, obj.GetName(), err)
	}
}

func (cl *conflictCluster) record(t *testing.T, ns, name string) *v1alpha1.DNSRecord {
	t.Helper()
	rec := &v1alpha1.DNSRecord{}
	if err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, rec); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil
		}
		t.Fatal(err)
	}
	return rec
}

func (cl *conflictCluster) policy(t *testing.T, ns, name string) *dnsv1.DNSPolicy {
	t.Helper()
	p := &dnsv1.DNSPolicy{}
	if err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func (cl *conflictCluster) hasEvent(t *testing.T, ns, object, typ, reason string) bool {
	t.Helper()
	list := &corev1.EventList{}
	if err := cl.c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(list.Items, func(e corev1.Event) bool {
		return e.InvolvedObject.Name == object && e.Type == typ && e.Reason == reason
	})
}

// passes reads the process's dnspolicy_dnsrecord_reconciles_total of one record.
func (cl *conflictCluster) passes(t *testing.T, ns, name string) float64 {
	t.Helper()
	samples, err := cl.scrape()
	if err != nil {
		t.Fatalf("%s: %v", cl.name, err)
	}
	return samples[fmt.Sprintf(`dnspolicy_dnsrecord_reconciles_total{name=%q,namespace=%q}`, name, ns)]
}

var scrapeClient = &http.Client{Timeout: 5 * time.Second}

// scrape reads the process's metrics endpoint (Prometheus text) into samples by series.
func (cl *conflictCluster) scrape() (map[string]float64, error) {
	resp, err := scrapeClient.Get("http://" + cl.metrics + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics answered %s", resp.Status)
	}
	samples := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		samples[line[:i]] = v
	}
	return samples, sc.Err()
}
