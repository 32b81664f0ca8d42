package dnsserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/internal/pass"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/grant"
)

// namespaceLabels are a namespace's labels, read from the manager's cache, when a grant selects
// namespaces by label; otherwise nil, and no namespace is read.
func (r *Reconciler) namespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	if !r.Grants.UsesSelector() {
		return nil, nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the labels of namespace %s: %w", name, err)
	}
	return ns.Labels, nil
}

// entitle decides what of each record the grants let the zone serve. A zone is served only when a
// namespace holding its records has a grant for its apex; then each endpoint only when a grant of
// its record's namespace covers its name.
func (r *Reconciler) entitle(ctx context.Context, s *zoneScope) (ctrl.Result, bool, error) {
	nsLabels := map[string]map[string]string{}
	apexGranted := false
	for i := range s.records {
		ns := s.records[i].Namespace
		if _, seen := nsLabels[ns]; seen {
			continue
		}
		labels, err := r.namespaceLabels(ctx, ns)
		if err != nil {
			return pass.Done(ctrl.Result{}, err)
		}
		nsLabels[ns] = labels
		apexGranted = apexGranted || r.Grants.Covers(ns, labels, s.zone)
	}
	for i := range s.records {
		rec := &s.records[i]
		// Every record of the zone counts for the serial, granted or not: were a namespace's
		// grant withdrawn, the serial must still not go back, or secondaries would keep the
		// content they have.
		if t := lastChange(rec); t.After(s.changed) {
			s.changed = t
		}
		if rec.DeletionTimestamp != nil {
			// Held by a finalizer on its way out: no longer part of the zone.
			continue
		}
		r.entitleRecord(s, rec, nsLabels[rec.Namespace], apexGranted)
	}
	return pass.Continue()
}

// entitleRecord gives one record its verdict and, for what of it is granted, a source.
func (r *Reconciler) entitleRecord(s *zoneScope, rec *v1alpha1.DNSRecord, nsLabels map[string]string, apexGranted bool) {
	key := client.ObjectKeyFromObject(rec)
	if !apexGranted {
		s.verdicts[key] = notServed(ReasonNotGranted,
			fmt.Sprintf("zone %s is served only when a namespace holding its records has a grant for its apex, and none has: %s; nothing of this record is served",
				s.zone, grant.Message(rec.Namespace, []string{s.zone})))
		return
	}
	var granted []*v1alpha1.Endpoint
	var uncovered, refusals []string
	for _, ep := range rec.Spec.Endpoints {
		if ep == nil {
			continue
		}
		if !r.Grants.Covers(rec.Namespace, nsLabels, ep.DNSName) {
			uncovered = append(uncovered, ep.DNSName)
			refusals = append(refusals, fmt.Sprintf("%s %s: namespace %s has no grant for the name", ep.DNSName, ep.RecordType, rec.Namespace))
			continue
		}
		granted = append(granted, ep)
	}
	if len(granted) == 0 && len(uncovered) > 0 {
		s.verdicts[key] = notServed(ReasonNotGranted,
			grant.Message(rec.Namespace, r.Grants.Uncovered(rec.Namespace, nsLabels, uncovered))+"; nothing of this record is served")
		return
	}
	if len(refusals) > 0 {
		s.ungranted[key] = refusals
	}
	s.sources = append(s.sources, dnsserver.Source{Name: key.String(), Endpoints: granted})
	s.local = append(s.local, granted...)
	s.verdicts[key] = metav1.Condition{Type: ConditionServed, Status: metav1.ConditionTrue, Reason: ReasonServed,
		Message: fmt.Sprintf("served in zone %s by the embedded DNS server", s.zone)}
}
