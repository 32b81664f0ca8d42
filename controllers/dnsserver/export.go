package dnsserver

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
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
