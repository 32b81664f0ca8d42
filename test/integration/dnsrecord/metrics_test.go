//go:build integration

package dnsrecord_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// Kuadrant's dns_provider_record_ready and dns_provider_write_counter follow a record the controller
// publishes, with Kuadrant's labels, and go with it.
func TestKuadrantMetrics(t *testing.T) {
	store := inmemory.NewStore()
	cl := startClusters(t, 1, store, fastOptions(), nil)[0]
	cl.secret(t, "example.com")
	cl.ownedBy(t, "web", "metrics-owner", "provider", "*.metrics.example.com", v1alpha1.NewEndpoint("a.metrics.example.com", "A", 60, "10.0.0.1"))
	cl.waitReady(t, "web")
	ready := map[string]string{"dns_record_name": "web", "dns_record_namespace": cl.ns, "dns_record_root_host": "metrics.example.com", "dns_record_is_delegating": "false"}
	writes := map[string]string{"dns_record_name": "web", "dns_record_namespace": cl.ns}
	eventually(t, 20*time.Second, func() string {
		if v, ok := testenv.Metric("dns_provider_record_ready", ready); !ok || v != 1 {
			return fmt.Sprintf("dns_provider_record_ready %v (present %v), want 1", v, ok)
		}
		// The write counter is the API server's status.writeCounter.
		want := float64(cl.get(t, "web").Status.WriteCounter)
		if v, ok := testenv.Metric("dns_provider_write_counter", writes); !ok || v != want {
			return fmt.Sprintf("dns_provider_write_counter %v (present %v), want status.writeCounter %s", v, ok, strconv.FormatFloat(want, 'f', -1, 64))
		}
		return ""
	})

	// A record that cannot be published reads 0.
	cl.ownedBy(t, "nozone", "metrics-owner2", "provider", "metrics.example.org", v1alpha1.NewEndpoint("metrics.example.org", "A", 60, "10.0.0.2"))
	eventually(t, 20*time.Second, func() string {
		labels := map[string]string{"dns_record_name": "nozone", "dns_record_namespace": cl.ns, "dns_record_root_host": "metrics.example.org", "dns_record_is_delegating": "false"}
		if v, ok := testenv.Metric("dns_provider_record_ready", labels); !ok || v != 0 {
			return fmt.Sprintf("dns_provider_record_ready of a record in no zone: %v (present %v), want 0", v, ok)
		}
		return ""
	})

	if err := cl.c.Delete(t.Context(), cl.get(t, "web")); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, func() string {
		_, r := testenv.Metric("dns_provider_record_ready", ready)
		_, w := testenv.Metric("dns_provider_write_counter", writes)
		if r || w {
			return fmt.Sprintf("series of the deleted record remain: ready %v, write counter %v", r, w)
		}
		return ""
	})
}
