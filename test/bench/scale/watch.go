package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// recordWatch follows the namespace's DNSRecords through an informer (a watch, not repeated lists
// of thousands of records, which would load the API server the controller shares).
type recordWatch struct {
	cache  cache.Cache
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	ready  map[string]bool
}

func watchRecords(ctx context.Context, cfg *rest.Config, ns string) (*recordWatch, error) {
	c, err := cache.New(cfg, cache.Options{Scheme: apis.Scheme(), DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return nil, err
	}
	w := &recordWatch{cache: c, done: make(chan struct{}), ready: map[string]bool{}}
	inf, err := c.GetInformer(ctx, &v1alpha1.DNSRecord{})
	if err != nil {
		return nil, err
	}
	update := func(obj any) {
		if rec, ok := obj.(*v1alpha1.DNSRecord); ok {
			w.mu.Lock()
			w.ready[rec.Name] = isReady(rec)
			w.mu.Unlock()
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    update,
		UpdateFunc: func(_, obj any) { update(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if rec, ok := obj.(*v1alpha1.DNSRecord); ok {
				w.mu.Lock()
				delete(w.ready, rec.Name)
				w.mu.Unlock()
			}
		},
	}); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	go func() {
		defer close(w.done)
		_ = c.Start(runCtx)
	}()
	if !c.WaitForCacheSync(runCtx) {
		w.stop()
		return nil, errors.New("the harness's record cache did not sync")
	}
	return w, nil
}

func (w *recordWatch) stop() {
	w.cancel()
	<-w.done
}

// counts returns how many records are Ready and how many exist.
// readyNames returns the names of the records Ready now.
func (w *recordWatch) readyNames() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var names []string
	for name, r := range w.ready {
		if r {
			names = append(names, name)
		}
	}
	return names
}

// present counts how many of names still exist.
func (w *recordWatch) present(names []string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, name := range names {
		if _, ok := w.ready[name]; ok {
			n++
		}
	}
	return n
}

func (w *recordWatch) counts() (ready, total int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.ready {
		if r {
			ready++
		}
	}
	return ready, len(w.ready)
}

func isReady(rec *v1alpha1.DNSRecord) bool {
	c := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeReady)
	return c != nil && c.Status == metav1.ConditionTrue && rec.Status.ObservedGeneration == rec.Generation
}

// verify checks that every record is Ready with ProviderSuccess and reports its spec as published,
// so a fast wrong answer fails the run instead of being reported.
func (w *recordWatch) verify(specs []*v1alpha1.DNSRecord) error {
	for _, spec := range specs {
		rec := &v1alpha1.DNSRecord{}
		if err := w.cache.Get(context.Background(), client.ObjectKeyFromObject(spec), rec); err != nil {
			return err
		}
		c := meta.FindStatusCondition(rec.Status.Conditions, v1alpha1.ConditionTypeReady)
		if c == nil || c.Reason != v1alpha1.ReasonProviderSuccess {
			return fmt.Errorf("record %s: Ready %v", rec.Name, c)
		}
		want := spec.Spec.Endpoints[0]
		if len(rec.Status.Endpoints) != 1 || rec.Status.Endpoints[0].Key() != want.Key() || !rec.Status.Endpoints[0].Targets.SameTargets(want.Targets) {
			return fmt.Errorf("record %s published %v, want %s", rec.Name, rec.Status.Endpoints, want)
		}
	}
	return nil
}

// waitGone waits until the watch has seen every record go.
func (w *recordWatch) waitGone(ctx context.Context) error {
	for {
		if _, left := w.counts(); left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
