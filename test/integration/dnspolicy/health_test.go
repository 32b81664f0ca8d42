//go:build integration

package dnspolicy_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnspolicy"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

// A policy's healthCheck reaches its records and their probes, which the prober runs against the
// gateway's addresses (real HTTP servers on loopback): an address whose server stops leaves the
// zone, the policy's SubResourcesHealthy and recordConditions say so, with an event, and it comes
// back when the server does.
func TestPolicyFollowsProbes(t *testing.T) {
	store := inmemory.NewStore()
	cl := startCluster(t, "c0", envs[0], store)
	const zone = "probed.example.com"
	host := "api." + zone
	store.EnsureZone(zone)
	cl.secret(t, zone)

	ips := []string{"127.0.0.21", "127.0.0.22"}
	port := freeport.PortOn(t, ips...)
	p := strconv.Itoa(port)
	servers := make([]*http.Server, len(ips))
	serve := func(i int) {
		l, err := net.Listen("tcp", net.JoinHostPort(ips[i], p))
		if err != nil {
			t.Fatal(err)
		}
		servers[i] = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// The Host header carries the port when it is not the scheme's default, as curl sends it.
			if h, _, _ := strings.Cut(r.Host, ":"); r.URL.Path != "/healthz" || h != host {
				http.NotFound(w, r)
			}
		}), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = servers[i].Serve(l) }()
	}
	for i := range ips {
		serve(i)
	}
	t.Cleanup(func() {
		for _, s := range servers {
			_ = s.Close()
		}
	})

	cl.gateway(t, "gw", ips, listener{"api", host})
	pol := cl.newPolicy("probed", "gw", "")
	pol.Spec.HealthCheck = &v1alpha1.HealthCheckSpec{Path: "/healthz", Port: port, Protocol: v1alpha1.ProtocolHTTP,
		Interval: &metav1.Duration{Duration: time.Second}, FailureThreshold: 1}
	cl.create(t, pol)

	eventually(t, time.Minute, func() string {
		return same(records(t, store, zone), []string{host + " A 60 127.0.0.21,127.0.0.22"})
	})
	cl.policyIs(t, "probed", dnspolicy.ConditionSubResourcesHealthy, "True SubResourcesHealthy: All sub-resources are healthy")
	rec := cl.record(t, "gw-api")
	if !reflect.DeepEqual(rec.Spec.HealthCheck, pol.Spec.HealthCheck) {
		t.Errorf("record healthCheck %+v, want the policy's %+v", rec.Spec.HealthCheck, pol.Spec.HealthCheck)
	}

	_ = servers[1].Close()
	eventually(t, time.Minute, func() string {
		return same(records(t, store, zone), []string{host + " A 60 127.0.0.21"})
	})
	got := cl.policyIs(t, "probed", dnspolicy.ConditionSubResourcesHealthy,
		"False Unknown: DNSPolicy has encountered some issues: not all sub-resources of policy are passing the policy defined health check. Not healthy DNSRecords are: gw-api")
	conds := got.Status.RecordConditions[host]
	if len(conds) != 1 || conds[0].Type != v1alpha1.ConditionTypeHealthy || conds[0].Reason != v1alpha1.ReasonSomeChecksPassed ||
		conds[0].Message != "Not healthy addresses: [127.0.0.22]" {
		t.Errorf("recordConditions[%s] = %+v, want Healthy SomeChecksPassed naming 127.0.0.22", host, conds)
	}
	eventually(t, 20*time.Second, func() string {
		var events corev1.EventList
		if err := cl.c.List(context.Background(), &events, client.InNamespace(cl.ns)); err != nil {
			return err.Error()
		}
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "DNSPolicy" && e.InvolvedObject.Name == "probed" && e.Type == corev1.EventTypeWarning &&
				strings.Contains(e.Message, "Not healthy DNSRecords are: gw-api") {
				return ""
			}
		}
		return fmt.Sprintf("no Warning event on the policy for SubResourcesHealthy among %d events", len(events.Items))
	})

	serve(1)
	eventually(t, time.Minute, func() string {
		return same(records(t, store, zone), []string{host + " A 60 127.0.0.21,127.0.0.22"})
	})
	cl.policyIs(t, "probed", dnspolicy.ConditionSubResourcesHealthy, "True SubResourcesHealthy: All sub-resources are healthy")
}
