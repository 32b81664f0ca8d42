package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// result is one size's figures.
type result struct {
	records int
	// floor is the bare client's time for the same records' minimum writes on the same API server
	// (floor.go); 0 without -floor.
	floor    time.Duration
	floorCPU float64 // the control plane's CPU-seconds during the floor
	// bare is a bare controller's time for the same writes (bareControllerFloor), bareCPU the
	// control plane's CPU-seconds during it; 0 without -floor.
	bare         time.Duration
	bareCPU      float64
	created      time.Duration // until every create call returned
	ready        int           // Ready at the end of the wait
	half, all    time.Duration // until half, and all, were Ready (all: 0 when the wait timed out)
	waited       time.Duration
	cpu          float64 // controller CPU-seconds from the first create until all Ready
	writes       map[string]float64
	idleRSS      uint64
	readyPeakRSS uint64 // VmHWM from the start until all Ready
	// deletePeakRSS is VmHWM of the deletions alone: the high-water mark is reset as they begin.
	deletePeakRSS uint64
	deleted       int
	readyDeleted  int // of the records Ready when the deletions began, how many were gone at the end
	// controlPlaneCPU is the kube-apiserver's and etcd's CPU-seconds from the first create until
	// all Ready.
	controlPlaneCPU float64
	readyAtDelete   int
	deleteTime      time.Duration
	deleteAll       bool
	deleteCPU       float64
	deleteWrites    float64
	leftForcibly    int
	controllerLog   string
}

func (r result) totalWrites() float64 {
	var n float64
	for _, v := range r.writes {
		n += v
	}
	return n
}

// peakRSS is the higher of the two phases' peaks: the process's VmHWM over the whole size.
func (r result) peakRSS() uint64 { return max(r.readyPeakRSS, r.deletePeakRSS) }

// bench runs one size: the bare client's floor (with -floor), then a fresh controller and
// namespace taking the records to Ready and deleting them.
func (h *harness) bench(ctx context.Context, env *envtest.Environment, c *config, n, run int) (result, error) {
	r := result{records: n}
	if c.floor {
		var err error
		if r.floor, r.floorCPU, err = h.floor(ctx, c, n, run); err != nil {
			return r, fmt.Errorf("the floor: %w", err)
		}
		fmt.Printf("%d records: the bare client's floor (create, finalizer, status) %s, control plane %.1f CPU-s\n",
			n, r.floor.Round(10*time.Millisecond), r.floorCPU)
		if r.bare, r.bareCPU, err = h.bareControllerFloor(ctx, env, c, n, run); err != nil {
			return r, fmt.Errorf("the bare controller: %w", err)
		}
		fmt.Printf("%d records: a bare controller's floor (the same writes from a watch) %s, control plane %.1f CPU-s\n",
			n, r.bare.Round(10*time.Millisecond), r.bareCPU)
	}
	ns := fmt.Sprintf("bench-scale-%d-%d", n, run)
	zone := fmt.Sprintf("scale%d-%d.example.com", n, run)
	if err := h.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return r, err
	}
	if err := h.client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: ns},
		Type:       v1alpha1.SecretTypeInMemory,
		StringData: map[string]string{v1alpha1.InMemInitZonesKey: zone},
	}); err != nil {
		return r, err
	}

	ctl, err := startController(ctx, env, c, n)
	if err != nil {
		return r, err
	}
	defer ctl.stop()
	r.controllerLog = ctl.log
	if err := ctl.waitReady(ctx, 2*time.Minute); err != nil {
		return r, err
	}
	if r.idleRSS, err = ctl.settledRSS(ctx); err != nil {
		return r, err
	}
	fmt.Printf("%d records: controller running (pid %d), idle RSS %s with the Secrets cached\n", n, ctl.pid, mib(r.idleRSS))

	w, err := watchRecords(ctx, h.cfg, ns)
	if err != nil {
		return r, err
	}
	defer w.stop()

	specs := recordSpecs(ns, zone, n)
	if err := h.createPhase(ctx, c, ctl, w, specs, &r); err != nil {
		return r, err
	}
	left, err := h.deletePhase(ctx, c, ctl, w, specs, &r)
	if err != nil {
		return r, err
	}

	// Records the controller did not release in time would be reconciled by the next size's
	// controller and skew its figures: stop this one and release them by hand.
	ctl.stop()
	if left > 0 {
		if r.leftForcibly, err = h.release(ctx, ns, c.creators); err != nil {
			return r, err
		}
		fmt.Printf("%d records: %d finalizers removed by the harness after the controller stopped\n", n, r.leftForcibly)
		if err := w.waitGone(ctx); err != nil {
			return r, err
		}
	}
	return r, nil
}

// recordSpecs are the size's records: one A endpoint each, one zone.
func recordSpecs(ns, zone string, n int) []*v1alpha1.DNSRecord {
	specs := make([]*v1alpha1.DNSRecord, n)
	for i := range specs {
		host := fmt.Sprintf("h%05d.%s", i, zone)
		specs[i] = &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("r%05d", i), Namespace: ns},
			Spec: v1alpha1.DNSRecordSpec{
				RootHost:    host,
				ProviderRef: &v1alpha1.ProviderRef{Name: "provider"},
				Endpoints:   []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(host, v1alpha1.RecordTypeA, 60, address(i))},
			},
		}
	}
	return specs
}

