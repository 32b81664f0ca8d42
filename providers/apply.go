package providers

import (
	"slices"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// ApplyChanges returns the record sets of a zone with one batch applied, or an error when a hosted
// DNS service would reject any part of the batch or a set it requires is not as required. It never modifies records or the batch; the result
// holds copies of the batch's endpoints.
//
// The batch applies in order deletions, updates, creations, so a batch that deletes the A at a name
// and creates a CNAME there is valid. Errors are StaleView when the zone differs from what the batch
// assumes (a set to delete or update is missing or holds other values, a set to create exists): the
// caller's view is out of date and re-planning from a fresh read settles it. Errors are Permanent
// when the batch contradicts itself whatever the zone holds.
//
// zoneName is the domain every name of the batch must be in. Backends that hold a zone as a list
// (inmemory, endpoint) apply batches with it, and the publish queue uses it to stack the plans of one
// cycle, so every layer enforces the same rules.
func ApplyChanges(zoneName string, records []*v1alpha1.Endpoint, changes *Changes) ([]*v1alpha1.Endpoint, error) {
	if changes == nil {
		changes = &Changes{}
	}
	if err := validateBatch(v1alpha1.NormalizeName(zoneName), changes); err != nil {
		return nil, err
	}

	// Callers pass a DNSRecord's endpoints as they are; a nil entry is no record set.
	next := slices.DeleteFunc(slices.Clone(records), func(ep *v1alpha1.Endpoint) bool { return ep == nil })
	index := make(map[v1alpha1.EndpointKey]int, len(next))
	for i, ep := range next {
		index[ep.Key()] = i
	}
	// written holds the keys this batch deletes or writes, to tell a batch that contradicts itself
	// from a zone that changed under the caller.
	written := map[v1alpha1.EndpointKey]bool{}

	for _, ep := range changes.Delete {
		if written[ep.Key()] {
			return nil, Errorf(Permanent, "batch deletes %s more than once", ep)
		}
		i, ok := index[ep.Key()]
		if !ok {
			return nil, Errorf(StaleView, "cannot delete %s: no such record set", ep)
		}
		if !next[i].SameValues(ep) {
			return nil, Errorf(StaleView, "cannot delete %s: the zone holds %s", ep, next[i])
		}
		next[i] = nil
		delete(index, ep.Key())
		written[ep.Key()] = true
	}
	for n, old := range changes.UpdateOld {
		if written[old.Key()] {
			return nil, Errorf(Permanent, "batch deletes or updates %s more than once", old)
		}
		i, ok := index[old.Key()]
		if !ok {
			return nil, Errorf(StaleView, "cannot update %s: no such record set", old)
		}
		if !next[i].SameValues(old) {
			return nil, Errorf(StaleView, "cannot update %s: the zone holds %s", old, next[i])
		}
		next[i] = changes.UpdateNew[n].DeepCopy()
		written[old.Key()] = true
	}
	for _, ep := range changes.Create {
		if i, ok := index[ep.Key()]; ok {
			if written[ep.Key()] {
				return nil, Errorf(Permanent, "batch writes %s more than once", ep)
			}
			return nil, Errorf(StaleView, "cannot create %s: the zone holds %s", ep, next[i])
		}
		index[ep.Key()] = len(next)
		next = append(next, ep.DeepCopy())
		written[ep.Key()] = true
	}

	for _, ep := range changes.Require {
		if written[ep.Key()] {
			return nil, Errorf(Permanent, "batch requires %s and changes it", ep)
		}
		i, ok := index[ep.Key()]
		if !ok {
			return nil, Errorf(StaleView, "required %s is not in the zone", ep)
		}
		if !next[i].SameValues(ep) {
			return nil, Errorf(StaleView, "required %s: the zone holds %s", ep, next[i])
		}
	}

	result := make([]*v1alpha1.Endpoint, 0, len(next))
	for _, ep := range next {
		if ep != nil {
			result = append(result, ep)
		}
	}
	if err := checkCNAMEs(result, changes, written); err != nil {
		return nil, err
	}
	return result, nil
}

func validateBatch(zoneName string, changes *Changes) error {
	if len(changes.UpdateOld) != len(changes.UpdateNew) {
		return Errorf(Permanent, "batch has %d old and %d new values of updated record sets",
			len(changes.UpdateOld), len(changes.UpdateNew))
	}
	for i := range changes.UpdateOld {
		if changes.UpdateOld[i] == nil || changes.UpdateNew[i] == nil {
			return Errorf(Permanent, "batch holds an empty record set")
		}
		if changes.UpdateOld[i].Key() != changes.UpdateNew[i].Key() {
			return Errorf(Permanent, "update of %s changes the name, type or set identifier to %s",
				changes.UpdateOld[i], changes.UpdateNew[i])
		}
	}
	for _, list := range [][]*v1alpha1.Endpoint{changes.Create, changes.UpdateNew, changes.Delete, changes.UpdateOld, changes.Require} {
		for _, ep := range list {
			if err := validateEndpoint(zoneName, ep); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateEndpoint(zoneName string, ep *v1alpha1.Endpoint) error {
	if ep == nil {
		return Errorf(Permanent, "batch holds an empty record set")
	}
	name := v1alpha1.NormalizeName(ep.DNSName)
	if name == "" || ep.RecordType == "" {
		return Errorf(Permanent, "record set %s has no name or no type", ep)
	}
	// A zone named *.D (a DNSRecord's wildcard root host) holds *.D and the names under D, the rule
	// the DNSRecord API enforces.
	if name != zoneName && !strings.HasSuffix(name, "."+strings.TrimPrefix(zoneName, v1alpha1.WildcardPrefix)) {
		return Errorf(Permanent, "record set %s is not in zone %s", ep, zoneName)
	}
	if len(ep.Targets) == 0 {
		return Errorf(Permanent, "record set %s has no targets", ep)
	}
	for _, t := range ep.Targets {
		if t == "" {
			return Errorf(Permanent, "record set %s has an empty target", ep)
		}
	}
	return nil
}

// checkCNAMEs refuses a CNAME beside another type at a name the batch writes. Names the batch does
// not touch are left alone: a conflict someone else wrote must not block every later batch.
func checkCNAMEs(records []*v1alpha1.Endpoint, changes *Changes, written map[v1alpha1.EndpointKey]bool) error {
	touched := map[string]bool{}
	for _, ep := range slices.Concat(changes.Create, changes.UpdateNew) {
		touched[v1alpha1.NormalizeName(ep.DNSName)] = true
	}
	byName := map[string][]*v1alpha1.Endpoint{}
	for _, ep := range records {
		if name := v1alpha1.NormalizeName(ep.DNSName); touched[name] {
			byName[name] = append(byName[name], ep)
		}
	}
	for name, sets := range byName {
		var cname, other *v1alpha1.Endpoint
		for _, ep := range sets {
			if ep.RecordType == v1alpha1.RecordTypeCNAME {
				cname = ep
			} else {
				other = ep
			}
		}
		if cname == nil || other == nil {
			continue
		}
		kind := Permanent
		for _, ep := range sets {
			if !written[ep.Key()] {
				kind = StaleView
			}
		}
		return Errorf(kind, "cannot hold a CNAME beside other record types at %s (%s and %s)", name, cname, other)
	}
	return nil
}
