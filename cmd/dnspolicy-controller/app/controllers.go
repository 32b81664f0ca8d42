package app

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dnspolicy/dnspolicy-controller/controllers/dnshealthcheckprobe"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnspolicy"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/publish"
	dnsservercontroller "github.com/dnspolicy/dnspolicy-controller/controllers/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/prober"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/builtin"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

// BackendNames lists every backend this binary can run, sorted (package builtin holds the list).
func BackendNames() []string { return builtin.Names() }

// NewFactory registers the enabled backends (--providers), honouring provider Secrets' endpoint
// overrides when the options allow (--allow-provider-endpoint-override). store holds the inmemory
// backend's zones.
func NewFactory(o Options, store *inmemory.Store) (*providers.Factory, error) {
	f, err := builtin.NewFactory(o.Providers, store)
	if err != nil {
		return nil, fmt.Errorf("--providers: %w", err)
	}
	f.AllowEndpointOverride(o.AllowProviderEndpointOverride)
	return f, nil
}

// RBAC of the manager itself (leader election); each controller's markers sit in its package.
// The Lease lives in the controller's own namespace ("system" is replaced by kustomize and the chart),
// so this is a Role there, not a ClusterRole.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=system,resources=leases,verbs=get;list;watch;create;update;patch;delete

// clusterID is the UID of Namespace kube-system, which identifies this cluster (as the policy
// controller's leaf names do).
func clusterID(reader client.Reader) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{}
	if err := reader.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", err
	}
	return string(ns.UID), nil
}

// AddControllers adds the enabled controllers to the manager.
func AddControllers(mgr ctrl.Manager, o Options, factory *providers.Factory, recordOpts dnsrecord.Options) error {
	if o.EnableRecordController {
		recordOpts.NoSecretWatch = o.NoProviderSecretWatch
		recordOpts.KeepExpired = !o.OwnerLeases.Expiry
		recordOpts.MaxTTL = o.MaxTTL
		recordOpts.Grants, recordOpts.GrantsAllBackends = o.Grants.Grants, o.Grants.AllBackends()
		r := &dnsrecord.Reconciler{
			Client:       mgr.GetClient(),
			SecretReader: mgr.GetAPIReader(),
			Factory:      factory,
			Recorder:     mgr.GetEventRecorder("dnsrecord-controller"),
			Options:      recordOpts,
			// The probes it makes accept any certificate (--insecure-health-checks).
			InsecureHealthChecks: o.InsecureHealthChecks,
		}
		popts := publish.DefaultOptions()
		popts.Replan = r.Replan
		popts.Log = mgr.GetLogger().WithName("publish")
		if holder, err := clusterID(mgr.GetAPIReader()); err != nil {
			// Without an ID this cluster cannot name its lease: it renews none, and withdraws no one.
			ctrl.Log.Error(err, "owner leases are off: cannot read the cluster ID (the UID of Namespace kube-system)")
		} else {
			every := o.OwnerLeases.Every
			if every == 0 {
				every = lease.DefaultEvery
			}
			popts.Leases = publish.Leases{Holder: holder, Every: every, Duration: o.OwnerLeases.Duration, Tolerance: lease.DefaultTolerance}
		}
		r.Publisher = publish.New(popts)
		// A stopped manager stops renewing: its leases age and expire at the other clusters.
		if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			<-ctx.Done()
			r.Publisher.Close()
			return nil
		})); err != nil {
			return err
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("dnsrecord controller: %w", err)
		}
	}
	if o.EnableRecordController && !o.NoHealthProbeController {
		// The probes' side of health checks runs with the record side that creates the probes.
		popts := dnshealthcheckprobe.DefaultOptions()
		if o.MaxConcurrentHealthChecks > 0 {
			popts.Workers = o.MaxConcurrentHealthChecks
		}
		popts.Targets = prober.TargetRules{Allowed: o.HealthCheckAllowedCIDRs, Denied: o.HealthCheckDeniedCIDRs}
		p := &dnshealthcheckprobe.Reconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Recorder:  mgr.GetEventRecorder("dnshealthcheckprobe-controller"),
			Options:   popts,
		}
		if err := p.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("dnshealthcheckprobe controller: %w", err)
		}
	}
	if o.EnableDNSPolicyController {
		r := &dnspolicy.Reconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Recorder:  mgr.GetEventRecorder("dnspolicy-controller"),
			Options:   dnspolicy.DefaultOptions(),
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("dnspolicy controller: %w", err)
		}
	}
	if o.DNSServerAddress != "" {
		keys, err := o.DNSServer.tsigKeys(context.Background(), mgr.GetAPIReader())
		if err != nil {
			return fmt.Errorf("dns server: %w", err)
		}
		sopts := o.dnsServerOptions(keys)
		sopts.Log = mgr.GetLogger().WithName("dnsserver")
		server, err := dnsserver.New(sopts)
		if err != nil {
			return fmt.Errorf("dns server: %w", err)
		}
		r := &dnsservercontroller.Reconciler{
			Client:        mgr.GetClient(),
			Server:        server,
			Nameservers:   o.DNSNameservers,
			Secondaries:   o.DNSSecondaries,
			Grants:        o.Grants.Grants,
			Exports:       o.DNSServer.exportedZones(),
			LeaseEvery:    o.OwnerLeases.Every,
			LeaseDuration: o.OwnerLeases.Duration,
		}
		if r.LeaseEvery <= 0 {
			r.LeaseEvery = lease.DefaultEvery
		}
		if len(r.Exports) > 0 || o.DNSServer.hasPeers() {
			// Exports name this cluster and carry its lease: without its ID there is neither.
			id, err := clusterID(mgr.GetAPIReader())
			if err != nil {
				return fmt.Errorf("dns server: exports and peers need the cluster ID (the UID of Namespace kube-system): %w", err)
			}
			r.ClusterID = id
			if r.Peers, err = o.DNSServer.peerPool(keys, o.DNSServerAddress, o.OwnerLeases.Duration, r.PeersChanged, mgr.GetLogger().WithName("peers")); err != nil {
				return fmt.Errorf("dns server: %w", err)
			}
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("dns server: %w", err)
		}
	}
	return nil
}
