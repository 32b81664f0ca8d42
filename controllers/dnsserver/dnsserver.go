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
// Every replica runs it, leader or not: each serves the same answers from the same objects. Because
// the data lives in the API server, a restarted server serves again as soon as its cache has synced.
package dnsserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/grant"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
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
		servedCond := func(obj client.Object) bool {
			rec, ok := obj.(*v1alpha1.DNSRecord)
			return ok && meta.FindStatusCondition(rec.Status.Conditions, ConditionServed) != nil
		}
		label := func(key string) bool { return e.ObjectOld.GetLabels()[key] != e.ObjectNew.GetLabels()[key] }
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			label(v1alpha1.AuthoritativeRecordLabel) || label(v1alpha1.CoreDNSZoneNameLabel) ||
			servedCond(e.ObjectOld) && !servedCond(e.ObjectNew)
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

// Reconcile serves a zone from the granted endpoints of its authoritative records, or stops
// serving it when none is left, and tells each record of the zone what of it is served.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	zone := req.Name
	var list v1alpha1.DNSRecordList
	if err := r.Client.List(ctx, &list, client.MatchingLabels{
		v1alpha1.AuthoritativeRecordLabel: "true", v1alpha1.CoreDNSZoneNameLabel: zone,
	}); err != nil {
		return ctrl.Result{}, err
	}
	nsLabels := map[string]map[string]string{}
	apexGranted := false
	for i := range list.Items {
		ns := list.Items[i].Namespace
		if _, seen := nsLabels[ns]; seen {
			continue
		}
		labels, err := r.namespaceLabels(ctx, ns)
		if err != nil {
			return ctrl.Result{}, err
		}
		nsLabels[ns] = labels
		apexGranted = apexGranted || r.Grants.Covers(ns, labels, zone)
	}
	// Records are read in a fixed order so every replica builds the same zone from the same objects.
	slices.SortFunc(list.Items, func(a, b v1alpha1.DNSRecord) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var (
		sources   []dnsserver.Source
		changed   time.Time
		endpoints int
		local     []*v1alpha1.Endpoint
		verdicts  = map[client.ObjectKey]metav1.Condition{}
		// ungranted are, by record, its endpoints left out for want of a grant, as refusals.
		ungranted = map[client.ObjectKey][]string{}
	)
	for i := range list.Items {
		rec := &list.Items[i]
		key := client.ObjectKeyFromObject(rec)
		// Every record of the zone counts for the serial, granted or not: were a namespace's
		// grant withdrawn, the serial must still not go back, or secondaries would keep the
		// content they have.
		if t := lastChange(rec); t.After(changed) {
			changed = t
		}
		if rec.DeletionTimestamp != nil {
			// Held by a finalizer on its way out: no longer part of the zone.
			continue
		}
		if !apexGranted {
			verdicts[key] = metav1.Condition{Type: ConditionServed, Status: metav1.ConditionFalse, Reason: ReasonNotGranted,
				Message: fmt.Sprintf("zone %s is served only when a namespace holding its records has a grant for its apex, and none has: %s; nothing of this record is served",
					zone, grant.Message(rec.Namespace, []string{zone}))}
			continue
		}
		var granted []*v1alpha1.Endpoint
		var uncovered, refusals []string
		for _, ep := range rec.Spec.Endpoints {
			if ep == nil {
				continue
			}
			if !r.Grants.Covers(rec.Namespace, nsLabels[rec.Namespace], ep.DNSName) {
				uncovered = append(uncovered, ep.DNSName)
				refusals = append(refusals, fmt.Sprintf("%s %s: namespace %s has no grant for the name", ep.DNSName, ep.RecordType, rec.Namespace))
				continue
			}
			granted = append(granted, ep)
		}
		if len(granted) == 0 && len(uncovered) > 0 {
			verdicts[key] = metav1.Condition{Type: ConditionServed, Status: metav1.ConditionFalse, Reason: ReasonNotGranted,
				Message: grant.Message(rec.Namespace, r.Grants.Uncovered(rec.Namespace, nsLabels[rec.Namespace], uncovered)) + "; nothing of this record is served"}
			continue
		}
		if len(refusals) > 0 {
			ungranted[key] = refusals
		}
		sources = append(sources, dnsserver.Source{Name: key.String(), Endpoints: granted})
		endpoints += len(granted)
		local = append(local, granted...)
		verdicts[key] = metav1.Condition{Type: ConditionServed, Status: metav1.ConditionTrue, Reason: ReasonServed,
			Message: fmt.Sprintf("served in zone %s by the embedded DNS server", zone)}
	}
	sources, local, ownRefused := r.ownRecordsOnly(zone, sources)
	endpoints = len(local)
	data := dnsserver.ZoneData{
		Sources:     sources,
		Nameservers: r.Nameservers,
		Secondaries: r.Secondaries[zone],
		Changed:     changed,
	}
	var result ctrl.Result
	var peerCondition *metav1.Condition
	if r.exported(zone) {
		// The lease changes once per period: the zone is served again then, to renew it.
		result.RequeueAfter = r.LeaseEvery
		l := lease.Renew(r.ClusterID, time.Now(), r.LeaseEvery, r.LeaseDuration)
		// The export's lease is this one: a lease of this cluster a record happens to hold would
		// give readers two values to judge.
		own := slices.DeleteFunc(slices.Clone(local), func(e *v1alpha1.Endpoint) bool {
			held, ok := lease.Parse(e)
			return ok && held.Holder == r.ClusterID
		})
		data.Export = &dnsserver.Export{Cluster: lease.Key(r.ClusterID), Changed: r.exportVersion(zone, own, changed), Endpoints: append(own, l.Record(zone))}
		if r.Peers != nil && r.Peers.HasPeers(zone) {
			merged, err := r.Peers.Merge(zone, *data.Export)
			if merged == nil {
				// The zone is served from this cluster's records alone until the merge works.
				log.FromContext(ctx).Error(err, "merging the peers' exports", "zone", zone)
			} else {
				if err != nil {
					log.FromContext(ctx).Error(err, "merging the peers' exports", "zone", zone)
				}
				for owner, why := range merged.Dropped {
					log.FromContext(ctx).Info("an owner's wishes are left out of the merged zone", "zone", zone, "owner", owner, "reason", why)
				}
				data.Sources, data.Endpoints, data.Changed = nil, merged.Endpoints, merged.Changed
				endpoints = len(merged.Endpoints)
			}
			c := peersCondition(zone, r.Peers.Status(zone))
			peerCondition = &c
		}
	}
	for name, reasons := range ownRefused {
		verdicts[keyOf(name)] = metav1.Condition{Type: ConditionServed, Status: metav1.ConditionFalse, Reason: ReasonRecordsRefused,
			Message: refusedMessage(zone, reasons)}
	}
	if endpoints == 0 {
		r.Server.RemoveZone(zone)
		return result, r.report(ctx, list.Items, verdicts, peerCondition)
	}
	st, err := r.Server.SetZone(zone, data)
	if err != nil {
		for _, src := range sources {
			key := keyOf(src.Name)
			verdicts[key] = metav1.Condition{Type: ConditionServed, Status: metav1.ConditionFalse, Reason: ReasonZoneError,
				Message: fmt.Sprintf("zone %s cannot be served: %v", zone, err)}
		}
		_ = r.report(ctx, list.Items, verdicts, peerCondition)
		return ctrl.Result{}, fmt.Errorf("serving zone %s: %w", zone, err)
	}
	for name, reasons := range withRefused(st.Refused, ownRefused) {
		ungranted[keyOf(name)] = append(ungranted[keyOf(name)], reasons...)
	}
	for key, reasons := range ungranted {
		verdicts[key] = metav1.Condition{Type: ConditionServed, Status: metav1.ConditionFalse, Reason: ReasonRecordsRefused,
			Message: refusedMessage(zone, reasons)}
	}
	if data.Sources == nil && len(st.Skipped) > 0 {
		// A merged zone is one source: what it cannot serve is told to every record of the zone.
		for key, v := range verdicts {
			if v.Status == metav1.ConditionTrue {
				verdicts[key] = metav1.Condition{Type: ConditionServed, Status: metav1.ConditionFalse, Reason: ReasonRecordsRefused,
					Message: refusedMessage(zone, st.Skipped)}
			}
		}
	}
	if st.Changed {
		log.FromContext(ctx).V(1).Info("serving zone", "zone", zone, "serial", st.Serial, "records", len(sources), "refused", len(st.Skipped))
	}
	return result, r.report(ctx, list.Items, verdicts, peerCondition)
}

// lastChange is when a record's spec or metadata last changed, as the API server recorded it: the
// same on every replica, so replicas agree on the zone's serial. Status writes do not count; they do
// not change what is served.
func lastChange(rec *v1alpha1.DNSRecord) time.Time {
	t := rec.CreationTimestamp.Time
	for _, f := range rec.ManagedFields {
		if f.Subresource == "" && f.Time != nil && f.Time.After(t) {
			t = f.Time.Time
		}
	}
	return t
}
