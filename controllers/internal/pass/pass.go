// Package pass is the skeleton every controller of this project follows (Cluster API's, in
// internal/controllers/cluster): a pass fetches its object into a scope, runs a short list of phases
// in order until one ends the pass, and writes the status once, in a deferred patch. A new step is
// one more phase, not an edit in five places.
//
// It also holds the per-key exponential backoff of the controllers that retry failing keys, so
// that each does not keep a map of its own.
//
// It lives under controllers/internal: it is controller-runtime plumbing shared by the controllers,
// not part of the pure core in pkg/, and no one outside controllers/ has a use for it.
package pass

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Phase is one step of a pass over a scope S. done ends the pass with res and err; a phase that
// returns done false has nothing to say about the result (res and err are ignored). The error
// comes last, as everywhere in Go.
type Phase[S any] func(ctx context.Context, s S) (res ctrl.Result, done bool, err error)

// Run runs phases in order until one is done, and returns its result; none done is a pass that
// ends quietly.
func Run[S any](ctx context.Context, s S, phases ...Phase[S]) (ctrl.Result, error) {
	for _, p := range phases {
		if res, done, err := p(ctx, s); done {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// Continue is what a phase returns to let the pass go on to the next one.
func Continue() (ctrl.Result, bool, error) { return ctrl.Result{}, false, nil }

// Done is what a phase returns to end the pass with res and err.
func Done(res ctrl.Result, err error) (ctrl.Result, bool, error) { return res, true, err }
