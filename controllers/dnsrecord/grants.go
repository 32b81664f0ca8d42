package dnsrecord

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/backends"
	"github.com/dnspolicy/dnspolicy-controller/pkg/grant"
)

// Grants (package grant). They gate the records of a backend whose zones the embedded DNS server
// serves (one that hosts zones in authoritative records: anyone may write its Secret, which holds
// no credential), and every backend with GrantsAllBackends. A gated record with any name its
// namespace is not granted publishes nothing: it gets no finalizer and writes nothing, so its
// deletion withdraws nothing either (it could otherwise withdraw what an owner ID it borrowed
// published). Authoritative records a backend serves are the zone itself: the DNS server's side
// filters them; those published into a zone (a delegation primary's) are gated as any record.

// Namespaces' labels are read only when a grant selects namespaces by label; the rights to list
// and watch Namespaces are granted apart, and only then (config/rbac/README.md).

// grantsApply says whether grants gate what the record publishes with this backend.
func (r *Reconciler) grantsApply(b *backends.Backend) bool {
	return r.Options.GrantsAllBackends || b.Hosts != nil
}

// checkGrants refuses a record with a name its namespace is not granted, before anything is
// published. It runs once the backend is known, before a zone is looked for.
func (r *Reconciler) checkGrants(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	rec := s.record
	if (isAuthoritative(rec) && s.backend.Hosts != nil) || !r.grantsApply(s.backend) {
		return ctrl.Result{}, false, nil
	}
	uncovered, err := r.ungranted(ctx, rec)
	if err != nil {
		return ctrl.Result{}, true, err
	}
	if len(uncovered) == 0 {
		return ctrl.Result{}, false, nil
	}
	msg := grant.Message(rec.Namespace, uncovered) + "; nothing of this record is published"
	r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonNotGranted, msg)
	if r.Options.Grants.UsesSelector() {
		// A namespace's labels may change what is granted without a change to the record.
		return ctrl.Result{RequeueAfter: r.Options.MaxBackoff}, true, nil
	}
	// Grants change only with the controller's flags: retrying changes nothing.
	return ctrl.Result{}, true, reconcile.TerminalError(fmt.Errorf("%s", msg))
}

// ungranted returns the record's names its namespace is not granted.
func (r *Reconciler) ungranted(ctx context.Context, rec *v1alpha1.DNSRecord) ([]string, error) {
	var labels map[string]string
	if r.Options.Grants.UsesSelector() {
		ns := &metav1.PartialObjectMetadata{}
		ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		if err := r.Client.Get(ctx, client.ObjectKey{Name: rec.Namespace}, ns); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("reading the labels of namespace %s: %w", rec.Namespace, err)
		}
		labels = ns.Labels
	}
	names := make([]string, 0, len(rec.Spec.Endpoints)+1)
	if rec.Spec.RootHost != "" {
		names = append(names, rec.Spec.RootHost)
	}
	for _, ep := range rec.Spec.Endpoints {
		if ep != nil {
			names = append(names, ep.DNSName)
		}
	}
	return r.Options.Grants.Uncovered(rec.Namespace, labels, names), nil
}
