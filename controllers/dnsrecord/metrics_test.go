package dnsrecord

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/publish"
)

func readyRecord(ns, name, rootHost string, ready metav1.ConditionStatus, writes int64) *v1alpha1.DNSRecord {
	return &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: rootHost, Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("a."+strings.TrimPrefix(rootHost, "*."), "A", 60, "10.0.0.1")}},
		Status: v1alpha1.DNSRecordStatus{WriteCounter: writes, Conditions: []metav1.Condition{
			{Type: v1alpha1.ConditionTypeReady, Status: ready, Reason: "ProviderSuccess"},
		}},
	}
}

// Kuadrant's dns_provider_* series, as its dashboards read them: the write counter as the API
// server holds it, readiness with the root host (without "*.") and delegation, the spec hash of
// authoritative records; all dropped with the record.
func TestKuadrantRecordMetrics(t *testing.T) {
	var r memory
	key := types.NamespacedName{Namespace: "metrics-ns", Name: "web"}
	rec := readyRecord(key.Namespace, key.Name, "*.app.example.com", metav1.ConditionTrue, 2)
	r.setReason(key, "ProviderSuccess")
	r.observe(key, rec, &v1alpha1.DNSRecordStatus{}, true)
	if got := recordSeriesValue(t, descKuadrantWriteCounter, "web", "metrics-ns"); got != 2 {
		t.Errorf("dns_provider_write_counter = %v, want 2", got)
	}
	if got := recordSeriesValue(t, descKuadrantRecordReady, "web", "metrics-ns", "app.example.com", "false"); got != 1 {
		t.Errorf("dns_provider_record_ready = %v, want 1", got)
	}

	// A quiet pass reset the counter but did not write the status: the API still says 2.
	quiet := rec.DeepCopy()
	quiet.Status.WriteCounter = 0
	r.observe(key, quiet, &rec.Status, false)
	if got := recordSeriesValue(t, descKuadrantWriteCounter, "web", "metrics-ns"); got != 2 {
		t.Errorf("after a quiet pass dns_provider_write_counter = %v, want the API's 2", got)
	}
	notReady := readyRecord(key.Namespace, key.Name, "*.app.example.com", metav1.ConditionFalse, 0)
	notReady.Spec.Delegate = true
	r.observe(key, notReady, &rec.Status, true)
	if got := recordSeriesValue(t, descKuadrantRecordReady, "web", "metrics-ns", "app.example.com", "true"); got != 0 {
		t.Errorf("dns_provider_record_ready of a record not ready = %v, want 0", got)
	}
	if n := testutil.CollectAndCount(recordSeries, "dns_provider_record_ready"); n != 1 {
		t.Errorf("%d dns_provider_record_ready series, want the old labels dropped", n)
	}

	// Authoritative records: one spec_info series, whose sha follows the spec and is equal for equal
	// specs.
	authKey := types.NamespacedName{Namespace: "metrics-ns", Name: "authoritative-record-x"}
	auth := readyRecord(authKey.Namespace, authKey.Name, "example.com", metav1.ConditionTrue, 0)
	auth.Labels = map[string]string{v1alpha1.AuthoritativeRecordLabel: "true"}
	twin := auth.DeepCopy()
	twin.Namespace = "metrics-other"
	r.observe(authKey, auth, &auth.Status, false)
	r.observe(types.NamespacedName{Namespace: "metrics-other", Name: authKey.Name}, twin, &twin.Status, false)
	sha, err := specHash(auth.Spec)
	if err != nil || len(sha) != 6 {
		t.Fatalf("sha %q, %v", sha, err)
	}
	if got := testutil.ToFloat64(kuadrantAuthoritativeSpec.WithLabelValues("example.com", sha, authKey.Name, "metrics-ns")); got != 1 {
		t.Errorf("dns_provider_authoritative_record_spec_info = %v, want 1", got)
	}
	if got := testutil.ToFloat64(kuadrantAuthoritativeSpec.WithLabelValues("example.com", sha, authKey.Name, "metrics-other")); got != 1 {
		t.Errorf("an equal spec elsewhere has another sha")
	}
	changed := auth.DeepCopy()
	changed.Spec.Endpoints[0].Targets = []string{"10.0.0.2"}
	r.observe(authKey, changed, &auth.Status, false)
	newSHA, _ := specHash(changed.Spec)
	if newSHA == sha || testutil.ToFloat64(kuadrantAuthoritativeSpec.WithLabelValues("example.com", newSHA, authKey.Name, "metrics-ns")) != 1 {
		t.Errorf("the sha did not follow the spec: %s, then %s", sha, newSHA)
	}
	if n := testutil.CollectAndCount(kuadrantAuthoritativeSpec, "dns_provider_authoritative_record_spec_info"); n != 2 {
		t.Errorf("%d spec_info series, want 2 (the old sha dropped)", n)
	}

	// Gone records leave no series.
	for _, k := range []types.NamespacedName{key, authKey, {Namespace: "metrics-other", Name: authKey.Name}} {
		r.forget(k)
	}
	if n := testutil.CollectAndCount(recordSeries, "dns_provider_write_counter", "dns_provider_record_ready") + testutil.CollectAndCount(kuadrantAuthoritativeSpec); n != 0 {
		t.Errorf("%d series left after the records went", n)
	}
}

// recordSeriesValue is the value of the per-record series of desc (series.go) with the label values
// given in desc's order, as a scrape reads it; the test fails if there is no such series.
func recordSeriesValue(t *testing.T, desc *prometheus.Desc, values ...string) float64 {
	t.Helper()
	value, found := recordSeriesLookup(t, desc, values...)
	if !found {
		t.Fatalf("no series %s %v", desc, values)
	}
	return value
}

