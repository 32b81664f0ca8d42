package dnsserver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/internal/pass"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
)

// zoneScope is what one pass over a zone knows, filled in by the phases in turn.
type zoneScope struct {
	zone string
	// records are the zone's authoritative records, in a fixed order (listRecords).
	records []v1alpha1.DNSRecord
	// changed is when any record of the zone last changed: the serial's source (entitle).
	changed time.Time
	// sources are the granted records as the server's sources, and local their endpoints: what
	// this cluster serves of the zone (entitle, then keepOwnRecords).
	sources []dnsserver.Source
	local   []*v1alpha1.Endpoint
	// ungranted are, by record, its endpoints left out for want of a grant, as refusals; the
	// server's refusals join them (serve).
	ungranted map[client.ObjectKey][]string
	// ownRefused are, by source name, the lease and health records left out (keepOwnRecords).
	ownRefused map[string][]string
	// data is what the server is given; endpoints counts what it serves, merged or not.
	data      dnsserver.ZoneData
	endpoints int
	// verdicts are each record's Served condition, and peers the zone's Peers condition (when it
	// has peers), written by report at the end of the pass.
	verdicts map[client.ObjectKey]metav1.Condition
	peers    *metav1.Condition
	// signed is the zone's Signed condition, when it is signed (sign).
	signed *metav1.Condition
	result ctrl.Result
}

// Reconcile serves a zone from the granted endpoints of its authoritative records, or stops
// serving it when none is left, and tells each record of the zone what of it is served. It runs the
// phases every controller runs (package pass); one that ends the pass early leaves the conditions
// unwritten.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &zoneScope{zone: req.Name, verdicts: map[client.ObjectKey]metav1.Condition{}, ungranted: map[client.ObjectKey][]string{}}
	return pass.Run(ctx, s, r.listRecords, r.entitle, r.keepOwnRecords, r.export, r.sign, r.serve, r.writeVerdicts)
}

// zoneConditions are the zone's conditions written beside each record's Served: Peers and
// Signed, those it has.
func (s *zoneScope) zoneConditions() []metav1.Condition {
	var out []metav1.Condition
	for _, c := range []*metav1.Condition{s.peers, s.signed} {
		if c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// writeVerdicts writes each record's Served condition (and the zone's Peers and Signed), ending the pass with
// the result the phases worked out.
func (r *Reconciler) writeVerdicts(ctx context.Context, s *zoneScope) (ctrl.Result, bool, error) {
	return pass.Done(s.result, r.report(ctx, s.records, s.verdicts, s.zoneConditions()))
}

// listRecords reads the zone's authoritative records, in a fixed order so every replica builds
// the same zone from the same objects.
func (r *Reconciler) listRecords(ctx context.Context, s *zoneScope) (ctrl.Result, bool, error) {
	var list v1alpha1.DNSRecordList
	if err := r.Client.List(ctx, &list, client.MatchingLabels{
		v1alpha1.AuthoritativeRecordLabel: "true", v1alpha1.CoreDNSZoneNameLabel: s.zone,
	}); err != nil {
		return pass.Done(ctrl.Result{}, err)
	}
	slices.SortFunc(list.Items, func(a, b v1alpha1.DNSRecord) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	s.records = list.Items
	return pass.Continue()
}

// keepOwnRecords leaves out the lease and health records this cluster did not write (ownRecordsOnly)
// and makes the zone's data from the rest.
func (r *Reconciler) keepOwnRecords(_ context.Context, s *zoneScope) (ctrl.Result, bool, error) {
	s.sources, s.local, s.ownRefused = r.ownRecordsOnly(s.zone, s.sources)
	s.endpoints = len(s.local)
	s.data = dnsserver.ZoneData{
		Sources:     s.sources,
		Nameservers: r.Nameservers,
		Secondaries: r.Secondaries[s.zone],
		Changed:     s.changed,
	}
	return pass.Continue()
}

// serve hands the zone to the server, or takes it away when nothing of it is left, and turns what
// the server refused into the records' verdicts.
func (r *Reconciler) serve(ctx context.Context, s *zoneScope) (ctrl.Result, bool, error) {
	for name, reasons := range s.ownRefused {
		s.verdicts[keyOf(name)] = notServed(ReasonRecordsRefused, refusedMessage(s.zone, reasons))
	}
	if s.endpoints == 0 {
		r.Server.RemoveZone(s.zone)
		return pass.Continue()
	}
	st, err := r.Server.SetZone(s.zone, s.data)
	if err != nil {
		for _, src := range s.sources {
			s.verdicts[keyOf(src.Name)] = notServed(ReasonZoneError, fmt.Sprintf("zone %s cannot be served: %v", s.zone, err))
		}
		if s.data.Signing != nil {
			c := keysRefused(s.zone, err)
			s.signed = &c
		}
		_ = r.report(ctx, s.records, s.verdicts, s.zoneConditions())
		return pass.Done(ctrl.Result{}, fmt.Errorf("serving zone %s: %w", s.zone, err))
	}
	for name, reasons := range withRefused(st.Refused, s.ownRefused) {
		s.ungranted[keyOf(name)] = append(s.ungranted[keyOf(name)], reasons...)
	}
	for key, reasons := range s.ungranted {
		s.verdicts[key] = notServed(ReasonRecordsRefused, refusedMessage(s.zone, reasons))
	}
	if s.data.Sources == nil && len(st.Skipped) > 0 {
		// A merged zone is one source: what it cannot serve is told to every record of the zone.
		for key, v := range s.verdicts {
			if v.Status == metav1.ConditionTrue {
				s.verdicts[key] = notServed(ReasonRecordsRefused, refusedMessage(s.zone, st.Skipped))
			}
		}
	}
	if st.Changed {
		log.FromContext(ctx).V(1).Info("serving zone", "zone", s.zone, "serial", st.Serial, "records", len(s.sources), "refused", len(st.Skipped))
	}
	return pass.Continue()
}

// lastChange is when a record's spec or metadata last changed, as the API server recorded it: the
// same on every replica, so replicas agree on the zone's serial. Status writes do not count; they do
// not change what is served.
func lastChange(rec *v1alpha1.DNSRecord) time.Time {
	t := rec.CreationTimestamp.Time
	for _, f := range rec.ManagedFields {
		if f.Subresource == "" && f.Time != nil && f.Time.After(t) {
			t = f.Time.Time
		}
	}
	return t
}
