package dnsserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// namespaceLabels are a namespace's labels, read from the manager's cache, when a grant selects
// namespaces by label; otherwise nil, and no namespace is read.
func (r *Reconciler) namespaceLabels(ctx context.Context, name string) (map[string]string, error) {
	if !r.Grants.UsesSelector() {
		return nil, nil
	}
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the labels of namespace %s: %w", name, err)
	}
	return ns.Labels, nil
}