// recordSeriesLookup is recordSeriesValue, and whether the series is there.
func recordSeriesLookup(t *testing.T, desc *prometheus.Desc, values ...string) (float64, bool) {
	t.Helper()
	var want dto.Metric
	if err := prometheus.MustNewConstMetric(desc, prometheus.UntypedValue, 0, values...).Write(&want); err != nil {
		t.Fatal(err)
	}
	ch := make(chan prometheus.Metric)
	go func() {
		recordSeries.Collect(ch)
		close(ch)
	}()
	found, value := false, 0.0
	for m := range ch {
		var got dto.Metric
		if err := m.Write(&got); err != nil {
			t.Fatal(err)
		}
		if m.Desc() == desc && slices.EqualFunc(got.GetLabel(), want.GetLabel(), func(a, b *dto.LabelPair) bool {
			return a.GetName() == b.GetName() && a.GetValue() == b.GetValue()
		}) {
			found, value = true, got.GetGauge().GetValue()+got.GetCounter().GetValue()
		}
	}
	return value, found
}

// The lease series as a scrape reads them: one per zone and lease, the largest where two queues
// serve one zone name, failing where either queue's renewal fails, and none without leases.
func TestLeaseMetrics(t *testing.T) {
	for _, tc := range []struct {
		name  string
		zones []publish.ZoneLeases
		want  string
	}{
		{"no zone needs a lease", nil, ""},
		{"two zones, one served by two queues", []publish.ZoneLeases{
			{Zone: "example.com", Leases: []publish.LeaseAge{
				{Key: "ownkey01", Own: true, Age: 12 * time.Second, Duration: 75 * time.Second},
				{Key: "otherk01", Age: 40 * time.Second, Duration: 90 * time.Second},
			}},
			{Zone: "example.com", RenewalFailing: true, Leases: []publish.LeaseAge{
				{Key: "ownkey01", Own: true, Age: 50 * time.Second, Duration: 75 * time.Second},
				{Key: "otherk01", Age: 10 * time.Second, Duration: 90 * time.Second},
			}},
			{Zone: "example.org", Leases: []publish.LeaseAge{
				{Key: "ownkey01", Own: true, Age: 1500 * time.Millisecond, Duration: 0},
			}},
		}, `
# HELP dnspolicy_lease_renewal_failing 1 while the last renewal of this cluster's owner lease in a zone failed, else 0.
# TYPE dnspolicy_lease_renewal_failing gauge
dnspolicy_lease_renewal_failing{zone="example.com"} 1
dnspolicy_lease_renewal_failing{zone="example.org"} 0
# HELP dnspolicy_lease_duration_seconds How long an owner lease asks its readers to wait after its value last changed before they withdraw its holder (0: never).
# TYPE dnspolicy_lease_duration_seconds gauge
dnspolicy_lease_duration_seconds{lease="otherk01",own="false",zone="example.com"} 90
dnspolicy_lease_duration_seconds{lease="ownkey01",own="true",zone="example.com"} 75
dnspolicy_lease_duration_seconds{lease="ownkey01",own="true",zone="example.org"} 0
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := leaseCollector{func() []publish.ZoneLeases { return tc.zones }}
			if err := testutil.CollectAndCompare(c, strings.NewReader(tc.want), "dnspolicy_lease_renewal_failing", "dnspolicy_lease_duration_seconds"); err != nil {
				t.Error(err)
			}
			ages := map[string]float64{}
			if tc.zones != nil {
				ages = map[string]float64{"example.com/otherk01/false": 40, "example.com/ownkey01/true": 50, "example.org/ownkey01/true": 1.5}
			}
			if got := leaseAges(t, c); !maps.Equal(got, ages) {
				t.Errorf("dnspolicy_lease_age_seconds %v, want %v", got, ages)
			}
		})
	}
}

// leaseAges collects c's dnspolicy_lease_age_seconds by zone/lease/own.
func leaseAges(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "dnspolicy_lease_age_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[labels["zone"]+"/"+labels["lease"]+"/"+labels["own"]] = m.GetGauge().GetValue()
		}
	}
	return out
}

// A record's pass and write series are born at its first pass and first write, count each, and go
// with the record.
func TestRecordPassAndWriteSeries(t *testing.T) {
	key := types.NamespacedName{Namespace: "series-ns", Name: "counted"}
	recordSeries.pass(key)
	if got := recordSeriesValue(t, descRecordPasses, key.Namespace, key.Name); got != 1 {
		t.Errorf("dnspolicy_dnsrecord_reconciles_total = %v, want 1", got)
	}
	if _, found := recordSeriesLookup(t, descRecordWrites, key.Namespace, key.Name); found {
		t.Error("a write series before any write")
	}
	recordSeries.pass(key)
	recordSeries.wrote(key)
	if p, w := recordSeriesValue(t, descRecordPasses, key.Namespace, key.Name), recordSeriesValue(t, descRecordWrites, key.Namespace, key.Name); p != 2 || w != 1 {
		t.Errorf("passes %v and writes %v, want 2 and 1", p, w)
	}
	var m memory
	m.forget(key)
	for _, d := range []*prometheus.Desc{descRecordPasses, descRecordWrites} {
		if _, found := recordSeriesLookup(t, d, key.Namespace, key.Name); found {
			t.Errorf("series %s left after the record went", d)
		}
	}
}
