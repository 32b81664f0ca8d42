package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// harness is the benchmark's own connection: no client-side rate limit, and its writes counted so
// an in-process controller's count can be told apart from them.
type harness struct {
	cfg    *rest.Config
	client client.Client
	writes atomic.Int64
}

func newHarness(cfg *rest.Config) (*harness, error) {
	h := &harness{cfg: rest.CopyConfig(cfg)}
	h.cfg.QPS = -1 // no client-side throttling: the harness must not limit the burst
	h.cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if isWrite(req.Method) {
				h.writes.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	var err error
	h.client, err = client.New(h.cfg, client.Options{Scheme: apis.Scheme()})
	return h, err
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func isWrite(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// parallel runs do(i) for i in [0, n) on workers goroutines and returns the errors joined.
func parallel(ctx context.Context, n, workers int, do func(ctx context.Context, i int) error) error {
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := do(ctx, i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// secretsPerNamespace spreads the unrelated Secrets over namespaces as a cluster's would be.
const secretsPerNamespace = 1000

// createSecrets creates n Secrets as `kubectl apply` leaves them: a few hundred bytes of data, and
// the same again in the last-applied-configuration annotation.
func (h *harness) createSecrets(ctx context.Context, n, workers int) error {
	for i := 0; i < (n+secretsPerNamespace-1)/secretsPerNamespace; i++ {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-secrets-%d", i)}}
		if err := h.client.Create(ctx, ns); err != nil {
			return err
		}
	}
	value := strings.Repeat("s3cr3t-", 40) // 280 bytes
	return parallel(ctx, n, workers, func(ctx context.Context, i int) error {
		name, ns := fmt.Sprintf("app-%05d", i), fmt.Sprintf("bench-secrets-%d", i/secretsPerNamespace)
		data := map[string][]byte{"password": []byte(fmt.Sprintf("%s%05d", value, i))}
		applied := fmt.Sprintf(`{"apiVersion":"v1","data":{"password":%q},"kind":"Secret","metadata":{"annotations":{},"name":%q,"namespace":%q},"type":"Opaque"}`,
			data["password"], name, ns)
		return h.client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{
				"kubectl.kubernetes.io/last-applied-configuration": applied,
			}},
			Type: corev1.SecretTypeOpaque,
			Data: data,
		})
	})
}

// release removes the finalizers of the namespace's remaining records.
func (h *harness) release(ctx context.Context, ns string, workers int) (int, error) {
	list := &v1alpha1.DNSRecordList{}
	if err := h.client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	return len(list.Items), parallel(ctx, len(list.Items), workers, func(ctx context.Context, i int) error {
		return client.IgnoreNotFound(h.client.Patch(ctx, &list.Items[i], patch))
	})
}
