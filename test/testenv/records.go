package testenv

import (
	"context"
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// CreateAll creates the records concurrently, as a policy controller or a GitOps sync does, at most
// 64 at a time (the client's own connection pool would queue the rest anyway).
func CreateAll(ctx context.Context, c client.Client, records []*v1alpha1.DNSRecord) error {
	var wg sync.WaitGroup
	errs := make([]error, len(records))
	sem := make(chan struct{}, 64)
	for i, r := range records {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = c.Create(ctx, r.DeepCopy())
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// CountReady counts the namespace's records that are Ready for their current generation.
func CountReady(ctx context.Context, c client.Client, ns string) (ready, total int, err error) {
	list := &v1alpha1.DNSRecordList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return 0, 0, err
	}
	for i := range list.Items {
		r := &list.Items[i]
		if cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionTypeReady); cond != nil &&
			cond.Status == metav1.ConditionTrue && r.Status.ObservedGeneration == r.Generation {
			ready++
		}
	}
	return ready, len(list.Items), nil
}
