package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// A control plane of only kube-apiserver and etcd (envtest, `make run`) has no
// kube-controller-manager, so nothing collects garbage: an object deleted with foreground
// propagation keeps its `foregroundDeletion` finalizer for ever, and an object whose owner is gone
// stays. Kuadrant's suite deletes everything in the foreground and waits for it to be gone, which a
// real cluster's collector makes true. The collector here does what that one does, for every
// resource the server lists at start:
//   - an object being deleted in the foreground has its dependents (objects whose ownerReferences
//     name its UID) deleted; once none that blocks its deletion (blockOwnerDeletion) is left, its
//     foregroundDeletion finalizer is removed;
//   - an object whose owners are all gone is deleted.
//
// It does not handle `orphan` propagation (the suite does not use it).

const foregroundFinalizer = metav1.FinalizerDeleteDependents // "foregroundDeletion"

// Index names of every informer's store.
const (
	byOwner = "owner" // the UIDs an object's ownerReferences name
	byUID   = "uid"
)

type resource struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

type item struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
}

type collector struct {
	client    metadata.Interface
	out       io.Writer
	resources map[schema.GroupKind]resource
	informers map[schema.GroupVersionResource]cache.SharedIndexInformer
	queue     workqueue.TypedRateLimitingInterface[item]
	outMu     sync.Mutex
}

func newCollector(cfg *rest.Config, out io.Writer) (*collector, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	// A group that fails discovery (an aggregated API that is down) leaves the others usable.
	lists, err := dc.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discovering resources: %w", err)
	}
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c := &collector{
		client:    client,
		out:       out,
		resources: map[schema.GroupKind]resource{},
		informers: map[schema.GroupVersionResource]cache.SharedIndexInformer{},
		queue:     workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[item]()),
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerbs(r.Verbs, "list", "watch", "patch", "delete") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			c.resources[schema.GroupKind{Group: gv.Group, Kind: r.Kind}] = resource{gvr: gvr, namespaced: r.Namespaced}
			inf := metadatainformer.NewFilteredMetadataInformer(client, gvr, metav1.NamespaceAll, 0, cache.Indexers{
				byOwner: func(obj any) ([]string, error) {
					var uids []string
					for _, ref := range obj.(*metav1.PartialObjectMetadata).OwnerReferences {
						uids = append(uids, string(ref.UID))
					}
					return uids, nil
				},
				byUID: func(obj any) ([]string, error) {
					return []string{string(obj.(*metav1.PartialObjectMetadata).UID)}, nil
				},
			}, nil).Informer()
			if _, err := inf.AddEventHandler(c.handler(gvr)); err != nil {
				return nil, err
			}
			c.informers[gvr] = inf
		}
	}
	return c, nil
}

func hasVerbs(have metav1.Verbs, want ...string) bool {
	for _, v := range want {
		if !slices.Contains(have, v) {
			return false
		}
	}
	return true
}

// handler queues what an event may have made collectable: the object itself, and, when it is
// gone, its dependents (now orphans) and its owners (which may have waited for it).
func (c *collector) handler(gvr schema.GroupVersionResource) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueue(gvr, obj.(*metav1.PartialObjectMetadata)) },
		UpdateFunc: func(_, obj any) { c.enqueue(gvr, obj.(*metav1.PartialObjectMetadata)) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			m, ok := obj.(*metav1.PartialObjectMetadata)
			if !ok {
				return
			}
			for _, d := range c.dependents(m.UID) {
				c.queue.Add(d.item)
			}
			for _, ref := range m.OwnerReferences {
				if owner, ok := c.cached(ref); ok {
					c.queue.Add(owner)
				}
			}
		},
	}
}

func (c *collector) enqueue(gvr schema.GroupVersionResource, m *metav1.PartialObjectMetadata) {
	if m.DeletionTimestamp != nil && slices.Contains(m.Finalizers, foregroundFinalizer) || m.DeletionTimestamp == nil && len(m.OwnerReferences) > 0 {
		c.queue.Add(item{gvr: gvr, namespace: m.Namespace, name: m.Name})
	}
}

func (c *collector) run(ctx context.Context) error {
	defer c.queue.ShutDown()
	for _, inf := range c.informers {
		go inf.Run(ctx.Done())
	}
	for gvr, inf := range c.informers {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return fmt.Errorf("gc: the cache of %s did not sync", gvr)
		}
	}
	c.printf("gc: watching %d resources", len(c.informers))
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for {
		it, shutdown := c.queue.Get()
		if shutdown {
			return nil
		}
		requeue, err := c.collect(ctx, it)
		switch {
		case err != nil && ctx.Err() == nil:
			c.printf("gc: %s %s: %v", it.gvr.Resource, key(it), err)
			c.queue.AddRateLimited(it)
		case requeue:
			c.queue.AddAfter(it, 250*time.Millisecond)
		default:
			c.queue.Forget(it)
		}
		c.queue.Done(it)
	}
}