// createPhase creates every record at once and waits until all are Ready (or -timeout), then
// checks what they report.
func (h *harness) createPhase(ctx context.Context, c *config, ctl *controller, w *recordWatch, specs []*v1alpha1.DNSRecord, r *result) error {
	n := len(specs)
	before, err := ctl.sample(h)
	if err != nil {
		return err
	}
	if err := ctl.profileStart(c, ""); err != nil {
		return err
	}
	start := time.Now()
	created := make(chan error, 1)
	go func() {
		err := parallel(ctx, n, c.creators, func(ctx context.Context, i int) error {
			return h.client.Create(ctx, specs[i].DeepCopy())
		})
		r.created = time.Since(start)
		created <- err
	}()
	lastProgress := start
	for {
		ready, _ := w.counts()
		if r.half == 0 && ready*2 >= n {
			r.half = time.Since(start)
			ctl.heapProfile(c, ".half")
		}
		if ready == n {
			r.all = time.Since(start)
			break
		}
		if time.Since(start) > c.timeout {
			break
		}
		if c.progress > 0 && time.Since(lastProgress) >= c.progress {
			lastProgress = time.Now()
			ctl.printProgress(start, "Ready", ready, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	r.waited = time.Since(start)
	after, err := ctl.sample(h)
	if err != nil {
		return err
	}
	ctl.profileStop(c, "")
	if err := <-created; err != nil {
		return fmt.Errorf("creating the records: %w", err)
	}
	r.ready, _ = w.counts()
	r.cpu = after.cpu - before.cpu
	r.controlPlaneCPU = after.controlPlane - before.controlPlane
	r.readyPeakRSS = after.hwm
	r.writes = map[string]float64{}
	for m, v := range after.writes {
		r.writes[m] = v - before.writes[m]
	}
	if c.inProcess {
		// The metrics count every client in the process; the harness's own writes are not the
		// controller's.
		r.writes["harness (subtracted)"] = -float64(after.harnessWrites - before.harnessWrites)
	}
	if r.all == 0 {
		fmt.Printf("%d records: only %d Ready after %s\n", n, r.ready, c.timeout)
		return nil
	}
	fmt.Printf("%d records: all Ready in %s (half in %s)\n", n, r.all.Round(10*time.Millisecond), r.half.Round(10*time.Millisecond))
	if err := w.verify(specs); err != nil {
		return fmt.Errorf("all Ready, but: %w", err)
	}
	return nil
}

// deletePhase deletes every record at once and waits until the controller has withdrawn each from
// the zone and released its finalizer (or -delete-timeout). It returns how many are left. The
// controller's peak RSS is reset as the deletions begin, so the phase's own peak is measured.
func (h *harness) deletePhase(ctx context.Context, c *config, ctl *controller, w *recordWatch, specs []*v1alpha1.DNSRecord, r *result) (left int, err error) {
	n := len(specs)
	if err := resetPeakRSS(ctl.pid); err != nil {
		return 0, err
	}
	before, err := ctl.sample(h)
	if err != nil {
		return 0, err
	}
	readyNames := w.readyNames()
	r.readyAtDelete = len(readyNames)
	if err := ctl.profileStart(c, ".delete"); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := parallel(ctx, n, c.creators, func(ctx context.Context, i int) error {
		return client.IgnoreNotFound(h.client.Delete(ctx, specs[i].DeepCopy()))
	}); err != nil {
		return 0, fmt.Errorf("deleting the records: %w", err)
	}
	lastProgress := start
	var heap heapPeak
	for {
		_, left := w.counts()
		if left == 0 {
			r.deleteAll = true
			break
		}
		if time.Since(start) > c.deleteTimeout {
			break
		}
		heap.check(ctl, c, ".delete.peak")
		if c.progress > 0 && time.Since(lastProgress) >= c.progress {
			lastProgress = time.Now()
			ctl.printProgress(start, "deleted", n-left, n)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	r.deleteTime = time.Since(start)
	ctl.profileStop(c, ".delete")
	after, err := ctl.sample(h)
	if err != nil {
		return 0, err
	}
	r.deletePeakRSS = after.hwm
	_, left = w.counts()
	r.deleted = n - left
	r.readyDeleted = r.readyAtDelete - w.present(readyNames)
	r.deleteCPU = after.cpu - before.cpu
	for m, v := range after.writes {
		r.deleteWrites += v - before.writes[m]
	}
	if c.inProcess {
		r.deleteWrites -= float64(after.harnessWrites - before.harnessWrites)
	}
	fmt.Printf("%d records: %d deleted in %s (%d of the %d Ready ones; a record the controller never reached has no finalizer and goes at once), peak RSS of the deletions %s\n",
		n, r.deleted, r.deleteTime.Round(10*time.Millisecond), r.readyDeleted, r.readyAtDelete, mib(r.deletePeakRSS))
	return left, nil
}

// address is the i-th record's A target.
func address(i int) string { return fmt.Sprintf("10.%d.%d.%d", i/62500, i/250%250, i%250+1) }
