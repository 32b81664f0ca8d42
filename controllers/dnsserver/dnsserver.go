// Package dnsserver feeds the embedded authoritative DNS server (pkg/dnsserver) from the API
// server: a zone is the union of the authoritative DNSRecords labelled with its name, in every
// watched namespace (DESIGN 4b), whoever wrote them, our coredns backend or Kuadrant's dns-operator.
//
// Every replica runs it, leader or not: each serves the same answers from the same objects. Because
// the data lives in the API server, a restarted server serves again as soon as its cache has synced.
package dnsserver

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
)

// Reconciler serves one zone per reconcile request; the request's Name is the zone name.
type Reconciler struct {
	// Client reads DNSRecords from the manager's cache.
	Client client.Reader
	// Server is the DNS server the zones go to. SetupWithManager starts and stops it with the manager.
	Server *dnsserver.Server
	// Nameservers are the NS targets of every zone; empty means ns1.<zone>.
	Nameservers []string
	// Secondaries are host:port addresses to NOTIFY, by zone name.
	Secondaries map[string][]string
}

// SetupWithManager registers the server and the controller that feeds it. Neither needs leadership:
// every replica answers queries.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(&server{Server: r.Server, log: mgr.GetLogger().WithName("dnsserver")}); err != nil {
		return err
	}
	authoritative, err := predicate.LabelSelectorPredicate(metav1.LabelSelector{
		MatchLabels: map[string]string{v1alpha1.AuthoritativeRecordLabel: "true"},
	})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("dnsserver").
		// A record's zone label may change; the map function sees the old object too, so the zone
		// it left is served again without it.
		Watches(&v1alpha1.DNSRecord{}, handler.EnqueueRequestsFromMapFunc(zoneOf), builder.WithPredicates(authoritative)).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false), MaxConcurrentReconciles: 4}).
		Complete(r)
}

func zoneOf(_ context.Context, obj client.Object) []reconcile.Request {
	zone := obj.GetLabels()[v1alpha1.CoreDNSZoneNameLabel]
	if zone == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: zone}}}
}

// Reconcile serves a zone from its authoritative records, or stops serving it when none is left.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	zone := req.Name
	var list v1alpha1.DNSRecordList
	if err := r.Client.List(ctx, &list, client.MatchingLabels{
		v1alpha1.AuthoritativeRecordLabel: "true", v1alpha1.CoreDNSZoneNameLabel: zone,
	}); err != nil {
		return ctrl.Result{}, err
	}
	// Records are read in a fixed order so every replica builds the same zone from the same objects.
	slices.SortFunc(list.Items, func(a, b v1alpha1.DNSRecord) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	var (
		endpoints []*v1alpha1.Endpoint
		changed   time.Time
	)
	for i := range list.Items {
		rec := &list.Items[i]
		for _, ep := range rec.Spec.Endpoints {
			if ep != nil {
				endpoints = append(endpoints, ep)
			}
		}
		if t := lastChange(rec); t.After(changed) {
			changed = t
		}
	}
	if len(endpoints) == 0 {
		r.Server.RemoveZone(zone)
		return ctrl.Result{}, nil
	}
	st, err := r.Server.SetZone(zone, dnsserver.ZoneData{
		Endpoints:   endpoints,
		Nameservers: r.Nameservers,
		Secondaries: r.Secondaries[zone],
		Changed:     changed,
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("serving zone %s: %w", zone, err)
	}
	if st.Changed {
		log.FromContext(ctx).V(1).Info("serving zone", "zone", zone, "serial", st.Serial, "records", len(list.Items), "skipped", st.Skipped)
	}
	return ctrl.Result{}, nil
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

// server runs the DNS server for as long as the manager runs.
type server struct {
	*dnsserver.Server
	log logr.Logger
}

var _ manager.LeaderElectionRunnable = (*server)(nil)

func (s *server) NeedLeaderElection() bool { return false }

func (s *server) Start(ctx context.Context) error {
	if err := s.Server.Start(); err != nil {
		return fmt.Errorf("starting the DNS server: %w", err)
	}
	s.log.Info("DNS server listening", "address", s.Addr().String())
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Shutdown(shutdown)
}