// collect does what the object in its cache state calls for; requeue asks to look again soon (its
// blocking dependents are still going).
func (c *collector) collect(ctx context.Context, it item) (requeue bool, err error) {
	obj, exists, err := c.informers[it.gvr].GetIndexer().GetByKey(key(it))
	if err != nil || !exists {
		return false, err
	}
	m := obj.(*metav1.PartialObjectMetadata)
	res := c.client.Resource(it.gvr).Namespace(m.Namespace)
	if m.DeletionTimestamp != nil {
		i := slices.Index(m.Finalizers, foregroundFinalizer)
		if i < 0 {
			return false, nil
		}
		blocked := false
		for _, d := range c.dependents(m.UID) {
			if d.meta.DeletionTimestamp == nil {
				if err := c.delete(ctx, d.item, d.meta.UID); err != nil {
					return false, err
				}
			}
			for _, ref := range d.meta.OwnerReferences {
				if ref.UID == m.UID && ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
					blocked = true
				}
			}
		}
		if blocked {
			return true, nil
		}
		// Removes exactly the finalizer seen, or fails when the list changed meanwhile (then the
		// update event queues the object again).
		patch, _ := json.Marshal([]map[string]any{
			{"op": "test", "path": fmt.Sprintf("/metadata/finalizers/%d", i), "value": foregroundFinalizer},
			{"op": "remove", "path": fmt.Sprintf("/metadata/finalizers/%d", i)},
		})
		_, err := res.Patch(ctx, m.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
			return false, nil
		}
		if err == nil {
			c.printf("gc: %s %s: removed the %s finalizer", it.gvr.Resource, key(it), foregroundFinalizer)
		}
		return false, err
	}
	if len(m.OwnerReferences) == 0 {
		return false, nil
	}
	for _, ref := range m.OwnerReferences {
		gone, err := c.ownerGone(ctx, ref, m.Namespace)
		if err != nil || !gone {
			return false, err
		}
	}
	return false, c.delete(ctx, it, m.UID)
}

type dependent struct {
	item item
	meta *metav1.PartialObjectMetadata
}

func (c *collector) dependents(owner types.UID) []dependent {
	var deps []dependent
	for gvr, inf := range c.informers {
		objs, _ := inf.GetIndexer().ByIndex(byOwner, string(owner))
		for _, obj := range objs {
			m := obj.(*metav1.PartialObjectMetadata)
			deps = append(deps, dependent{item: item{gvr: gvr, namespace: m.Namespace, name: m.Name}, meta: m})
		}
	}
	return deps
}

// cached finds an owner in the caches.
func (c *collector) cached(ref metav1.OwnerReference) (item, bool) {
	res, ok := c.resource(ref)
	if !ok {
		return item{}, false
	}
	objs, _ := c.informers[res.gvr].GetIndexer().ByIndex(byUID, string(ref.UID))
	if len(objs) == 0 {
		return item{}, false
	}
	m := objs[0].(*metav1.PartialObjectMetadata)
	return item{gvr: res.gvr, namespace: m.Namespace, name: m.Name}, true
}

func (c *collector) resource(ref metav1.OwnerReference) (resource, bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return resource{}, false
	}
	res, ok := c.resources[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
	return res, ok
}

// ownerGone asks the server, not the cache, as the real collector does: a cache that has not yet
// seen a new owner must not get its dependents deleted. An owner of a kind the server does not
// list is never taken for gone.
func (c *collector) ownerGone(ctx context.Context, ref metav1.OwnerReference, namespace string) (bool, error) {
	if _, ok := c.cached(ref); ok {
		return false, nil
	}
	res, ok := c.resource(ref)
	if !ok {
		return false, nil
	}
	ns := ""
	if res.namespaced {
		ns = namespace
	}
	owner, err := c.client.Resource(res.gvr).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return owner.UID != ref.UID, nil
}

func (c *collector) delete(ctx context.Context, it item, uid types.UID) error {
	background := metav1.DeletePropagationBackground
	err := c.client.Resource(it.gvr).Namespace(it.namespace).Delete(ctx, it.name, metav1.DeleteOptions{
		PropagationPolicy: &background,
		Preconditions:     &metav1.Preconditions{UID: &uid},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err == nil {
		c.printf("gc: %s %s: deleted (its owner is gone or being deleted in the foreground)", it.gvr.Resource, key(it))
	}
	return err
}

func (c *collector) printf(format string, args ...any) {
	c.outMu.Lock()
	defer c.outMu.Unlock()
	fmt.Fprintf(c.out, format+"\n", args...)
}

func key(it item) string {
	if it.namespace == "" {
		return it.name
	}
	return it.namespace + "/" + it.name
}
