package providers

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ObjectWrites is the State of a backend whose zone is API objects read through an informer cache
// (kuadrant.io/coredns, kuadrant.io/endpoint). The cache trails the backend's own writes: read
// straight after a write it can still hold the object as it was, or one just deleted, so the
// engine's check of the zone after its batches would see them undone and retry. Such a backend
// notes each write here, and AwaitPropagation waits until the cache shows all of them, which is
// also when a DNS server reading the same cache (the embedded one) serves them.
type ObjectWrites struct {
	mu     sync.Mutex
	writes []objectWrite
}

// objectWrite is one write the cache must show: the object's key and UID, and the resourceVersion
// it had before the write ("" for a creation). deleted is true when the write removed it.
type objectWrite struct {
	key     client.ObjectKey
	uid     types.UID
	before  string
	deleted bool
}

// Created notes that obj was created. A nil receiver notes nothing: a caller without a State has
// nothing to wait for.
func (w *ObjectWrites) Created(obj client.Object) { w.note(obj, "", false) }

// Updated notes that obj, read at resourceVersion before, was written.
func (w *ObjectWrites) Updated(obj client.Object, before string) { w.note(obj, before, false) }

// Deleted notes that obj was deleted.
func (w *ObjectWrites) Deleted(obj client.Object) { w.note(obj, obj.GetResourceVersion(), true) }

func (w *ObjectWrites) note(obj client.Object, before string, deleted bool) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, objectWrite{key: client.ObjectKeyFromObject(obj), uid: obj.GetUID(), before: before, deleted: deleted})
}

// Await returns once reader shows every noted write, and forgets them; newObject makes an empty
// object of the written kind to read into. A write counts as shown once the object is found (a
// creation), no longer holds the version it was written over (an update), or is gone, replaced by
// another object of its name or marked for deletion (a deletion). It polls, since a cache has no
// notice to wait on, until ctx ends.
func (w *ObjectWrites) Await(ctx context.Context, reader client.Reader, newObject func() client.Object) error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	writes := w.writes
	w.writes = nil
	w.mu.Unlock()
	for _, wr := range writes {
		err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			obj := newObject()
			err := reader.Get(ctx, wr.key, obj)
			switch {
			case apierrors.IsNotFound(err):
				return wr.deleted || wr.before != "", nil
			case err != nil:
				return false, err
			case wr.deleted:
				// An object held by a finalizer is on its way out: readers skip it.
				return obj.GetUID() != wr.uid || obj.GetDeletionTimestamp() != nil, nil
			default:
				return obj.GetResourceVersion() != wr.before || obj.GetUID() != wr.uid, nil
			}
		})
		if err != nil {
			return NewError(Transient, fmt.Errorf("waiting for the cache to show the write of %s: %w", wr.key, err))
		}
	}
	return nil
}

// ObjectWritesOf is the *ObjectWrites a backend put in a View's State, or nil when state holds
// none (a caller that applies without having read).
func ObjectWritesOf(state State) *ObjectWrites {
	w, _ := state.(*ObjectWrites)
	return w
}
