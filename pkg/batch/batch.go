// Package batch holds the unit of writing to a zone: one batch of record-set changes, applied all or
// nothing. It is the vocabulary shared by the pure core (plan, registry) and the backends, and
// imports neither.
package batch

import "github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"

// Changes is one batch of changes to one zone. A backend applies a batch all or nothing, so a change
// of record type at a name (delete the A, create the CNAME) never leaves the name empty.
type Changes struct {
	Create []*v1alpha1.Endpoint
	// UpdateOld[i] is replaced by UpdateNew[i]; both have the same key (name, type, set identifier).
	UpdateOld []*v1alpha1.Endpoint
	UpdateNew []*v1alpha1.Endpoint
	Delete    []*v1alpha1.Endpoint
	// Require are record sets the batch does not change but depends on: each must hold exactly these
	// values when the batch applies, or the batch fails as a stale view. An owner that withdraws its
	// claim from a record another owner still claims requires that other claim, so two owners
	// leaving at once can never both leave the record behind without an owner.
	Require []*v1alpha1.Endpoint
}

// Len is the number of record-set changes in the batch; requirements are not changes.
func (c *Changes) Len() int {
	return len(c.Create) + len(c.UpdateNew) + len(c.Delete)
}

// Empty reports whether the batch changes nothing. A batch of requirements alone changes nothing
// and is not sent.
func (c *Changes) Empty() bool { return c == nil || c.Len() == 0 }
