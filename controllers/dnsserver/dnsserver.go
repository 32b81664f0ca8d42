// Package dnsserver feeds the embedded authoritative DNS server (pkg/dnsserver) from the API
// server: a zone is the union of the authoritative DNSRecords labelled with its name (DESIGN 4b) in
// every namespace, whoever wrote them, our coredns backend or Kuadrant's dns-operator, filtered by
// the administrator's grants (package grant).
//
// Tenancy: any namespace can create a DNSRecord with the authoritative labels, and any Secret, so
// neither proves anything; only grants, which no tenant object can change, do. A zone is served
// only when some namespace holding its records has a grant covering the zone's apex: a tenant
// cannot declare a zone nested in another's to shadow names it was not granted. Within a served
// zone each endpoint is served only when a grant of its record's namespace covers its name. The
// zone's apex NS and SOA come from the server's configuration and never from records. Every
// authoritative record of the zone gets a Served condition saying whether, and how much of it, is
// served, and why not.
//
// Zones listed for DNSSEC are signed with keys kept in a Secret per zone in the controller's
// namespace, made on first use and moved along their rollovers here (dnssec.go, package dnssec);
// their records get a Signed condition naming the keys and the DS the parent should hold.
//
// Every replica runs it, leader or not: each serves the same answers from the same objects. Because
// the data lives in the API server, a restarted server serves again as soon as its cache has synced.
package dnsserver

import (
	"context"
	"errors"
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/grant"
	"github.com/dnspolicy/dnspolicy-controller/pkg/peers"
)

// +kubebuilder:rbac:groups=kuadrant.io,resources=dnsrecords,verbs=get;list;watch
// +kubebuilder:rbac:groups=kuadrant.io,resources=dnsrecords/status,verbs=get;patch
// Namespaces' labels are read, and watched, only when a grant selects namespaces by label: the
// list and watch on Namespaces that needs is granted apart from these markers, and only then
// (config/rbac/README.md), so that no install without such grants may list Namespaces.

// The Served condition of an authoritative record, owned by this controller (server-side apply
// with FieldOwner, so it never overwrites the record controller's conditions).
const (
	ConditionServed = "Served"
	// ReasonServed: every endpoint of the record is served.
	ReasonServed = "Served"
	// ReasonRecordsRefused: some endpoints or record sets cannot be served (the message says which
	// and why); the rest are.
	ReasonRecordsRefused = "RecordsRefused"
	// ReasonNotGranted: no grant covers the record's names for its namespace (or no namespace of
	// the zone has a grant for its apex); nothing of it is served.
	ReasonNotGranted = v1alpha1.ReasonNotGranted
	// ReasonZoneError: the zone could not be built at all (the server's own configuration is wrong).
	ReasonZoneError = "ZoneError"

	// ConditionPeers, on the authoritative records of a zone with peers (other clusters' servers
	// whose exports are merged in): whether every peer is live.
	ConditionPeers = "Peers"
	// ReasonPeersLive: every peer's export is merged (the message names peers whose last pull
	// failed but whose lease has not run out).
	ReasonPeersLive = "PeersLive"
	// ReasonPeerStale: a peer's export could not be pulled, or its lease did not change, for its
	// lease duration; its owners are withdrawn where live owners still claim.
	ReasonPeerStale = "PeerStale"
	// ReasonPeerRefused: no peer is stale, but a peer's export is left out of the merge for what it
	// claims: an owner or the name of this cluster, or what another peer claimed first.
	ReasonPeerRefused = "PeerRefused"

	fieldOwner = "dnspolicy-dnsserver"
	// maxMessageReasons bounds how many refusals a condition message lists.
	maxMessageReasons = 5
)

// Reconciler serves one zone per reconcile request; the request's Name is the zone name.
type Reconciler struct {
	// Client reads DNSRecords from the manager's cache and writes their Served condition.
	Client client.Client
	// Server is the DNS server the zones go to. SetupWithManager starts and stops it with the manager.
	Server *dnsserver.Server
	// Nameservers are the NS targets of every zone; empty means ns1.<zone>.
	Nameservers []string
	// Secondaries are host:port addresses to NOTIFY, by zone name.
	Secondaries map[string][]string
	// Grants say which namespaces may serve which names; nothing is served without one.
	Grants grant.Grants

	// Peers, when set, pulls the exports of other clusters' servers: a zone with peers is served
	// merged from this cluster's records and theirs (package peers). PeersChanged must be its
	// Options.Changed.
	Peers *peers.Pool
	// Exports are the zones whose export (what this cluster publishes, with its lease) is offered
	// to other clusters' servers; a zone with peers is always exported.
	Exports []string
	// ClusterID names this cluster in exports (the UID of kube-system); exports need it.
	ClusterID string
	// Signing, when set, signs its zones (DNSSEC) with keys kept in Secrets.
	Signing *Signing

	// LeaseEvery and LeaseDuration are the export's lease: renewed every LeaseEvery, and judged
	// gone by peers after LeaseDuration without change.
	LeaseEvery, LeaseDuration time.Duration

	// peerEvents carries PeersChanged to the controller.
	peerEvents chan event.GenericEvent
	// versions are, by zone, the last export's version and content (exportVersion); under mu.
	mu       sync.Mutex
	versions map[string]exportVersion
}

