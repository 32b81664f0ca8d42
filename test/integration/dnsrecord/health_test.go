//go:build integration

package dnsrecord_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/health"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

// These tests run the record controller alone and play the prober themselves, writing each probe's
// status as the probe controller does: the probe objects are the contract between the two
// (test/integration/probes and test/e2e/health_test.go run the real prober).

func healthCheck() *v1alpha1.HealthCheckSpec {
	return &v1alpha1.HealthCheckSpec{Port: 8443, Path: "/healthz", Protocol: v1alpha1.ProtocolHTTPS,
		Interval: &metav1.Duration{Duration: time.Second}, FailureThreshold: 2}
}

func (cl *cluster) probe(t testing.TB, name string) *v1alpha1.DNSHealthCheckProbe {
	t.Helper()
	p := &v1alpha1.DNSHealthCheckProbe{}
	if err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: cl.ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// report writes a probe's result as the prober does.
func (cl *cluster) report(t testing.TB, name string, healthy bool) {
	t.Helper()
	p := cl.probe(t, name)
	p.Status.Healthy = ptr.To(healthy)
	p.Status.ObservedGeneration = p.Generation
	p.Status.Reason = "Status code: 200"
	if !healthy {
		p.Status.Reason, p.Status.ConsecutiveFailures = "Status code: 500", 3
	}
	if err := cl.c.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

func condition(r *v1alpha1.DNSRecord, typ string) string {
	c := meta.FindStatusCondition(r.Status.Conditions, typ)
	if c == nil {
		return "none"
	}
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
}

func (cl *cluster) probeNames(t testing.TB) []string {
	t.Helper()
	var list v1alpha1.DNSHealthCheckProbeList
	if err := cl.c.List(context.Background(), &list, client.InNamespace(cl.ns)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	return names
}

// Probes follow the record's addresses with Kuadrant's names, labels and owner; unhealthy addresses
// leave the zone, while the last one of an owner stays when no other owner passes (fail-open); the
// Healthy condition goes through Kuadrant's reasons; probes go with their record.
func TestProbesFollowTheRecord(t *testing.T) {
	store := inmemory.NewStore()
	cls := startClusters(t, 1, store, fastOptions(), nil)
	cl := cls[0]
	const z, host = "probes.example.com", "app.probes.example.com"
	store.EnsureZone(z)
	cl.secret(t, z)
	rec := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: cl.ns},
		Spec: v1alpha1.DNSRecordSpec{RootHost: host, ProviderRef: &v1alpha1.ProviderRef{Name: "provider"}, HealthCheck: healthCheck(),
			Endpoints: []*v1alpha1.Endpoint{a(host, 60, "127.0.0.1", "127.0.0.2")}},
	}
	if err := cl.c.Create(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() string {
		if got := cl.probeNames(t); fmt.Sprint(got) != "[web-127.0.0.1 web-127.0.0.2]" {
			return fmt.Sprintf("probes %v", got)
		}
		r := cl.get(t, "web")
		if condition(r, v1alpha1.ConditionTypeHealthy) != "False HealthChecksFailed: Probes are creating" ||
			condition(r, v1alpha1.ConditionTypeReady) != "False HealthChecksFailed: Not publishing unhealthy records" {
			return fmt.Sprintf("healthy %s; ready %s", condition(r, v1alpha1.ConditionTypeHealthy), condition(r, v1alpha1.ConditionTypeReady))
		}
		return ""
	})
	if got := records(t, store, z); len(got) != 0 {
		t.Errorf("published before any probe passed: %v", got)
	}
	r := cl.get(t, "web")
	p := cl.probe(t, "web-127.0.0.1")
	if p.Labels[v1alpha1.ProbeOwnerLabel] != "web" || !metav1.IsControlledBy(p, r) {
		t.Errorf("probe labels %v, owners %v: want %s=web and the record as controller", p.Labels, p.OwnerReferences, v1alpha1.ProbeOwnerLabel)
	}
	if s := p.Spec; s.Address != "127.0.0.1" || s.Hostname != host || s.Port != 8443 || s.Path != "/healthz" || s.Protocol != v1alpha1.ProtocolHTTPS ||
		s.Interval.Duration != time.Second || s.FailureThreshold != 2 || s.AllowInsecureCertificate {
		t.Errorf("probe spec %+v", s)
	}

	cl.report(t, "web-127.0.0.1", true)
	cl.report(t, "web-127.0.0.2", true)
	eventually(t, 20*time.Second, func() string {
		r := cl.get(t, "web")
		if h := condition(r, v1alpha1.ConditionTypeHealthy); h != "True AllChecksPassed: All healthchecks succeeded" || ready(r).Status != metav1.ConditionTrue {
			return "healthy " + h + "; ready " + condition(r, v1alpha1.ConditionTypeReady)
		}
		return same(records(t, store, z), []string{host + " A 60 127.0.0.1,127.0.0.2"})
	})
	statement := health.RecordName(r.Status.OwnerID, host)
	if !slices.ContainsFunc(zone(t, store, z), func(l string) bool {
		return strings.HasPrefix(l, statement+" TXT") && strings.Contains(l, "state=healthy")
	}) {
		t.Errorf("no healthy statement %s in the zone: %v", statement, zone(t, store, z))
	}

	cl.report(t, "web-127.0.0.2", false)
	eventually(t, 20*time.Second, func() string {
		r := cl.get(t, "web")
		if h := condition(r, v1alpha1.ConditionTypeHealthy); h != "False SomeChecksPassed: Not healthy addresses: [127.0.0.2]" {
			return "healthy " + h
		}
		return same(records(t, store, z), []string{host + " A 60 127.0.0.1"})
	})

	// Its only owner, with nothing healthy: what it published stays.
	cl.report(t, "web-127.0.0.1", false)
	eventually(t, 20*time.Second, func() string {
		r := cl.get(t, "web")
		if h := condition(r, v1alpha1.ConditionTypeHealthy); h != "False HealthChecksFailed: Not healthy addresses: [127.0.0.1 127.0.0.2]" {
			return "healthy " + h
		}
		return same(records(t, store, z), []string{host + " A 60 127.0.0.1,127.0.0.2"})
	})

	// A new address gets a probe; a removed one loses its probe.
	r = cl.get(t, "web")
	r.Spec.Endpoints = []*v1alpha1.Endpoint{a(host, 60, "127.0.0.1", "127.0.0.3")}
	if err := cl.c.Update(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() string {
		if got := cl.probeNames(t); fmt.Sprint(got) != "[web-127.0.0.1 web-127.0.0.3]" {
			return fmt.Sprintf("probes %v", got)
		}
		return ""
	})

	// Without a healthCheck the probes, the statement and the Healthy condition go.
	r = cl.get(t, "web")
	r.Spec.HealthCheck = nil
	if err := cl.c.Update(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() string {
		r := cl.get(t, "web")
		if got := cl.probeNames(t); len(got) != 0 || condition(r, v1alpha1.ConditionTypeHealthy) != "none" {
			return fmt.Sprintf("probes %v, healthy %s", got, condition(r, v1alpha1.ConditionTypeHealthy))
		}
		if slices.ContainsFunc(zone(t, store, z), func(l string) bool { return strings.HasPrefix(l, statement) }) {
			return "statement still in the zone"
		}
		return same(records(t, store, z), []string{host + " A 60 127.0.0.1,127.0.0.3"})
	})

	// Probes go with their record.
	r = cl.get(t, "web")
	r.Spec.HealthCheck = healthCheck()
	if err := cl.c.Update(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() string {
		if got := cl.probeNames(t); len(got) != 2 {
			return fmt.Sprintf("probes %v", got)
		}
		return ""
	})
	cl.delete(t, "web")
	eventually(t, 20*time.Second, func() string {
		if got := cl.probeNames(t); len(got) != 0 {
			return fmt.Sprintf("probes left after their record: %v", got)
		}
		return same(zone(t, store, z), nil)
	})
}

// Two owners of one host: an owner none of whose addresses passes withdraws its only one while the
// other owner states, freshly, that it passes; when neither passes both publish (fail-open across
// owners); nobody removes the other's address.
func TestOwnWithdrawal(t *testing.T) {
	store := inmemory.NewStore()
	cls := startClusters(t, 2, store, fastOptions(), nil)
	const z, host = "withdraw.example.com", "app.withdraw.example.com"
	store.EnsureZone(z)
	for i, cl := range cls {
		cl.secret(t, z)
		rec := &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: cl.ns},
			Spec: v1alpha1.DNSRecordSpec{RootHost: host, ProviderRef: &v1alpha1.ProviderRef{Name: "provider"}, HealthCheck: healthCheck(),
				Endpoints: []*v1alpha1.Endpoint{a(host, 60, fmt.Sprintf("127.0.0.%d", i+1))}},
		}
		if err := cl.c.Create(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
	}
	probe := func(i int) string { return fmt.Sprintf("web-127.0.0.%d", i+1) }
	for i, cl := range cls {
		eventually(t, 20*time.Second, func() string {
			if got := cl.probeNames(t); len(got) != 1 {
				return fmt.Sprintf("probes %v", got)
			}
			return ""
		})
		cl.report(t, probe(i), true)
	}
	both := []string{host + " A 60 127.0.0.1,127.0.0.2"}
	eventually(t, 30*time.Second, func() string { return same(records(t, store, z), both) })

	// Cluster 0's only address fails while cluster 1's passes: cluster 0 withdraws it. Cluster 1 renews
	// its statement once it reads cluster 0's, and cluster 0 trusts only a statement it saw renewed.
	start := time.Now()
	cls[0].report(t, probe(0), false)
	eventually(t, 90*time.Second, func() string {
		r := cls[0].get(t, "web")
		if h := condition(r, v1alpha1.ConditionTypeHealthy); !strings.Contains(h, "every address withdrawn while owner "+cls[1].get(t, "web").Status.OwnerID) {
			return "cluster 0 healthy " + h + "; zone " + strings.Join(records(t, store, z), ", ")
		}
		if rd := condition(r, v1alpha1.ConditionTypeReady); rd != "False HealthChecksFailed: Not publishing unhealthy records" {
			return "cluster 0 ready " + rd
		}
		return same(records(t, store, z), []string{host + " A 60 127.0.0.2"})
	})
	t.Logf("cluster 0 withdrew %s after its probe failed", time.Since(start).Round(time.Second))

	// Neither passes: both publish.
	cls[1].report(t, probe(1), false)
	eventually(t, 60*time.Second, func() string { return same(records(t, store, z), both) })
	for _, cl := range cls {
		// The status is written after the zone.
		eventually(t, 10*time.Second, func() string {
			if r := cl.get(t, "web"); ready(r).Status != metav1.ConditionTrue {
				return fmt.Sprintf("%s: fail-open, yet Ready is %s", cl.name, condition(r, v1alpha1.ConditionTypeReady))
			}
			return ""
		})
	}

	// Cluster 1 passes again: cluster 0 withdraws again; then cluster 0 passes: both are back.
	cls[1].report(t, probe(1), true)
	eventually(t, 90*time.Second, func() string { return same(records(t, store, z), []string{host + " A 60 127.0.0.2"}) })
	cls[0].report(t, probe(0), true)
	eventually(t, 30*time.Second, func() string { return same(records(t, store, z), both) })
	if r := cls[0].get(t, "web"); condition(r, v1alpha1.ConditionTypeHealthy) != "True AllChecksPassed: All healthchecks succeeded" {
		t.Errorf("cluster 0 back: healthy %s", condition(r, v1alpha1.ConditionTypeHealthy))
	}
}
