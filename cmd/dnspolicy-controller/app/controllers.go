package app

import (
	"context"
	"fmt"
	"sync"
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
	"github.com/dnspolicy/dnspolicy-controller/providers/endpoint"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

// BackendNames lists every backend this binary can run, sorted (package builtin holds the list).
func BackendNames() []string { return builtin.Names() }

// DefaultBackendNames are the backends enabled without --providers: all but rfc2136 and webhook,
// whose Secrets name the address the controller connects to (builtin.Defaults).
func DefaultBackendNames() []string { return builtin.Defaults() }

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

// clusterID is the one reader of this cluster's ID, the UID of Namespace kube-system, for every
// controller that names the cluster: the policy controller's load-balanced leaf names, the record
// controller's owner leases, the DNS server's exports. It reads the ID once and keeps it, so the ID
// cannot change while the process runs; a failed read is tried again by the next caller.
type clusterID struct {
	reader client.Reader

	mu sync.Mutex
	id string
}

// Get returns the cluster ID, reading it the first time.
func (c *clusterID) Get(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.id != "" {
		return c.id, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	ns := &corev1.Namespace{}
	if err := c.reader.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", err
	}
	c.id = string(ns.UID)
	return c.id, nil
}

// AddControllers adds the enabled controllers to the manager.
func AddControllers(mgr ctrl.Manager, o Options, factory *providers.Factory, recordOpts dnsrecord.Options) error {
	cluster := &clusterID{reader: mgr.GetAPIReader()}
	if o.EnableRecordController {
		if err := addRecordController(mgr, o, factory, recordOpts, cluster); err != nil {
			return err
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
			ClusterID: cluster.Get,
			Recorder:  mgr.GetEventRecorder("dnspolicy-controller"),
			Options:   dnspolicy.DefaultOptions(),
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("dnspolicy controller: %w", err)
		}
	}
	if o.DNSServerAddress != "" {
		if err := addDNSServer(mgr, o, cluster); err != nil {
			return fmt.Errorf("dns server: %w", err)
		}
	}
	return nil
}

// addRecordController adds the DNSRecord controller with its publisher.
func addRecordController(mgr ctrl.Manager, o Options, factory *providers.Factory, recordOpts dnsrecord.Options, cluster *clusterID) error {
	recordOpts.NoSecretWatch = o.NoProviderSecretWatch
	recordOpts.KeepExpired = !o.OwnerLeases.Expiry
	recordOpts.MaxTTL = o.MaxTTL
	recordOpts.DelegationRole = o.DelegationRole
	recordOpts.Group = o.Group
	recordOpts.FailoverOrder, recordOpts.FailoverAfter, recordOpts.FailoverHoldDown = o.FailoverOrder, o.FailoverAfter, o.FailoverHoldDown
	recordOpts.Grants, recordOpts.GrantsAllBackends = o.Grants.Grants, o.Grants.AllBackends()
	r := &dnsrecord.Reconciler{
		Client:       mgr.GetClient(),
		SecretReader: mgr.GetAPIReader(),
		Factory:      factory,
		Recorder:     mgr.GetEventRecorder("dnsrecord-controller"),
		Options:      recordOpts,
		// The probes it makes accept any certificate (--insecure-health-checks).
		InsecureHealthChecks: o.InsecureHealthChecks,
		// A delegation primary writes delegating records into authoritative records through
		// Kuadrant's endpoint backend, as Kuadrant's primaries do.
		Authoritative: func(namespace, secret string) providers.Provider {
			return &endpoint.Authoritative{Client: mgr.GetClient(), Namespace: namespace, Secret: secret,
				Labels: func(root, _ string) map[string]string { return endpoint.AuthoritativeLabels(root) }}
		},
	}
	popts := publish.DefaultOptions()
	popts.Replan = r.Replan
	popts.Log = mgr.GetLogger().WithName("publish")
	if holder, err := cluster.Get(context.Background()); err != nil {
		// Without an ID this cluster cannot name its lease: it renews none, and withdraws no one.
		ctrl.Log.Error(err, "owner leases are off: cannot read the cluster ID (the UID of Namespace kube-system)")
	} else {
		every := o.OwnerLeases.Every
		if every == 0 {
			every = lease.DefaultEvery
		}
		popts.Leases = publish.Leases{Holder: holder, Every: every, Duration: o.OwnerLeases.Duration, Tolerance: lease.DefaultTolerance}
		r.Options.OwnerLease = lease.Lease{Holder: holder, Every: every, Duration: o.OwnerLeases.Duration}
		if len(o.FailoverOrder) > 0 {
			// Automatic failover: the lease and a member record are renewed in every zone, so
			// that the other groups' controllers can judge this one's group (docs/failover-groups.md).
			popts.Leases.Group, popts.Leases.Healthy = o.Group, r.Healthy
		}
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
	if o.DelegationRole == dnsrecord.DelegationRoleSecondary || o.ClusterSecretNamespace == "" {
		return nil
	}
	denied, err := clusterSecretsReadable(context.Background(), mgr.GetConfig(), o.ClusterSecretNamespace)
	if err != nil {
		return fmt.Errorf("remote clusters: %w", err)
	}
	if len(denied) > 0 {
		mgr.GetLogger().Error(nil, "other clusters are not read: this controller may not read the kubeconfig Secrets of --cluster-secret-namespace; bind the ClusterRole dnspolicy-controller-provider-secrets there (config/rbac/README.md) and restart it, or set the flag empty",
			"namespace", o.ClusterSecretNamespace, "deniedVerbs", denied)
		return nil
	}
	if err := addRemoteClusters(mgr, o, r, cluster); err != nil {
		return fmt.Errorf("remote clusters: %w", err)
	}
	return nil
}

// addDNSServer adds the embedded DNS server and the controller that feeds it.
func addDNSServer(mgr ctrl.Manager, o Options, cluster *clusterID) error {
	keys, err := o.DNSServer.tsigKeys(context.Background(), mgr.GetAPIReader())
	if err != nil {
		return err
	}
	sopts := o.dnsServerOptions(keys)
	sopts.Log = mgr.GetLogger().WithName("dnsserver")
	server, err := dnsserver.New(sopts)
	if err != nil {
		return err
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
	if r.Signing, err = o.signing(mgr); err != nil {
		return err
	}
	if len(r.Exports) > 0 || o.DNSServer.hasPeers() {
		// Exports name this cluster and carry its lease: without its ID there is neither.
		id, err := cluster.Get(context.Background())
		if err != nil {
			return fmt.Errorf("exports and peers need the cluster ID (the UID of Namespace kube-system): %w", err)
		}
		r.ClusterID = id
		if r.Peers, err = o.DNSServer.peerPool(keys, o.DNSServerAddress, o.OwnerLeases.Duration, r.PeersChanged, mgr.GetLogger().WithName("peers")); err != nil {
			return err
		}
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	return nil
}
