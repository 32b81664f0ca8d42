package dnsrecord

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/publish"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
)

var (
	reconcileDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "dnspolicy_dnsrecord_reconcile_duration_seconds",
		Help:    "Time to reconcile one DNSRecord, provider calls included.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
	})
	conflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dnspolicy_dnsrecord_conflicts_total",
		Help: "Reconciles that found this owner's wish not published because another owner's won, by field.",
	}, []string{"field"})
	ownersWithdrawn = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dnspolicy_lease_withdrawals_total",
		Help: "Owners of other clusters withdrawn from shared names because their lease expired, by zone.",
	}, []string{"zone"})
	recordsByReason = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dnspolicy_dnsrecords",
		Help: "DNSRecords by the reason of their Ready condition.",
	}, []string{"reason"})
)

// Kuadrant's dns-operator metrics (its internal/metrics/metrics.go), with its names, help, labels
// and values, so that dashboards and alerts written for it work unchanged. Kuadrant reports every
// DNSRecord in its cache at each scrape; here the record controller sets them at the end of each
// pass, from the status as the API server then holds it, and drops them with the record. Its
// write counter and readiness, which every record has, are in the table of series.go.
var (
	kuadrantAuthoritativeSpec = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dns_provider_authoritative_record_spec_info",
		Help: "Provides intformation aboutauthoritative DNS records, indentiffied by label values.", // sic, Kuadrant's text
	}, []string{"root_host", "sha", "dns_record_name", "dns_record_namespace"})
)

// Failover groups (groups.go): the group of each grouped record, and whether it is active in the
// record's zone. Labelled as Kuadrant's record series.
var (
	groupInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dns_record_group_info",
		Help: "1 for each DNSRecord in a failover group (the controller's --group), labelled with the group.",
	}, []string{"dns_record_namespace", "dns_record_name", "group"})
	groupActive = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dns_record_group_active",
		Help: "1 while the group of a grouped DNSRecord is listed in its zone's kuadrant-active-groups TXT (the record publishes), 0 while it is not (it publishes nothing).",
	}, []string{"dns_record_namespace", "dns_record_name", "group"})
	inactiveGroupCleanups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dns_record_inactive_group_cleanup_total",
		Help: "Batches in which a record of an active failover group removed from its zone what owners of inactive groups had published, by zone and the cleaning record's group.",
	}, []string{"zone", "group"})
	groupFailovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dnspolicy_group_failovers_total",
		Help: "Switches of a zone's active failover groups made by this controller's automatic failover, by zone and the groups before and after (joined by \",\").",
	}, []string{"zone", "from", "to"})
)

// recordLabels select a record's group series.
func recordLabels(rec *v1alpha1.DNSRecord) prometheus.Labels {
	return prometheus.Labels{"dns_record_namespace": rec.Namespace, "dns_record_name": rec.Name}
}

// Lease ages are computed at each scrape from what the publisher's queues know (publish.Publisher.Leases),
// so an age grows between the queues' reads without anything setting it, and a series goes with its
// queue or its lease.
var (
	descLeaseAge = prometheus.NewDesc("dnspolicy_lease_age_seconds",
		"Age of an owner lease in a zone where this cluster shares names with another cluster: for this cluster's own (own=\"true\"), the time since it was last written or found current; for another cluster's, how long its value has not changed by this cluster's clock. Other clusters withdraw a holder's shared targets once its lease is older than its duration.",
		[]string{"zone", "lease", "own"}, nil)
	descLeaseDuration = prometheus.NewDesc("dnspolicy_lease_duration_seconds",
		"How long an owner lease asks its readers to wait after its value last changed before they withdraw its holder (0: never).",
		[]string{"zone", "lease", "own"}, nil)
	descRenewalFailing = prometheus.NewDesc("dnspolicy_lease_renewal_failing",
		"1 while the last renewal of this cluster's owner lease in a zone failed, else 0.",
		[]string{"zone"}, nil)
)

// leaseCollector exports the lease series of a publisher.
type leaseCollector struct{ leases func() []publish.ZoneLeases }

func (c leaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descLeaseAge
	ch <- descLeaseDuration
	ch <- descRenewalFailing
}

