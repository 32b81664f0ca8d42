//go:build integration

package app

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// kubectlApply creates or updates a Secret as client-side `kubectl apply` does: the manifest, data
// included, goes into the last-applied annotation, written under kubectl's field manager.
func kubectlApply(ctx context.Context, t *testing.T, c client.Client, s *corev1.Secret) {
	t.Helper()
	manifest := s.DeepCopy()
	manifest.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}
	b, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	s.Annotations = map[string]string{lastApplied: string(b)}
	current := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(s), current); err == nil {
		current.Annotations, current.Labels, current.Data = s.Annotations, s.Labels, s.Data
		err = c.Update(ctx, current, client.FieldOwner("kubectl-client-side-apply"))
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := c.Create(ctx, s, client.FieldOwner("kubectl-client-side-apply")); err != nil {
		t.Fatal(err)
	}
}

// The manager's cache of Secrets, which the record controller fills cluster-wide through its
// metadata-only watch, holds no Secret content: neither the data that `kubectl apply` copies into
// the last-applied annotation, nor managedFields, whether the Secret existed before the manager
// started, was created after, was updated, or was written by server-side apply. What the watch
// needs (name, namespace, labels, uid, resourceVersion) is kept.
func TestSecretCacheHoldsNoSecretData(t *testing.T) {
	ctx := t.Context()
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "secretcache-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	// Each value is unique, so finding it anywhere in the cache can only mean it leaked. values holds
	// the latest of each Secret, leaks every value ever written.
	values := map[string]string{}
	var leaks []string
	value := func(name string) string {
		v := "credential-" + rand.String(24)
		values[name] = v
		// The data of a manifest is base64 in JSON, as in the last-applied annotation.
		leaks = append(leaks, v, base64.StdEncoding.EncodeToString([]byte(v)))
		return v
	}
	secret := func(name string, labels map[string]string) *corev1.Secret {
		v := value(name)
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name, Labels: labels},
			Type:       v1alpha1.SecretTypeInMemory,
			Data:       map[string][]byte{"token": []byte(v)},
		}
	}
	defaultLabel := map[string]string{v1alpha1.DefaultProviderLabel: "true", "team": "dns"}

	// Before the manager starts: seen by its initial list.
	kubectlApply(ctx, t, env.Client, secret("applied-before", defaultLabel))
	ssaValue := value("server-side")
	if err := env.Client.Apply(ctx, corev1ac.Secret("server-side", ns.Name).
		WithLabels(map[string]string{"team": "dns"}).
		WithType(v1alpha1.SecretTypeInMemory).
		WithData(map[string][]byte{"token": []byte(ssaValue)}).
		// As an earlier client-side apply would have left it.
		WithAnnotations(map[string]string{lastApplied: `{"data":{"token":"` + base64.StdEncoding.EncodeToString([]byte(ssaValue)) + `"}}`}),
		client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}

	o := DefaultOptions()
	o.MetricsBindAddress, o.HealthProbeBindAddress = "0", "0"
	o.EnableDNSPolicyController = false // the record controller is the one that watches Secrets
	mgr, err := NewManager(env.Config, o)
	if err != nil {
		t.Fatal(err)
	}
	factory, err := NewFactory(o, inmemory.NewStore())
	if err != nil {
		t.Fatal(err)
	}
	if err := AddControllers(mgr, o, factory, dnsrecord.DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(mctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })

	// The informer the record controller's metadata watch uses (one per type and GVK).
	partial := &metav1.PartialObjectMetadata{}
	partial.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	informer, err := mgr.GetCache().GetInformer(ctx, partial)
	if err != nil {
		t.Fatal(err)
	}
	store := informer.(toolscache.SharedIndexInformer).GetStore()

	// After it started: seen by the watch, as a create and as an update.
	kubectlApply(ctx, t, env.Client, secret("applied-after", nil))
	kubectlApply(ctx, t, env.Client, secret("applied-before", defaultLabel)) // a second apply with new data

	// The server holds what the cache must not: otherwise this test would prove nothing.
	want := map[string]*corev1.Secret{}
	for name := range values {
		s := &corev1.Secret{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: name}, s); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(s.Annotations[lastApplied], base64.StdEncoding.EncodeToString([]byte(values[name]))) || len(s.ManagedFields) == 0 {
			t.Fatalf("Secret %s on the server lacks the last-applied data or managedFields: %v %v", name, s.Annotations, s.ManagedFields)
		}
		want[name] = s
	}

	testenv.Eventually(t, 30*time.Second, func() string {
		for name, s := range want {
			item, ok, err := store.GetByKey(ns.Name + "/" + name)
			if err != nil || !ok {
				return fmt.Sprintf("Secret %s not in the cache (%v)", name, err)
			}
			if rv := item.(*metav1.PartialObjectMetadata).ResourceVersion; rv != s.ResourceVersion {
				return fmt.Sprintf("Secret %s cached at version %s, server at %s", name, rv, s.ResourceVersion)
			}
		}
		return ""
	})
	for _, item := range store.List() {
		obj, ok := item.(*metav1.PartialObjectMetadata)
		if !ok {
			t.Fatalf("the metadata informer holds a %T", item)
		}
		b, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, leak := range []string{"last-applied-configuration", "managedFields", `"data"`} {
			if strings.Contains(string(b), leak) {
				t.Errorf("cached Secret %s/%s holds %s: %s", obj.Namespace, obj.Name, leak, b)
			}
		}
		for _, v := range leaks {
			if strings.Contains(string(b), v) {
				t.Errorf("cached Secret %s/%s holds a Secret value: %s", obj.Namespace, obj.Name, b)
			}
		}
		if len(obj.Annotations) != 0 || len(obj.ManagedFields) != 0 {
			t.Errorf("cached Secret %s/%s keeps annotations %v or managedFields %v", obj.Namespace, obj.Name, obj.Annotations, obj.ManagedFields)
		}
		if s := want[obj.Name]; obj.Namespace == ns.Name && s != nil {
			if obj.UID != s.UID || obj.ResourceVersion != s.ResourceVersion || fmt.Sprint(obj.Labels) != fmt.Sprint(s.Labels) {
				t.Errorf("cached Secret %s lost what the watch needs: uid %s rv %s labels %v, server %s %s %v",
					obj.Name, obj.UID, obj.ResourceVersion, obj.Labels, s.UID, s.ResourceVersion, s.Labels)
			}
		}
	}
}
