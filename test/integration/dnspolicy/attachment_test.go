//go:build integration

package dnspolicy_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnspolicy"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

// affected returns the message of the Gateway's DNSPolicyAffected condition and of each listener's,
// "" where absent.
func affected(gw *gatewayapiv1.Gateway) (string, map[string]string) {
	msg := func(conds []metav1.Condition) string {
		if c := meta.FindStatusCondition(conds, dnspolicy.ConditionAffected); c != nil {
			return fmt.Sprintf("%s %s %s", c.Status, c.Reason, c.Message)
		}
		return ""
	}
	listeners := map[string]string{}
	for _, l := range gw.Status.Listeners {
		listeners[string(l.Name)] = msg(l.Conditions)
	}
	return msg(gw.Status.Conditions), listeners
}

// One Gateway-level policy through a listener's life: published when it has a hostname, routes and
// addresses; updated in place; withdrawn when any of them goes, and when the policy goes.
func TestSimpleLifecycle(t *testing.T) {
	store := inmemory.NewStore()
	cl := startCluster(t, "c0", envs[0], store)
	const zone = "simple.example.com"
	store.EnsureZone(zone)
	cl.secret(t, zone)
	cl.gateway(t, "gw", []string{"10.0.0.1", "10.0.0.2"},
		listener{"api", "api." + zone}, listener{"nohost", ""}, listener{"web", "web." + zone})
	cl.gatewayStatus(t, "gw", []string{"10.0.0.1", "10.0.0.2"}, map[string]int32{"api": 1, "nohost": 1})

	p := cl.newPolicy("simple", "gw", "")
	cl.create(t, p)

	eventually(t, 20*time.Second, func() string {
		return same(records(t, store, zone), []string{"api.simple.example.com A 60 10.0.0.1,10.0.0.2"})
	})
	p = cl.policyIs(t, "simple", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced")
	if got := condition(p, dnspolicy.ConditionAccepted); got != "True Accepted: DNSPolicy has been accepted" {
		t.Errorf("Accepted: %s", got)
	}
	if got := condition(p, dnspolicy.ConditionEnforced); !strings.Contains(got, "listener nohost has no hostname") || !strings.Contains(got, "listener web has no attached routes") {
		t.Errorf("Enforced must say why listeners nohost and web are not published: %s", got)
	}
	// Without a healthCheck there is no health to report (health_test.go covers it).
	if got := condition(p, dnspolicy.ConditionSubResourcesHealthy); got != "absent" {
		t.Errorf("SubResourcesHealthy without a healthCheck: %s", got)
	}
	if p.Status.TotalRecords != 1 || len(p.Status.RecordConditions) != 0 {
		t.Errorf("totalRecords %d recordConditions %v, want 1 and none", p.Status.TotalRecords, p.Status.RecordConditions)
	}

	// The record: named <gateway>-<listener>, controlled by the policy, the builder's endpoints.
	rec := cl.record(t, "gw-api")
	gw := cl.getGateway(t, "gw")
	want, err := builder.Build(builder.Input{Hostname: "api." + zone, Addresses: gw.Status.Addresses, GatewayName: "gw", GatewayNamespace: cl.ns})
	if err != nil {
		t.Fatal(err)
	}
	owner := metav1.GetControllerOf(rec)
	switch {
	case owner == nil || owner.Kind != "DNSPolicy" || owner.Name != "simple" || owner.UID != p.UID:
		t.Errorf("record controller %+v, want DNSPolicy simple %s", owner, p.UID)
	case rec.Spec.RootHost != "api."+zone || rec.Spec.ProviderRef != nil:
		t.Errorf("rootHost %q providerRef %v, want api.%s and none (the default provider)", rec.Spec.RootHost, rec.Spec.ProviderRef, zone)
	case !reflect.DeepEqual(rec.Spec.Endpoints, want):
		t.Errorf("endpoints %v, want %v", rec.Spec.Endpoints, want)
	case rec.Labels[dnspolicy.ListenerLabel] != "api" || rec.Labels[dnspolicy.GatewayLabel] != "gw":
		t.Errorf("labels %v", rec.Labels)
	case len(rec.OwnerReferences) != 2 || rec.OwnerReferences[1].Kind != "Gateway" || rec.OwnerReferences[1].UID != gw.UID:
		t.Errorf("owners %+v, want the policy (controller) and the Gateway", rec.OwnerReferences)
	}
	if names := cl.recordNames(t); !slices.Equal(names, []string{"gw-api"}) {
		t.Errorf("records %v, want only gw-api", names)
	}

	// The Gateway and every listener the policy covers carry the affected condition; the
	// implementation's own listener conditions stay.
	eventually(t, 10*time.Second, func() string {
		gw := cl.getGateway(t, "gw")
		onGateway, onListeners := affected(gw)
		want := "True Accepted Object affected by DNSPolicy [" + cl.ns + "/simple]"
		if onGateway != want || onListeners["api"] != want || onListeners["nohost"] != want || onListeners["web"] != want {
			return fmt.Sprintf("gateway %q listeners %v, want %q everywhere", onGateway, onListeners, want)
		}
		if meta.FindStatusCondition(gw.Status.Listeners[0].Conditions, "Programmed") == nil {
			return "the implementation's Programmed condition was lost"
		}
		return ""
	})
	eventually(t, 10*time.Second, func() string {
		events := &eventsv1.EventList{}
		if err := cl.c.List(context.Background(), events, client.InNamespace(cl.ns)); err != nil {
			return err.Error()
		}
		var seen []string
		for _, e := range events.Items {
			if e.Regarding.Name == "simple" {
				seen = append(seen, e.Reason)
			}
		}
		if !slices.Contains(seen, "Accepted") || !slices.Contains(seen, "Enforced") {
			return fmt.Sprintf("events %v, want Accepted and Enforced", seen)
		}
		return ""
	})

	// Routes attach to web: its record appears.
	cl.gatewayStatus(t, "gw", []string{"10.0.0.1", "10.0.0.2"}, map[string]int32{"api": 1, "web": 2})
	eventually(t, 20*time.Second, func() string {
		return same(records(t, store, zone), []string{
			"api.simple.example.com A 60 10.0.0.1,10.0.0.2",
			"web.simple.example.com A 60 10.0.0.1,10.0.0.2",
		})
	})
	apiUID := cl.record(t, "gw-api").UID

	// excludeAddresses: the record is updated in place.
	cl.editPolicy(t, "simple", func(p *dnsv1.DNSPolicy) { p.Spec.ExcludeAddresses = []string{"10.0.0.2"} })
	eventually(t, 20*time.Second, func() string {
		return same(records(t, store, zone), []string{
			"api.simple.example.com A 60 10.0.0.1",
			"web.simple.example.com A 60 10.0.0.1",
		})
	})
	if uid := cl.record(t, "gw-api").UID; uid != apiUID {
		t.Errorf("gw-api was replaced (UID %s, was %s), want it updated in place", uid, apiUID)
	}

	// api loses its routes: its record goes, web stays.
	cl.gatewayStatus(t, "gw", []string{"10.0.0.1", "10.0.0.2"}, map[string]int32{"web": 2})
	eventually(t, 20*time.Second, func() string {
		if names := cl.recordNames(t); !slices.Equal(names, []string{"gw-web"}) {
			return fmt.Sprintf("records %v, want gw-web", names)
		}
		return same(records(t, store, zone), []string{"web.simple.example.com A 60 10.0.0.1"})
	})

	// The listener's hostname changes: the record is replaced (rootHost is immutable).
	cl.editGateway(t, "gw", func(gw *gatewayapiv1.Gateway) {
		gw.Spec.Listeners[2].Hostname = ptr.To(gatewayapiv1.Hostname("www." + zone))
	})
	eventually(t, 30*time.Second, func() string {
		if r := cl.record(t, "gw-web"); r == nil || r.Spec.RootHost != "www."+zone {
			return fmt.Sprintf("gw-web is %v, want rootHost www.%s", r, zone)
		}
		return same(records(t, store, zone), []string{"www.simple.example.com A 60 10.0.0.1"})
	})

	// The Gateway loses its addresses: nothing to publish, and the status says why.
	cl.gatewayStatus(t, "gw", nil, map[string]int32{"api": 1, "web": 2})
	eventually(t, 20*time.Second, func() string {
		if names := cl.recordNames(t); len(names) > 0 {
			return fmt.Sprintf("records %v, want none", names)
		}
		return same(records(t, store, zone), nil)
	})
	p = cl.policyIs(t, "simple", dnspolicy.ConditionEnforced,
		"True Enforced: DNSPolicy has been successfully enforced : no DNSRecords created based on policy and gateway configuration: listener api: the Gateway has no addresses to publish")
	if p.Status.TotalRecords != 0 {
		t.Errorf("totalRecords %d, want 0", p.Status.TotalRecords)
	}

	// Addresses back, then the policy goes: its records leave the zone, and the conditions leave
	// the Gateway.
	cl.gatewayStatus(t, "gw", []string{"10.0.0.3"}, map[string]int32{"api": 1, "web": 2})
	eventually(t, 20*time.Second, func() string {
		return same(records(t, store, zone), []string{"api.simple.example.com A 60 10.0.0.3", "www.simple.example.com A 60 10.0.0.3"})
	})
	cl.delete(t, p)
	eventually(t, 20*time.Second, func() string {
		if names := cl.recordNames(t); len(names) > 0 {
			return fmt.Sprintf("records %v, want none", names)
		}
		eps, err := store.Snapshot(inmemory.ZoneID(zone))
		if err != nil {
			return err.Error()
		}
		if len(eps) > 0 {
			return fmt.Sprintf("zone still holds %d record sets (ownership TXT included)", len(eps))
		}
		onGateway, onListeners := affected(cl.getGateway(t, "gw"))
		if onGateway != "" || onListeners["api"] != "" || onListeners["web"] != "" {
			return fmt.Sprintf("affected conditions remain: gateway %q listeners %v", onGateway, onListeners)
		}
		return ""
	})
}

// A listener-level policy takes its listener from the Gateway-level one; when it goes, the
// Gateway-level policy adopts the record in place and the hostname never stops resolving.
func TestListenerPolicyWins(t *testing.T) {
	store := inmemory.NewStore()
	cl := startCluster(t, "c0", envs[0], store)
	const zone = "listener.example.com"
	store.EnsureZone(zone)
	cl.secret(t, zone)
	cl.gateway(t, "gw", []string{"10.1.0.1"}, listener{"api", "api." + zone}, listener{"web", "web." + zone})
	cl.create(t, cl.newPolicy("gateway", "gw", ""))
	cl.policyIs(t, "gateway", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced")

	lb := cl.newPolicy("listener", "gw", "api")
	lb.Spec.LoadBalancing = &dnsv1.LoadBalancingSpec{Geo: "IE", Weight: 100}
	cl.create(t, lb)
	lb = cl.policyIs(t, "listener", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced")
	gwPolicy := cl.getPolicy(t, "gateway")

	eventually(t, 20*time.Second, func() string {
		api, web := cl.record(t, "gw-api"), cl.record(t, "gw-web")
		if api == nil || web == nil {
			return "records missing"
		}
		if o := metav1.GetControllerOf(api); o == nil || o.UID != lb.UID {
			return fmt.Sprintf("gw-api controlled by %v, want the listener policy", o)
		}
		if o := metav1.GetControllerOf(web); o == nil || o.UID != gwPolicy.UID {
			return fmt.Sprintf("gw-web controlled by %v, want the gateway policy", o)
		}
		got := records(t, store, zone)
		if !slices.Contains(got, "api.listener.example.com CNAME 300 klb.api.listener.example.com") || !slices.Contains(got, "web.listener.example.com A 60 10.1.0.1") {
			return same(got, []string{"api.listener.example.com CNAME 300 klb.api.listener.example.com", "...", "web.listener.example.com A 60 10.1.0.1"})
		}
		return ""
	})
	if p := cl.getPolicy(t, "gateway"); p.Status.TotalRecords != 1 || lb.Status.TotalRecords != 1 {
		t.Errorf("totalRecords: gateway policy %d, listener policy %d, want 1 each", p.Status.TotalRecords, lb.Status.TotalRecords)
	}
	eventually(t, 10*time.Second, func() string {
		onGateway, onListeners := affected(cl.getGateway(t, "gw"))
		prefix := "True Accepted Object affected by DNSPolicy "
		if onGateway != prefix+"["+cl.ns+"/gateway "+cl.ns+"/listener]" || onListeners["api"] != prefix+"["+cl.ns+"/listener]" || onListeners["web"] != prefix+"["+cl.ns+"/gateway]" {
			return fmt.Sprintf("gateway %q listeners %v", onGateway, onListeners)
		}
		return ""
	})

	apiUID := cl.record(t, "gw-api").UID
	watch := watchResolution(t, store, zone, "api."+zone)
	cl.delete(t, lb)
	eventually(t, 20*time.Second, func() string {
		api := cl.record(t, "gw-api")
		if api == nil || api.UID != apiUID {
			return fmt.Sprintf("gw-api %v, want the same record (UID %s) adopted", api, apiUID)
		}
		if o := metav1.GetControllerOf(api); o == nil || o.UID != gwPolicy.UID {
			return fmt.Sprintf("gw-api controlled by %v, want the gateway policy", o)
		}
		return same(records(t, store, zone), []string{"api.listener.example.com A 60 10.1.0.1", "web.listener.example.com A 60 10.1.0.1"})
	})
	if holes, states := watch(); len(holes) > 0 || states < 2 {
		t.Errorf("api.%s while the record changed hands: %d zone states seen, holes:\n%s", zone, states, strings.Join(holes, "\n"))
	}
	cl.policyIs(t, "gateway", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced")
}

// Two policies on one Gateway: the oldest is accepted, the other Conflicted naming it; when the
// oldest goes, the other takes over the records in place.
func TestConflictOldestWins(t *testing.T) {
	store := inmemory.NewStore()
	cl := startCluster(t, "c0", envs[0], store)
	const zone = "conflict.example.com"
	store.EnsureZone(zone)
	cl.secret(t, zone)
	cl.gateway(t, "gw", []string{"10.2.0.1"}, listener{"api", "api." + zone})
	cl.create(t, cl.newPolicy("first", "gw", ""))
	first := cl.policyIs(t, "first", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced")
	// creationTimestamp has a resolution of one second.
	time.Sleep(1100 * time.Millisecond)
	second := cl.newPolicy("second", "gw", "")
	second.Spec.ExcludeAddresses = []string{"10.9.9.9"}
	cl.create(t, second)
	second = cl.policyIs(t, "second", dnspolicy.ConditionAccepted,
		"False Conflicted: DNSPolicy is conflicted by "+cl.ns+"/first: both target Gateway gw and the oldest policy wins")
	if c := meta.FindStatusCondition(second.Status.Conditions, dnspolicy.ConditionEnforced); c != nil {
		t.Errorf("a conflicted policy reports Enforced: %+v", c)
	}
	rec := cl.record(t, "gw-api")
	if o := metav1.GetControllerOf(rec); o == nil || o.UID != first.UID {
		t.Errorf("gw-api controlled by %v, want the oldest policy", o)
	}
	eventually(t, 10*time.Second, func() string {
		if onGateway, _ := affected(cl.getGateway(t, "gw")); onGateway != "True Accepted Object affected by DNSPolicy ["+cl.ns+"/first]" {
			return "gateway condition " + onGateway
		}
		return ""
	})

	cl.delete(t, first)
	cl.policyIs(t, "second", dnspolicy.ConditionEnforced, "True Enforced: DNSPolicy has been successfully enforced")
	eventually(t, 20*time.Second, func() string {
		r := cl.record(t, "gw-api")
		if r == nil || r.UID != rec.UID {
			return fmt.Sprintf("gw-api %v, want the same record (UID %s)", r, rec.UID)
		}
		if o := metav1.GetControllerOf(r); o == nil || o.UID != second.UID {
			return fmt.Sprintf("gw-api controlled by %v, want the remaining policy", o)
		}
		return same(records(t, store, zone), []string{"api.conflict.example.com A 60 10.2.0.1"})
	})
}