func (c leaseCollector) Collect(ch chan<- prometheus.Metric) {
	type series struct {
		zone, lease string
		own         bool
	}
	ages, durations := map[series]float64{}, map[series]float64{}
	failing := map[string]float64{}
	// Several queues may serve one zone name (two Secrets for one zone, or a private and a public
	// zone of one name): each series reports the largest, the lease that expires first and the
	// renewal that fails; equal labels collected twice would fail the whole scrape.
	for _, z := range c.leases() {
		f := 0.0
		if z.RenewalFailing {
			f = 1
		}
		failing[z.Zone] = max(failing[z.Zone], f)
		for _, l := range z.Leases {
			s := series{z.Zone, l.Key, l.Own}
			ages[s] = max(ages[s], l.Age.Seconds())
			durations[s] = max(durations[s], l.Duration.Seconds())
		}
	}
	for s, age := range ages {
		own := strconv.FormatBool(s.own)
		ch <- prometheus.MustNewConstMetric(descLeaseAge, prometheus.GaugeValue, age, s.zone, s.lease, own)
		ch <- prometheus.MustNewConstMetric(descLeaseDuration, prometheus.GaugeValue, durations[s], s.zone, s.lease, own)
	}
	for zone, v := range failing {
		ch <- prometheus.MustNewConstMetric(descRenewalFailing, prometheus.GaugeValue, v, zone)
	}
}

// registerLeaseMetrics exports the publisher's lease series with the manager's metrics.
func registerLeaseMetrics(p *publish.Publisher) error {
	err := metrics.Registry.Register(leaseCollector{p.Leases})
	if errors.As(err, &prometheus.AlreadyRegisteredError{}) {
		// Only a second record controller in one process (tests running several managers) gets
		// here; the first one's leases are the ones exported.
		return nil
	}
	return err
}

func init() {
	metrics.Registry.MustRegister(reconcileDuration, recordSeries, conflicts, ownersWithdrawn, recordsByReason,
		kuadrantAuthoritativeSpec, groupInfo, groupActive, inactiveGroupCleanups, groupFailovers)
	// Every field's series exists from the start, so an alert or panel on its increase sees the
	// first conflict (a series born at 1 shows no increase).
	for _, f := range []string{plan.FieldTargets, plan.FieldTTL, plan.FieldType, plan.FieldProviderSpecific, plan.FieldOwnership} {
		conflicts.WithLabelValues(f)
	}
}

// kuadrantSeries are the label values of an authoritative record's spec series, and the generation
// the spec's hash was taken of.
type kuadrantSeries struct {
	spec       []string
	generation int64
}

// observe sets the Kuadrant series of a record at the end of a pass. written says whether the pass
// wrote the status: the write counter is the API server's copy, which a quiet pass leaves as it was.
func (m *memory) observe(key types.NamespacedName, rec *v1alpha1.DNSRecord, before *v1alpha1.DNSRecordStatus, written bool) {
	counter := before.WriteCounter
	if written {
		counter = rec.Status.WriteCounter
	}
	ready := 0.0
	if c := conditions.Get(rec.Status.Conditions, v1alpha1.ConditionTypeReady); c != nil && c.Status == metav1.ConditionTrue {
		ready = 1
	}
	recordSeries.observe(key, float64(counter), []string{key.Name, key.Namespace, rec.RootHost(), strconv.FormatBool(rec.Spec.Delegate)}, ready)
	var next kuadrantSeries
	m.mu.Lock()
	old := m.entry(key).series
	m.mu.Unlock()
	if _, ok := rec.Labels[v1alpha1.AuthoritativeRecordLabel]; ok {
		// The hash marshals the whole spec, thousands of targets for some records: it is taken
		// once per generation, not on every pass.
		if old.spec != nil && old.generation == rec.Generation && rec.Generation != 0 {
			next.spec, next.generation = old.spec, old.generation
		} else if sha, err := specHash(rec.Spec); err == nil {
			next.spec, next.generation = []string{rec.RootHost(), sha, key.Name, key.Namespace}, rec.Generation
		}
		if next.spec != nil {
			kuadrantAuthoritativeSpec.WithLabelValues(next.spec...).Set(1)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	dropSeries(old, next)
	m.entry(key).series = next
}

// dropSeries deletes the series of old that next no longer has.
func dropSeries(old, next kuadrantSeries) {
	if old.spec != nil && !slices.Equal(old.spec, next.spec) {
		kuadrantAuthoritativeSpec.DeleteLabelValues(old.spec...)
	}
}

// specHash is Kuadrant's sha label of an authoritative record: hash6 of the bytes of the spec's
// JSON, sorted (its hash.GetCanonicalString), so records with equal specs share it across clusters.
func specHash(spec v1alpha1.DNSRecordSpec) (string, error) {
	b, err := json.Marshal(spec)
	if err != nil {
		return "", err
	}
	slices.Sort(b)
	return hash.Base36(string(b), 6), nil
}
