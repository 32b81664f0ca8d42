package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// floorFinalizer is the bare client's finalizer: the same size of write as the controller's own.
const floorFinalizer = "bench.dnspolicy.io/floor"

// floor times the least any controller could do for n records on this API server: a bare client
// (the harness's, no rate limit, -creators workers) creates each record, PATCHes a finalizer onto
// it and PATCHes its status to Ready for its generation, as the record controller's three writes
// per record do (the create is the user's, the other two the controller's; the status is a
// subresource, so they cannot be one request). The clock runs from the first create until the
// harness's watch sees all n Ready, the same stopping rule as the controller's run, and with the
// same watch open. No zone is written: the floor is the API server's cost alone.
//
// It runs before the size's controller starts, in a namespace of its own, and removes its records
// (finalizers released, deleted, gone from the watch) before returning, so the controller never
// sees them. It returns the time and the control plane's CPU-seconds over it.
func (h *harness) floor(ctx context.Context, c *config, n, run int) (time.Duration, float64, error) {
	return h.timeFloor(ctx, c, fmt.Sprintf("floor-%d-%d", n, run), n, nil)
}

// timeFloor creates n records in a namespace of its own and times them to Ready. With
// startController nil the creating workers also write the finalizer and the status (floor);
// otherwise the controller it starts on the namespace, before the clock, makes those writes, and is
// stopped before the records are removed.
func (h *harness) timeFloor(ctx context.Context, c *config, name string, n int, startController func(ctx context.Context, ns string) (stop func(), err error)) (time.Duration, float64, error) {
	ns := "bench-" + name
	if err := h.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return 0, 0, err
	}
	// The first DNSRecord written on a fresh API server waits about 2 s, half the time (the custom
	// resource's storage is still being set up). The floor runs before any controller's, so it
	// pays that on a record of its own before the clock starts; the controller's runs never do.
	warm := recordSpecs(ns, "warm.example.com", 1)[0]
	warm.Name = "warm"
	if err := h.client.Create(ctx, warm); err != nil {
		return 0, 0, err
	}
	if err := h.client.Delete(ctx, warm); err != nil {
		return 0, 0, err
	}
	w, err := watchRecords(ctx, h.cfg, ns)
	if err != nil {
		return 0, 0, err
	}
	defer w.stop()
	stopController := func() {}
	if startController != nil {
		if stopController, err = startController(ctx, ns); err != nil {
			return 0, 0, err
		}
		defer stopController()
	}
	specs := recordSpecs(ns, name+".example.com", n)

	cpuBefore, err := controlPlaneCPU()
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	err = parallel(ctx, n, c.creators, func(ctx context.Context, i int) error {
		rec := specs[i].DeepCopy()
		if err := h.client.Create(ctx, rec); err != nil || startController != nil {
			return err
		}
		return writeFinalizerAndReady(ctx, h.client, rec)
	})
	if err != nil {
		return 0, 0, err
	}
	for {
		if ready, _ := w.counts(); ready == n {
			break
		}
		if time.Since(start) > c.timeout {
			ready, _ := w.counts()
			return 0, 0, fmt.Errorf("the watch saw %d of %d Ready after %s", ready, n, c.timeout)
		}
		select {
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	took := time.Since(start)
	cpuAfter, err := controlPlaneCPU()
	if err != nil {
		return 0, 0, err
	}

	stopController()
	if _, err := h.release(ctx, ns, c.creators); err != nil {
		return 0, 0, err
	}
	if err := h.client.DeleteAllOf(ctx, &v1alpha1.DNSRecord{}, client.InNamespace(ns)); err != nil {
		return 0, 0, err
	}
	if err := w.waitGone(ctx); err != nil {
		return 0, 0, err
	}
	return took, cpuAfter - cpuBefore, nil
}

// writeFinalizerAndReady makes a record's two writes after its create: the finalizer, then the
// status Ready for its generation.
func writeFinalizerAndReady(ctx context.Context, c client.Client, rec *v1alpha1.DNSRecord) error {
	finalizer := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, floorFinalizer)))
	if err := c.Patch(ctx, rec, finalizer); err != nil {
		return err
	}
	status, err := readyStatus(rec)
	if err != nil {
		return err
	}
	return c.Status().Patch(ctx, rec, client.RawPatch(types.MergePatchType, status))
}

// readyStatus is a status merge patch of the size and shape the controller writes for a record it
// has published: Ready for the record's generation, the endpoints as published and the zone's
// endpoints under the root host, the owner, zone and re-check interval.
func readyStatus(rec *v1alpha1.DNSRecord) ([]byte, error) {
	zone := strings.SplitN(rec.Spec.RootHost, ".", 2)[1]
	owner := "floor0000"
	return json.Marshal(map[string]any{"status": v1alpha1.DNSRecordStatus{
		ObservedGeneration: rec.Generation,
		Conditions: []metav1.Condition{{
			Type: v1alpha1.ConditionTypeReady, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonProviderSuccess,
			Message: v1alpha1.MessageProviderSuccess, ObservedGeneration: rec.Generation, LastTransitionTime: metav1.Now(),
		}},
		QueuedAt:       metav1.Now(),
		ValidFor:       "30s",
		Endpoints:      rec.Spec.Endpoints,
		ZoneEndpoints:  rec.Spec.Endpoints,
		OwnerID:        owner,
		ProviderRef:    *rec.Spec.ProviderRef,
		DomainOwners:   []string{owner},
		ZoneID:         zone,
		ZoneDomainName: zone,
	}})
}
