//go:build integration

package dnsrecord_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/endpoint"
)

// Three owners share a zone held by the kuadrant.io/endpoint backend: a DNSRecord labelled as zone
// record, visible to any tool that reads the API.
func TestThreeOwnersThroughEndpointBackend(t *testing.T) {
	factory := providers.NewFactory()
	factory.Register(v1alpha1.SecretTypeEndpoint, endpoint.New)
	cl := startClusters(t, 1, nil, fastOptions(), factory)[0]
	const z, host = "ep.example.com", "app.ep.example.com"
	if err := cl.c.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "endpoint", Namespace: cl.ns},
		Type:       v1alpha1.SecretTypeEndpoint,
	}); err != nil {
		t.Fatal(err)
	}
	zoneRecord := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: "zone", Namespace: cl.ns, Labels: map[string]string{"kuadrant.io/zone-record": "true"}},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: z},
	}
	if err := cl.c.Create(t.Context(), zoneRecord); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		r := &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("owner-%d", i), Namespace: cl.ns},
			Spec: v1alpha1.DNSRecordSpec{
				RootHost: host, ProviderRef: &v1alpha1.ProviderRef{Name: "endpoint"},
				Endpoints: []*v1alpha1.Endpoint{a(host, 60, fmt.Sprintf("10.7.0.%d", i))},
			},
		}
		if err := cl.c.Create(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	// zoneA lists the A records the zone record holds.
	zoneA := func() []string {
		var out []string
		for _, ep := range cl.get(t, "zone").Spec.Endpoints {
			if ep.RecordType == "A" {
				out = append(out, fmt.Sprintf("%s %s", ep.DNSName, strings.Join(ep.Targets, ",")))
			}
		}
		return out
	}
	eventually(t, 20*time.Second, func() string {
		if got := zoneA(); len(got) != 1 || got[0] != host+" 10.7.0.1,10.7.0.2,10.7.0.3" {
			return fmt.Sprintf("zone record holds %v", got)
		}
		for i := 1; i <= 3; i++ {
			r := cl.get(t, fmt.Sprintf("owner-%d", i))
			if c := ready(r); c == nil || c.Status != metav1.ConditionTrue || r.Labels[v1alpha1.ProviderNameLabel] != endpoint.ProviderName {
				return fmt.Sprintf("owner-%d: Ready %v, labels %v", i, c, r.Labels)
			}
		}
		return ""
	})
	if err := cl.c.Delete(t.Context(), &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "owner-2", Namespace: cl.ns}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() string {
		if got := zoneA(); len(got) != 1 || got[0] != host+" 10.7.0.1,10.7.0.3" {
			return fmt.Sprintf("zone record holds %v after owner-2 left", got)
		}
		txts := 0
		for _, ep := range cl.get(t, "zone").Spec.Endpoints {
			if ep.RecordType == "TXT" {
				txts++
			}
		}
		if txts != 2 {
			return fmt.Sprintf("zone record holds %d ownership TXTs, want 2", txts)
		}
		return ""
	})
}
