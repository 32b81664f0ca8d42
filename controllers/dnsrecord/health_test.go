package dnsrecord

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
	"github.com/dnspolicy/dnspolicy-controller/pkg/health"
)

// Each health decision reads as Kuadrant's Healthy reasons and messages; a withdrawal and the
// return from it raise one event each.
func TestReportHealth(t *testing.T) {
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Recorder: rec}
	s := &scope{record: &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}}}
	for _, tc := range []struct {
		name          string
		d             health.Decision
		want          string
		notPublishing bool
		event         string
	}{
		{"no probe has reported", health.Decision{Probed: 2, NotHealthy: []string{"10.0.0.1", "10.0.0.2"}, NotPublishing: true},
			"False HealthChecksFailed: Probes are creating", true, ""},
		{"all pass", health.Decision{Probed: 2, Reported: 2, AnyHealthy: true}, "True AllChecksPassed: All healthchecks succeeded", false, ""},
		{"some pass", health.Decision{Probed: 2, Reported: 2, AnyHealthy: true, NotHealthy: []string{"10.0.0.2"}},
			"False SomeChecksPassed: Not healthy addresses: [10.0.0.2]", false, ""},
		{"none passes", health.Decision{Probed: 2, Reported: 2, NotHealthy: []string{"10.0.0.1", "10.0.0.2"}},
			"False HealthChecksFailed: Not healthy addresses: [10.0.0.1 10.0.0.2]", false, ""},
		{"withdrawn", health.Decision{Probed: 1, Reported: 1, NotHealthy: []string{"10.0.0.1"}, Withdrawn: true, HealthyPeer: "peer"},
			"False HealthChecksFailed: Not healthy addresses: [10.0.0.1]; every address withdrawn while owner peer publishes healthy addresses", true, "Warning Withdrawn"},
		{"still withdrawn", health.Decision{Probed: 1, Reported: 1, NotHealthy: []string{"10.0.0.1"}, Withdrawn: true, HealthyPeer: "peer"},
			"False HealthChecksFailed: Not healthy addresses: [10.0.0.1]; every address withdrawn while owner peer publishes healthy addresses", true, ""},
		{"restored", health.Decision{Probed: 1, Reported: 1, AnyHealthy: true}, "True AllChecksPassed: All healthchecks succeeded", false, "Normal Restored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			notPublishing := r.reportHealth(s, &tc.d)
			c := conditions.Get(s.record.Status.Conditions, v1alpha1.ConditionTypeHealthy)
			if got := string(c.Status) + " " + c.Reason + ": " + c.Message; got != tc.want || notPublishing != tc.notPublishing {
				t.Errorf("Healthy %q, not publishing %v; want %q, %v", got, notPublishing, tc.want, tc.notPublishing)
			}
			select {
			case e := <-rec.Events:
				if tc.event == "" || !strings.HasPrefix(e, tc.event) {
					t.Errorf("event %q, want %q", e, tc.event)
				}
			default:
				if tc.event != "" {
					t.Errorf("no event, want %q", tc.event)
				}
			}
		})
	}
}
