package dnsserver

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/internal/pass"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
)

type exportVersion struct {
	version time.Time
	digest  [sha256.Size]byte
}

// exportVersion is the time an export says its content last changed: when its records last changed
// (changed), moved on by a second whenever the content changed and that time did not (two changes
// in one second, a record deleted). Every server merging the export adds it into its serial
// (peers.Merged.Changed), so it must move with every change of content, and by the same amount for
// every reader.
func (r *Reconciler) exportVersion(zone string, endpoints []*v1alpha1.Endpoint, changed time.Time) time.Time {
	keyed := slices.Clone(endpoints)
	v1alpha1.SortEndpoints(keyed)
	h := sha256.New()
	for _, e := range keyed {
		targets := slices.Clone([]string(e.Targets))
		slices.Sort(targets)
		fmt.Fprintf(h, "%s %s %q %d %q %v\n", e.DNSName, e.RecordType, e.SetIdentifier, e.RecordTTL, targets, e.ProviderSpecific)
	}
	var digest [sha256.Size]byte
	copy(digest[:], h.Sum(nil))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.versions == nil {
		r.versions = map[string]exportVersion{}
	}
	prev, seen := r.versions[zone]
	version := changed.Truncate(time.Second)
	switch {
	case seen && prev.digest == digest:
		version = prev.version
	case seen && !version.After(prev.version):
		version = prev.version.Add(time.Second)
	}
	r.versions[zone] = exportVersion{version: version, digest: digest}
	return version
}

// exported says whether a zone's export is offered: it is listed, or has peers.
func (r *Reconciler) exported(zone string) bool {
	if r.ClusterID == "" {
		return false
	}
	if r.Peers != nil && r.Peers.HasPeers(zone) {
		return true
	}
	return slices.ContainsFunc(r.Exports, func(z string) bool { return v1alpha1.NormalizeName(z) == v1alpha1.NormalizeName(zone) })
}

// export offers the zone's export, when it is exported: what this cluster publishes in it, with
// the cluster's lease, renewed every LeaseEvery (the pass comes back then to renew it). A zone
// with peers is served merged with their exports.
func (r *Reconciler) export(ctx context.Context, s *zoneScope) (ctrl.Result, bool, error) {
	if !r.exported(s.zone) {
		return pass.Continue()
	}
	s.result.RequeueAfter = r.LeaseEvery
	l := lease.Renew(r.ClusterID, time.Now(), r.LeaseEvery, r.LeaseDuration)
	// The export's lease is this one: a lease of this cluster a record happens to hold would
	// give readers two values to judge.
	own := slices.DeleteFunc(slices.Clone(s.local), func(e *v1alpha1.Endpoint) bool {
		held, ok := lease.Parse(e)
		return ok && held.Holder == r.ClusterID
	})
	s.data.Export = &dnsserver.Export{Cluster: lease.Key(r.ClusterID), Changed: r.exportVersion(s.zone, own, s.changed), Endpoints: append(own, l.Record(s.zone))}
	if r.Peers != nil && r.Peers.HasPeers(s.zone) {
		r.mergePeers(ctx, s)
	}
	return pass.Continue()
}

// mergePeers serves the zone merged from its export and its peers', and says whether every peer is
// live. Until the merge works, the zone is served from this cluster's records alone.
func (r *Reconciler) mergePeers(ctx context.Context, s *zoneScope) {
	logger := log.FromContext(ctx)
	merged, err := r.Peers.Merge(s.zone, *s.data.Export)
	if merged == nil {
		logger.Error(err, "merging the peers' exports", "zone", s.zone)
	} else {
		if err != nil {
			logger.Error(err, "merging the peers' exports", "zone", s.zone)
		}
		for owner, why := range merged.Dropped {
			logger.Info("an owner's wishes are left out of the merged zone", "zone", s.zone, "owner", owner, "reason", why)
		}
		s.data.Sources, s.data.Endpoints, s.data.Changed = nil, merged.Endpoints, merged.Changed
		s.endpoints = len(merged.Endpoints)
	}
	c := peersCondition(s.zone, r.Peers.Status(s.zone))
	s.peers = &c
}