// SetupWithManager registers the server and the controller that feeds it. Neither needs leadership:
// every replica answers queries.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	logger := mgr.GetLogger().WithName("dnsserver")
	if err := mgr.Add(&server{Server: r.Server, log: logger}); err != nil {
		return err
	}
	if err := metrics.Registry.Register(r.Server.Collector()); err != nil {
		// Only a second server in one process (tests running several managers) gets here; the
		// first one's metrics are the ones exported.
		if !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
			return err
		}
		logger.Info("DNS server metrics already registered by another server in this process")
	}
	if r.Signing != nil {
		if err := registerSigningMetrics(); err != nil {
			return err
		}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("dnsserver").
		// A record's zone label may change; the map function sees the old object too, so the zone
		// it left is served again without it.
		Watches(&v1alpha1.DNSRecord{}, handler.EnqueueRequestsFromMapFunc(zoneOf), builder.WithPredicates(servedChange)).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false), MaxConcurrentReconciles: 4})
	if r.Peers != nil {
		if r.peerEvents == nil {
			r.peerEvents = make(chan event.GenericEvent, 64)
		}
		b = b.WatchesRawSource(source.Channel(r.peerEvents, handler.EnqueueRequestsFromMapFunc(zoneOf)))
		// Every replica pulls: each serves the merged zone.
		if err := mgr.Add(pullers{r.Peers}); err != nil {
			return err
		}
		if err := metrics.Registry.Register(r.Peers.Collector()); err != nil && !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
			return err
		}
	}
	if r.Grants.UsesSelector() {
		// A namespace's labels decide which selector grants are its: a change re-serves the zones
		// it holds records of. Metadata only, as the labels are all that is read.
		b = b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.zonesOfNamespace), builder.OnlyMetadata,
			builder.WithPredicates(labelsChanged))
	}
	return b.Complete(r)
}

// servedChange passes the events of authoritative records that can change what a zone serves or
// what this controller must write: a record created or deleted; an update of one that is
// authoritative before or after it, that changed its spec (generation), its authoritative or zone
// label, or took the Served condition away (the record controller patches the status of
// authoritative records whole, and one that read the record before this controller wrote the
// condition writes it without). Status writes and other metadata (the record controller's finalizer
// and provider label) change nothing served, and building a zone of a large record again for them
// cost as much memory as the first build.
var servedChange = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return authoritative(e.Object) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return authoritative(e.Object) },
	GenericFunc: func(e event.GenericEvent) bool { return authoritative(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		if !authoritative(e.ObjectOld) && !authoritative(e.ObjectNew) {
			return false
		}
		held := func(obj client.Object, condition string) bool {
			rec, ok := obj.(*v1alpha1.DNSRecord)
			return ok && conditions.Get(rec.Status.Conditions, condition) != nil
		}
		taken := func(condition string) bool { return held(e.ObjectOld, condition) && !held(e.ObjectNew, condition) }
		label := func(key string) bool { return e.ObjectOld.GetLabels()[key] != e.ObjectNew.GetLabels()[key] }
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			label(v1alpha1.AuthoritativeRecordLabel) || label(v1alpha1.CoreDNSZoneNameLabel) ||
			taken(ConditionServed) || taken(ConditionSigned)
	},
}

func authoritative(obj client.Object) bool {
	return obj.GetLabels()[v1alpha1.AuthoritativeRecordLabel] == "true"
}

// PeersChanged asks for a zone to be merged and served again: a peer's export changed, or a peer
// turned stale or live. It never blocks: a zone already queued is merged once.
func (r *Reconciler) PeersChanged(zone string) {
	if r.peerEvents == nil {
		return
	}
	obj := &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1alpha1.CoreDNSZoneNameLabel: zone}}}
	select {
	case r.peerEvents <- event.GenericEvent{Object: obj}:
	default:
	}
}

func zoneOf(_ context.Context, obj client.Object) []reconcile.Request {
	zone := obj.GetLabels()[v1alpha1.CoreDNSZoneNameLabel]
	if zone == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: zone}}}
}

// labelsChanged passes namespace updates that changed labels: created namespaces hold no records
// yet, and a deleted one's records are deleted and re-serve their zones themselves.
var labelsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
	},
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// zonesOfNamespace is every zone the namespace holds authoritative records of.
func (r *Reconciler) zonesOfNamespace(ctx context.Context, ns client.Object) []reconcile.Request {
	var records v1alpha1.DNSRecordList
	if err := r.Client.List(ctx, &records, client.InNamespace(ns.GetName()), client.MatchingLabels{v1alpha1.AuthoritativeRecordLabel: "true"}); err != nil {
		log.FromContext(ctx).Error(err, "listing authoritative records after a namespace's labels changed", "namespace", ns.GetName())
		return nil
	}
	seen := map[string]bool{}
	var out []reconcile.Request
	for i := range records.Items {
		if zone := records.Items[i].Labels[v1alpha1.CoreDNSZoneNameLabel]; zone != "" && !seen[zone] {
			seen[zone] = true
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: zone}})
		}
	}
	return out
}
