package dnsrecord

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/backends"
)

var (
	errSecretMissing = errors.New("provider secret missing")
	// errMultipleDefaults is not a missing Secret: one of them may well be the Secret the record
	// published with, so a deletion never releases on it (the user must say which).
	errMultipleDefaults = errors.New("several default provider secrets")
)

// providerSecret reads the record's provider Secret: spec.providerRef, else the one Secret of the
// namespace labelled as default provider. Errors name the namespace and Secret, never content.
func (r *Reconciler) providerSecret(ctx context.Context, rec *v1alpha1.DNSRecord) (*corev1.Secret, error) {
	if rec.Spec.ProviderRef != nil {
		s := &corev1.Secret{}
		err := r.SecretReader.Get(ctx, client.ObjectKey{Namespace: rec.Namespace, Name: rec.Spec.ProviderRef.Name}, s)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: secret %s/%s not found", errSecretMissing, rec.Namespace, rec.Spec.ProviderRef.Name)
		}
		return s, err
	}
	list := &corev1.SecretList{}
	if err := r.SecretReader.List(ctx, list, client.InNamespace(rec.Namespace), client.MatchingLabels{v1alpha1.DefaultProviderLabel: "true"}); err != nil {
		return nil, err
	}
	switch len(list.Items) {
	case 0:
		return nil, fmt.Errorf("%w: no providerRef and no secret labelled %s=true in namespace %s", errSecretMissing, v1alpha1.DefaultProviderLabel, rec.Namespace)
	case 1:
		return &list.Items[0], nil
	default:
		names := make([]string, len(list.Items))
		for i := range list.Items {
			names[i] = list.Items[i].Name
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w: %d secrets labelled %s=true in namespace %s (%s); label exactly one or set providerRef",
			errMultipleDefaults, len(names), v1alpha1.DefaultProviderLabel, rec.Namespace, strings.Join(names, ", "))
	}
}

// cachedBackend returns the backend built from the record's provider Secret when the Secret's current
// version, as the metadata watch knows it, is the one the backend was built from: the pass then
// needs no read of the Secret (without it, every pass of every record costs an API-server round
// trip). The watch lags the API server by moments; a Secret changed or deleted meanwhile is seen
// at the pass its watch event queues, as a change is without the cache. Anything the cache cannot
// answer (no watch, a Secret not yet seen, no default or several, a version never built) leaves it
// to providerSecret's direct read, whose errors are what the record reports.
func (r *Reconciler) cachedBackend(ctx context.Context, key types.NamespacedName, rec *v1alpha1.DNSRecord) (*backends.Backend, bool) {
	if r.Options.NoSecretWatch {
		return nil, false // no metadata watch, and no permission to start one
	}
	var meta *metav1.PartialObjectMetadata
	if rec.Spec.ProviderRef != nil {
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: rec.Namespace, Name: rec.Spec.ProviderRef.Name}, m); err != nil {
			return nil, false
		}
		meta = m
	} else {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
		if err := r.Client.List(ctx, list, client.InNamespace(rec.Namespace), client.MatchingLabels{v1alpha1.DefaultProviderLabel: "true"}); err != nil || len(list.Items) != 1 {
			return nil, false
		}
		meta = &list.Items[0]
	}
	return r.backends.Current(key, meta.UID, meta.ResourceVersion)
}

// secretEvents keeps the backend cache and the publish queues in step with the Secrets (a changed
// Secret's old backend and a deleted Secret's are dropped, with the publish queues built from them;
// records that used them keep the backend for clean-up) and queues the records of the namespace
// that publish with the Secret.
func (r *Reconciler) secretEvents() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q queue) {
			r.enqueueRecordsOf(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			r.backends.SecretChanged(e.ObjectNew.GetUID(), e.ObjectNew.GetResourceVersion())
			if e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion() {
				// The queues built with the old version stop renewing with its credentials; the
				// records queued here build new ones with the new version.
				r.Publisher.Drop(backends.AccountOf(e.ObjectNew))
			}
			r.enqueueRecordsOf(ctx, e.ObjectNew, q)
			if isDefault(e.ObjectOld) != isDefault(e.ObjectNew) {
				// The default provider moved: the records that had it publish with another now.
				r.enqueueRecordsOf(ctx, e.ObjectOld, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q queue) {
			r.backends.SecretChanged(e.Object.GetUID(), "")
			// Nothing renews with a deleted Secret's credentials; a record deleted after it still
			// withdraws with them (connectForDeletion), through a queue it then releases.
			r.Publisher.Drop(backends.AccountOf(e.Object))
			r.enqueueRecordsOf(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q queue) {
			r.enqueueRecordsOf(ctx, e.Object, q)
		},
	}
}

// enqueueRecordsOf queues the records of the Secret's namespace that publish with it: those naming it
// in providerRef, and, when it is labelled as the namespace's default provider, those without one.
func (r *Reconciler) enqueueRecordsOf(ctx context.Context, secret client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	list := &v1alpha1.DNSRecordList{}
	if err := r.Client.List(ctx, list, client.InNamespace(secret.GetNamespace())); err != nil {
		return
	}
	def := isDefault(secret)
	for i := range list.Items {
		rec := &list.Items[i]
		if ref := rec.Spec.ProviderRef; (ref != nil && ref.Name == secret.GetName()) || (ref == nil && def) {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(rec)})
		}
	}
}

func isDefault(secret client.Object) bool {
	return secret.GetLabels()[v1alpha1.DefaultProviderLabel] == "true"
}
