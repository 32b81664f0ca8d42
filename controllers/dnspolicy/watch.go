package dnspolicy

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/internal/pass"
)

// SetupWithManager registers the controller. Policies and records are watched from the start; the
// Gateway watch starts when the Gateway API CRDs are installed, at once or whenever they appear,
// so the controller runs (and says what is missing) in a cluster that does not have them yet.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	r.backoff = pass.NewBackoff(r.Options.MinBackoff, r.Options.MaxBackoff)
	// kick asks for a pass of a policy's Gateway key; used once the Gateway API appears.
	kick := make(chan event.GenericEvent)
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("dnspolicy").
		// Status writes do not change the generation, so our own status updates never trigger a pass.
		Watches(&dnsv1.DNSPolicy{}, policyHandler(), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1alpha1.DNSRecord{}, handler.EnqueueRequestsFromMapFunc(recordGateway), builder.WithPredicates(recordChanged())).
		WatchesRawSource(source.Channel(kick, policyHandler())).
		Build(r)
	if err != nil {
		return err
	}
	gateways := source.Kind(mgr.GetCache(), client.Object(&gatewayapiv1.Gateway{}),
		handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
		}),
		predicate.ResourceVersionChangedPredicate{})
	if gatewayAPIInstalled(mgr.GetRESTMapper()) {
		r.gatewayAPI.Store(true)
		return c.Watch(gateways)
	}
	return mgr.Add(&gatewayAPIWatch{
		r: r, controller: c, gateways: gateways, mapper: mgr.GetRESTMapper(), reader: mgr.GetClient(),
		kick: kick, every: r.Options.GatewayAPIPoll,
	})
}

// gatewayAPIInstalled reports whether the API server serves Gateways of gateway.networking.k8s.io/v1.
func gatewayAPIInstalled(mapper meta.RESTMapper) bool {
	_, err := mapper.RESTMapping(schema.GroupKind{Group: gatewayapiv1.GroupName, Kind: "Gateway"}, gatewayapiv1.GroupVersion.Version)
	return err == nil
}

// gatewayAPIWatch waits for the Gateway API CRDs, starts the Gateway watch, then asks for a pass of
// every policy, so those that reported MissingDependency are judged again without a restart.
type gatewayAPIWatch struct {
	r          *Reconciler
	controller controller.Controller
	gateways   source.Source
	mapper     meta.RESTMapper
	reader     client.Reader
	kick       chan<- event.GenericEvent
	every      time.Duration
}

// Start implements manager.Runnable. It returns once the watch runs.
func (w *gatewayAPIWatch) Start(ctx context.Context) error {
	t := time.NewTicker(w.every)
	defer t.Stop()
	for !gatewayAPIInstalled(w.mapper) {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	if err := w.controller.Watch(w.gateways); err != nil {
		return err
	}
	w.r.gatewayAPI.Store(true)
	log.FromContext(ctx).Info("Gateway API installed: watching Gateways")
	policies := &dnsv1.DNSPolicyList{}
	if err := w.reader.List(ctx, policies); err != nil {
		return err
	}
	for i := range policies.Items {
		select {
		case w.kick <- event.GenericEvent{Object: &policies.Items[i]}:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// policyHandler asks for a pass of the Gateway a policy targets, and of the one it targeted before
// an edit, which must withdraw the policy's records and affected conditions.
func policyHandler() handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], o client.Object) {
		if p, ok := o.(*dnsv1.DNSPolicy); ok {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: string(p.Spec.TargetRef.Name)}})
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.Object)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.ObjectOld)
			enqueue(q, e.ObjectNew)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.Object)
			policyPasses.DeleteLabelValues(e.Object.GetNamespace(), e.Object.GetName())
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, e.Object)
		},
	}
}

// recordGateway maps a record this controller wrote to its Gateway's key.
func recordGateway(_ context.Context, o client.Object) []reconcile.Request {
	gw := o.GetLabels()[GatewayLabel]
	rec, ok := o.(*v1alpha1.DNSRecord)
	if gw == "" || !ok || policyOf(rec) == nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: gw}}}
}

// recordChanged passes the record changes a policy's status or records depend on, not the record
// controller's bookkeeping (write counters, re-check intervals), which would wake every policy on
// every record pass.
func recordChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, okOld := e.ObjectOld.(*v1alpha1.DNSRecord)
			cur, okNew := e.ObjectNew.(*v1alpha1.DNSRecord)
			if !okOld || !okNew {
				return false
			}
			return old.Generation != cur.Generation ||
				!equality.Semantic.DeepEqual(old.DeletionTimestamp, cur.DeletionTimestamp) ||
				!equality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
				!equality.Semantic.DeepEqual(old.OwnerReferences, cur.OwnerReferences) ||
				!equality.Semantic.DeepEqual(old.Status.Conditions, cur.Status.Conditions) ||
				!equality.Semantic.DeepEqual(old.Status.HealthCheck, cur.Status.HealthCheck)
		},
	}
}
