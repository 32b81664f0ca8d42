//go:build integration

package dnspolicy_test

import (
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnspolicy"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

// watchResolution reads the zone as fast as it can until the returned function is called, which
// returns every distinct way host failed to resolve once it first did, and how many zone states it
// saw one after the other (so a test knows the watch saw the changes it cares about).
func watchResolution(t testing.TB, store *inmemory.Store, zone, host string) func() (holes []string, states int) {
	stop := make(chan struct{})
	type result struct {
		holes  []string
		states int
	}
	done := make(chan result, 1)
	// The first state is read before watchResolution returns: on loaded cores the goroutine could
	// otherwise first run after the change it is meant to watch, and see only the end.
	started := make(chan struct{})
	go func() {
		var r result
		defer func() {
			if r.states == 0 {
				close(started)
			}
		}()
		seen, resolvedOnce, last := map[string]bool{}, false, ""
		for {
			eps, err := store.Snapshot(inmemory.ZoneID(zone))
			if err != nil {
				r.holes = append(r.holes, err.Error())
				done <- r
				return
			}
			state := strings.Join(lines(eps), "\n")
			if r.states == 0 || state != last {
				last = state
				r.states++
				if r.states == 1 {
					close(started)
				}
				why := resolves(eps, zone, host)
				if why == "" {
					resolvedOnce = true
				} else if resolvedOnce && !seen[why] {
					seen[why] = true
					r.holes = append(r.holes, why+"; zone:\n  "+strings.ReplaceAll(state, "\n", "\n  "))
				}
			}
			// Stop is checked after a read, so the state the caller saw before stopping (the end of
			// the change) is always read: a goroutine starved on loaded cores through a fast change
			// would otherwise stop having seen only the start.
			select {
			case <-stop:
				done <- r
				return
			default:
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	<-started
	var once sync.Once
	var r result
	finish := func() ([]string, int) {
		once.Do(func() {
			close(stop)
			r = <-done
		})
		return r.holes, r.states
	}
	t.Cleanup(func() { finish() })
	return finish
}

// Switching a policy between simple and loadbalanced updates the one record in place, and the
// record engine changes the record type at the hostname in one batch: the zone, read continuously,
// never holds the hostname without an answer (Kuadrant deletes and recreates, dns-operator #287).
func TestSwitchStrategyKeepsResolving(t *testing.T) {
	store := inmemory.NewStore()
	cl := startCluster(t, "c0", envs[0], store)
	const zone, host = "switch.example.com", "app.switch.example.com"
	store.EnsureZone(zone)
	cl.secret(t, zone)
	cl.gateway(t, "gw", []string{"10.3.0.1", "10.3.0.2"}, listener{"app", host})
	cl.create(t, cl.newPolicy("p", "gw", ""))

	gw := cl.getGateway(t, "gw")
	clusterID := kubeSystemUID(t, cl.env)
	expect := func(lb *dnsv1.LoadBalancingSpec) []string {
		eps, err := builder.Build(builder.Input{
			Hostname: host, Addresses: gw.Status.Addresses, GatewayName: "gw", GatewayNamespace: cl.ns,
			ClusterID: clusterID, LoadBalancing: lb,
		})
		if err != nil {
			t.Fatal(err)
		}
		return lines(eps)
	}
	simple := expect(nil)
	if want := []string{host + " A 60 10.3.0.1,10.3.0.2"}; !reflect.DeepEqual(simple, want) {
		t.Fatalf("builder's simple shape %v, want %v", simple, want)
	}
	lbSpec := &dnsv1.LoadBalancingSpec{Geo: "GEO-EU", Weight: 150, DefaultGeo: true}
	loadBalanced := expect(lbSpec)

	eventually(t, 20*time.Second, func() string { return same(records(t, store, zone), simple) })
	uid := cl.record(t, "gw-app").UID
	watch := watchResolution(t, store, zone, host)

	steps := []struct {
		name string
		lb   *dnsv1.LoadBalancingSpec
		want []string
	}{
		{"simple to loadbalanced", lbSpec, loadBalanced},
		{"loadbalanced to simple", nil, simple},
		{"simple to loadbalanced again", lbSpec, loadBalanced},
	}
	for _, step := range steps {
		batches := store.ZoneCalls(inmemory.ZoneID(zone)).Apply
		cl.editPolicy(t, "p", func(p *dnsv1.DNSPolicy) { p.Spec.LoadBalancing = step.lb })
		eventually(t, 20*time.Second, func() string {
			if msg := same(records(t, store, zone), step.want); msg != "" {
				return step.name + ": " + msg
			}
			return ""
		})
		p := cl.policyIs(t, "p", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced")
		// One batch: the old type's deletion and the new type's creation at the hostname together.
		if n := store.ZoneCalls(inmemory.ZoneID(zone)).Apply - batches; n != 1 {
			t.Errorf("%s took %d batches, want 1", step.name, n)
		}
		if r := cl.record(t, "gw-app"); r == nil || r.UID != uid {
			t.Fatalf("%s: the record was replaced, want it updated in place", step.name)
		}
		if p.Status.TotalRecords != 1 {
			t.Errorf("%s: totalRecords %d", step.name, p.Status.TotalRecords)
		}
	}
	if holes, states := watch(); len(holes) > 0 || states < len(steps)+1 {
		t.Errorf("%s over %d switches: %d zone states seen, holes:\n%s", host, len(steps), states, strings.Join(holes, "\n"))
	}
	// Literal names of the loadbalanced tree (DESIGN section 3), independent of the builder.
	for _, want := range []string{
		host + " CNAME 300 klb." + host,
		"klb." + host + " CNAME 300 geo-eu.klb." + host + " set=GEO-EU geo=GEO-EU",
		"klb." + host + " CNAME 300 geo-eu.klb." + host + " set=default geo=*",
	} {
		if !slices.Contains(loadBalanced, want) {
			t.Errorf("loadbalanced tree lacks %q:\n%s", want, strings.Join(loadBalanced, "\n"))
		}
	}
	if n := countPrefix(loadBalanced, "geo-eu.klb."+host+" CNAME 60 "); n != 1 {
		t.Errorf("want one weighted target under geo-eu.klb.%s, got %d", host, n)
	}
}

func countPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}
