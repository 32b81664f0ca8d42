package app

import (
	"context"
	"fmt"
	"maps"
	"net/http"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/dnspolicy/dnspolicy-controller/apis"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnshealthcheckprobe"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

// Scheme holds every type the controllers read or write.
func Scheme() *runtime.Scheme { return apis.Scheme() }

// Logger builds the logger the options ask for.
func (o Options) Logger() logr.Logger {
	level, _ := o.zapLevel() // validated by Parse
	opts := []zap.Opts{zap.Level(level)}
	if o.LogFormat == "console" {
		opts = append(opts, zap.ConsoleEncoder())
	} else {
		opts = append(opts, zap.JSONEncoder())
	}
	return zap.New(opts...)
}

// RESTConfig loads the cluster connection: --kubeconfig, else in-cluster, $KUBECONFIG, ~/.kube/config.
func (o Options) RESTConfig() (*rest.Config, error) {
	if o.Kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	}
	return ctrl.GetConfig()
}

// metricsOptions serves metrics over plain HTTP, or with --metrics-secure over HTTPS (a self-signed
// certificate the process makes at start) to callers whose bearer token the API server authenticates
// and authorizes for "get" on the /metrics non-resource URL. Metric labels name tenants' namespaces
// and records, so a deployment serves them only to whom the cluster's RBAC allows. Asking the API
// server takes creating tokenreviews and subjectaccessreviews: a ClusterRole of its own
// (config/rbac/base/metrics_auth_role.yaml), bound cluster-wide in every install mode, since the
// namespaced one binds the generated rules per namespace only; scrapers are bound to the
// metrics-reader ClusterRole.
func (o Options) metricsOptions() metricsserver.Options {
	m := metricsserver.Options{BindAddress: o.MetricsBindAddress}
	if o.MetricsSecure {
		m.SecureServing = true
		m.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return m
}

// NewManager builds the manager with its health, readiness and metrics endpoints. Controllers are
// added by the caller.
func NewManager(cfg *rest.Config, o Options) (manager.Manager, error) {
	if cfg.QPS == 0 {
		// As ctrl.GetConfig does: no client-side throttling (client-go's default is 5 requests a
		// second), the API server's priority and fairness protects it. A config from elsewhere
		// (the local control plane, a test) would otherwise throttle a burst of records for seconds.
		cfg = rest.CopyConfig(cfg)
		cfg.QPS = -1
	}
	mopts := ctrl.Options{
		Scheme:                  Scheme(),
		Logger:                  o.Logger(),
		Metrics:                 o.metricsOptions(),
		HealthProbeBindAddress:  o.HealthProbeBindAddress,
		PprofBindAddress:        o.PprofBindAddress,
		LeaderElection:          o.LeaderElect,
		LeaderElectionID:        o.LeaderElectionID,
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		LeaseDuration:           &o.LeaseDuration,
		// Releasing on a clean stop lets the next replica take over at once instead of waiting out
		// the lease.
		LeaderElectionReleaseOnCancel: true,
	}
	mopts.Cache = cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}:      {Transform: StripSecretMetadata},
		&corev1.Node{}:        {Transform: dnshealthcheckprobe.StripNode},
		&v1alpha1.DNSRecord{}: {Transform: StripRecordMetadata},
	}}
	if len(o.WatchNamespaces) > 0 {
		mopts.Cache.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.WatchNamespaces {
			mopts.Cache.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(cfg, mopts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	// Ready once the informer caches have synced, so a rollout does not route to a replica that
	// cannot yet see the objects it reconciles.
	if err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return fmt.Errorf("informer caches not synced")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return mgr, nil
}

// StripSecretMetadata is the cache transform of every Secret informer. The record controller watches
// Secrets cluster-wide, metadata only, to find the records a provider Secret change concerns; but
// metadata is not harmless: `kubectl apply` leaves the whole Secret, data included, in the
// kubectl.kubernetes.io/last-applied-configuration annotation, other tools keep credentials in
// annotations too, and managedFields can be large. So annotations and managedFields are dropped
// before an object enters the cache; what the watch needs (name, namespace, labels, uid,
// resourceVersion) stays. A structured Secret, were one ever cached, would lose them as well.
func StripSecretMetadata(in any) (any, error) {
	if obj, err := meta.Accessor(in); err == nil {
		obj.SetAnnotations(nil)
		obj.SetManagedFields(nil)
	}
	return in, nil
}

// lastApplied is the annotation client-side `kubectl apply` copies the whole manifest into.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// StripRecordMetadata is the cache transform of the DNSRecord informer, which holds every record of
// the cluster (10,000 in the scale benchmark) for the record and DNS server controllers. Two parts
// of a record's metadata are copies nothing here reads: the fields each managedFields entry lists
// (FieldsV1: for a record the controller has published, a tree naming every status field, as large
// as a small record's spec), and the spec again in kubectl's last-applied annotation. Both are
// dropped before the record enters the cache. Each entry's manager, operation, subresource and time
// stay: the DNS server takes a zone's serial from them. Nothing writes a record back whole from the
// cache (every write is a patch), so the server's copies are untouched.
func StripRecordMetadata(in any) (any, error) {
	rec, ok := in.(*v1alpha1.DNSRecord)
	if !ok {
		return in, nil
	}
	if _, ok := rec.Annotations[lastApplied]; ok {
		rec.Annotations = maps.Clone(rec.Annotations)
		delete(rec.Annotations, lastApplied)
	}
	for i := range rec.ManagedFields {
		rec.ManagedFields[i].FieldsType, rec.ManagedFields[i].FieldsV1 = "", nil
	}
	return rec, nil
}

// Run builds the manager with the enabled controllers and runs it until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	mgr, err := NewManager(cfg, o)
	if err != nil {
		return err
	}
	factory, err := NewFactory(o, inmemory.NewStore())
	if err != nil {
		return err
	}
	if err := AddControllers(mgr, o, factory, dnsrecord.DefaultOptions()); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
