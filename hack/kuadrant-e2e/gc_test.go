//go:build integration

package main

import (
	"context"
	"io"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// The collector does what kube-controller-manager's garbage collector does for the suite: a
// foreground deletion removes the dependents first, then the object; an orphan is deleted; an
// object whose owner lives, and another finalizer, are left alone.
func TestCollectorStandsInForTheGarbageCollector(t *testing.T) {
	env, err := testenv.Start(testenv.Options{WithoutGatewayAPI: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	maps := cs.CoreV1().ConfigMaps("default")

	create := func(name string, finalizers []string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
		t.Helper()
		cm, err := maps.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: name, Finalizers: finalizers, OwnerReferences: owners,
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	ref := func(owner *corev1.ConfigMap, block bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, BlockOwnerDeletion: ptr.To(block)}
	}
	gone := func(name string) {
		t.Helper()
		err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, err := maps.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("%s is still there: %v", name, err)
		}
	}

	owner := create("owner", nil)
	create("blocking", nil, ref(owner, true))
	create("nonblocking", nil, ref(owner, false))
	living := create("living", nil)
	kept := create("kept", nil, ref(living, true))
	held := create("held", []string{"example.com/hold"})

	c, err := newCollector(env.Config, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })

	foreground := metav1.DeletePropagationForeground
	for _, name := range []string{"owner", "held"} {
		if err := maps.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &foreground}); err != nil {
			t.Fatal(err)
		}
	}
	gone("blocking")
	gone("nonblocking")
	gone("owner")

	// An orphan: its owner's UID names nothing (the owner was deleted while nothing collected).
	create("orphan", nil, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: types.UID("no-such-uid")})
	gone("orphan")

	// Only the foregroundDeletion finalizer is the collector's to remove.
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		cm, err := maps.Get(ctx, held.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return len(cm.Finalizers) == 1 && cm.Finalizers[0] == "example.com/hold", nil
	})
	if err != nil {
		t.Fatalf("held: the foregroundDeletion finalizer was not removed, or another was: %v", err)
	}
	// The collector works through its queue in order: "kept" was looked at before "orphan".
	if cm, err := maps.Get(ctx, kept.Name, metav1.GetOptions{}); err != nil || cm.DeletionTimestamp != nil {
		t.Fatalf("kept, whose owner lives, was deleted: %v", err)
	}
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := maps.Patch(ctx, held.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	gone("held")
}
