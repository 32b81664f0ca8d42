package pass

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestRunStopsAtTheFirstPhaseDone(t *testing.T) {
	var ran []string
	step := func(name string, done bool, err error) Phase[*[]string] {
		return func(_ context.Context, s *[]string) (ctrl.Result, bool, error) {
			*s = append(*s, name)
			if !done {
				return Continue()
			}
			return Done(ctrl.Result{RequeueAfter: time.Second}, err)
		}
	}
	boom := errors.New("boom")
	res, err := Run(context.Background(), &ran, step("a", false, nil), step("b", true, boom), step("c", true, nil))
	if !errors.Is(err, boom) || res.RequeueAfter != time.Second || len(ran) != 2 {
		t.Fatalf("got %v %v after %v, want b's result after a and b", res, err, ran)
	}
	ran = nil
	if res, err := Run(context.Background(), &ran, step("a", false, nil)); err != nil || !res.IsZero() || len(ran) != 1 {
		t.Fatalf("no phase done: got %v %v after %v", res, err, ran)
	}
}

// The backoff is the workqueue's per-item exponential limiter, and forgets per key.
func TestBackoffDoublesUpToMaxAndForgets(t *testing.T) {
	var _ workqueue.TypedRateLimiter[reconcile.Request] = &Backoff{}
	b := NewBackoff(time.Second, 5*time.Second)
	ref := workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](time.Second, 5*time.Second)
	key := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	for i := range 40 {
		if got, want := b.When(key), ref.When(key); got != want {
			t.Fatalf("failure %d: %v, want %v", i+1, got, want)
		}
	}
	if b.NumRequeues(key) != 40 {
		t.Fatalf("%d requeues", b.NumRequeues(key))
	}
	b.Forget(key)
	if b.Len() != 0 || b.When(key) != time.Second {
		t.Fatal("a forgotten key starts again at Min")
	}
}

func TestJitterStaysWithinTenPercent(t *testing.T) {
	for range 1000 {
		if d := Jitter(time.Second); d < 900*time.Millisecond || d > 1100*time.Millisecond {
			t.Fatalf("jitter %v", d)
		}
	}
}
