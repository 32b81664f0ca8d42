//go:build integration

package dnsrecord_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/test/integration/internal/recordplane"
)

// startRole starts one record controller in the delegation role on the first control plane, with
// re-checks an hour apart: whatever happens in these tests is started by an event, not a timer.
func startRole(t *testing.T, role dnsrecord.DelegationRole, store *inmemory.Store) *cluster {
	t.Helper()
	opts := fastOptions()
	opts.MinRecheck, opts.MaxRecheck = time.Hour, time.Hour
	factory := providers.NewFactory()
	factory.Register(v1alpha1.SecretTypeInMemory, inmemory.NewConstructor(store))
	o := app.Options{EnableRecordController: true, NoHealthProbeController: true, DelegationRole: role}
	ns := recordplane.Start(t, envs[0], "deleg-", recordplane.Controller{App: o, Factory: factory, Record: opts})
	return &cluster{name: "cluster-0", c: envs[0].Client, ns: ns}
}

// delegating creates a delegating record: no providerRef, delegate: true.
func (cl *cluster) delegating(t *testing.T, name, rootHost string, hc *v1alpha1.HealthCheckSpec, eps ...*v1alpha1.Endpoint) {
	t.Helper()
	r := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: rootHost, Delegate: true, Endpoints: eps, HealthCheck: hc},
	}
	if err := cl.c.Create(t.Context(), r); err != nil {
		t.Fatal(err)
	}
}

// reportAsPrimary writes, as a primary cluster does, its entry of status.remoteRecordStatuses with
// the given Ready reason, through the status subresource.
func (cl *cluster) reportAsPrimary(t *testing.T, name, clusterID, reason string) {
	t.Helper()
	r := cl.get(t, name)
	patch := client.MergeFrom(r.DeepCopy())
	status := metav1.ConditionFalse
	if reason == v1alpha1.ReasonProviderSuccess {
		status = metav1.ConditionTrue
	}
	entry := v1alpha1.DNSRecordStatus{ZoneID: "primary-zone", Conditions: []metav1.Condition{{
		Type: v1alpha1.ConditionTypeReady, Status: status, Reason: reason, Message: "written by the test", LastTransitionTime: metav1.Now(),
	}}}
	if err := r.Status.SetRemoteRecordStatus(clusterID, entry); err != nil {
		t.Fatal(err)
	}
	if err := cl.c.Status().Patch(t.Context(), r, patch); err != nil {
		t.Fatal(err)
	}
}

// A secondary readies a delegating record with no provider Secret in its namespace: finalizer,
// owner ID and probes, then ReadyForDelegation=True and Ready=True with Kuadrant's reasons, and
// nothing in any zone. A record that does not delegate is published as before. Deleted, the
// delegating record keeps its finalizer while a primary's entry of status.remoteRecordStatuses
// reports its endpoints, and goes once every entry says they are removed.
func TestDelegationSecondary(t *testing.T) {
	store := inmemory.NewStore()
	cl := startRole(t, dnsrecord.DelegationRoleSecondary, store)
	const z = "deleg.example.com"
	root := "app." + z
	hc := &v1alpha1.HealthCheckSpec{Port: 80, Path: "/healthz", Protocol: v1alpha1.ProtocolHTTP}
	cl.delegating(t, "deleg", root, hc, a(root, 60, "10.7.0.1", "10.7.0.2"))

	eventually(t, 20*time.Second, func() string {
		r := cl.get(t, "deleg")
		got := condition(r, v1alpha1.ConditionTypeReadyForDelegation) + " | " + condition(r, v1alpha1.ConditionTypeReady)
		if want := "True FinalizersSet:  | True ProviderSuccess: Provider ensured the dns record"; got != want {
			return fmt.Sprintf("conditions %q, want %q", got, want)
		}
		return ""
	})
	r := cl.get(t, "deleg")
	if !controllerutil.ContainsFinalizer(r, v1alpha1.RecordFinalizer) || r.Status.OwnerID == "" {
		t.Errorf("finalizers %v, owner ID %q: want the finalizer and an owner ID", r.Finalizers, r.Status.OwnerID)
	}
	if _, labelled := r.Labels[v1alpha1.ProviderNameLabel]; labelled || r.Status.ZoneID != "" || r.Status.ProviderRef.Name != "" || len(r.Status.Endpoints) != 0 {
		t.Errorf("a delegating record names no provider and publishes nothing: labels %v, zone %q, providerRef %q, endpoints %v",
			r.Labels, r.Status.ZoneID, r.Status.ProviderRef.Name, r.Status.Endpoints)
	}
	if got := condition(r, v1alpha1.ConditionTypeHealthy); got != "none" {
		t.Errorf("Healthy %q: Kuadrant's secondary leaves health to the primary's view", got)
	}
	probes := &v1alpha1.DNSHealthCheckProbeList{}
	if err := cl.c.List(t.Context(), probes, client.InNamespace(cl.ns)); err != nil {
		t.Fatal(err)
	}
	if n := len(probes.Items); n != 2 {
		t.Errorf("%d probes, want one per address (2)", n)
	}
	if _, err := store.Snapshot(inmemory.ZoneID(z)); err == nil {
		t.Error("a zone exists in the store: a secondary publishes nothing of a delegating record")
	}

	// delegate: false is handled as before, in the same namespace once it has a Secret.
	cl.secret(t, z)
	plain := "plain." + z
	cl.record(t, "plain", plain, a(plain, 60, "10.8.0.1"))
	cl.waitReady(t, "plain")
	if got := records(t, store, z); len(got) != 1 || got[0] != plain+" A 60 10.8.0.1" {
		t.Errorf("zone %v, want only the plain record", got)
	}
	if got := condition(cl.get(t, "plain"), v1alpha1.ConditionTypeReadyForDelegation); got != "none" {
		t.Errorf("plain record: ReadyForDelegation %q", got)
	}

	// Two primaries reported: one still publishes the endpoints, one removed them.
	cl.reportAsPrimary(t, "deleg", "primary-a", v1alpha1.ReasonProviderSuccess)
	cl.reportAsPrimary(t, "deleg", "primary-b", v1alpha1.ReasonProviderEndpointsRemoved)
	cl.delete(t, "deleg")
	waiting := "False ProviderEndpointsDeletion: DNS records are being deleted from provider: waiting for primary clusters primary-a to report them removed in status.remoteRecordStatuses"
	eventually(t, 20*time.Second, func() string {
		if got := condition(cl.get(t, "deleg"), v1alpha1.ConditionTypeReady); got != waiting {
			return fmt.Sprintf("Ready %q, want %q", got, waiting)
		}
		return ""
	})
	// Withdrawing is not removed: the finalizer stays.
	before := passes(cl, "deleg")
	cl.reportAsPrimary(t, "deleg", "primary-a", v1alpha1.ReasonProviderEndpointsDeletion)
	eventually(t, 20*time.Second, func() string {
		if passes(cl, "deleg") == before {
			return "no pass after primary-a's report"
		}
		return ""
	})
	time.Sleep(500 * time.Millisecond)
	r, ok := cl.exists(t, "deleg")
	if !ok || !controllerutil.ContainsFinalizer(r, v1alpha1.RecordFinalizer) || condition(r, v1alpha1.ConditionTypeReady) != waiting {
		t.Fatalf("while primary-a withdraws: exists %v, record %+v", ok, r)
	}
	if n := passes(cl, "deleg") - before; n > 3 {
		t.Errorf("%v passes after one report while waiting, want at most 3", n)
	}
	// Removed everywhere: the record goes, with its probes.
	cl.reportAsPrimary(t, "deleg", "primary-a", v1alpha1.ReasonProviderEndpointsRemoved)
	eventually(t, 20*time.Second, func() string {
		if _, ok := cl.exists(t, "deleg"); ok {
			return "deleg still exists"
		}
		return ""
	})
	eventually(t, 20*time.Second, func() string {
		if err := cl.c.List(t.Context(), probes, client.InNamespace(cl.ns)); err != nil {
			return err.Error()
		}
		if len(probes.Items) != 0 {
			return fmt.Sprintf("%d probes left", len(probes.Items))
		}
		return ""
	})
	if got := records(t, store, z); len(got) != 1 {
		t.Errorf("zone %v, want the plain record untouched", got)
	}
}

// A secondary releases a deleted delegating record that no primary ever reported on at once.
func TestDelegationSecondaryUnreported(t *testing.T) {
	cl := startRole(t, dnsrecord.DelegationRoleSecondary, inmemory.NewStore())
	cl.delegating(t, "lone", "lone.deleg.example.com", nil, a("lone.deleg.example.com", 60, "10.7.1.1"))
	eventually(t, 20*time.Second, func() string {
		if got := condition(cl.get(t, "lone"), v1alpha1.ConditionTypeReadyForDelegation); !strings.HasPrefix(got, "True FinalizersSet") {
			return "ReadyForDelegation " + got
		}
		return ""
	})
	cl.delete(t, "lone")
	eventually(t, 20*time.Second, func() string {
		if _, ok := cl.exists(t, "lone"); ok {
			return "lone still exists"
		}
		return ""
	})
}

// On a primary (the default role) this cluster's delegating records publish with the namespace's
// default provider, as Kuadrant's primaries do: into the authoritative record of their root host,
// authoritative-record-<hash8(rootHost)>, which both share and which names the default Secret; the
// authoritative record is published into the zone under its own owner, without its contributors'
// ownership TXTs. A contributor deleted leaves the zone; the last one takes the authoritative record
// with it, and the zone is left empty.
func TestDelegationPrimaryMergesIntoAuthoritative(t *testing.T) {
	store := inmemory.NewStore()
	cl := startRole(t, "", store)
	const z = "primary.example.com"
	root := "app." + z
	west := "west." + root
	defaultSecret(t, cl, z)
	cl.delegating(t, "east", root, nil, a(root, 60, "10.9.0.1"))
	cl.delegating(t, "west", root, nil, a(west, 60, "10.9.0.2"))
	cl.waitReady(t, "east", "west")
	authName := "authoritative-record-" + hash.Base36(root, 8)
	for _, name := range []string{"east", "west"} {
		r := cl.get(t, name)
		if got := condition(r, v1alpha1.ConditionTypeReadyForDelegation); got != "True "+v1alpha1.ReasonFinalizersSet+": " {
			t.Errorf("%s: ReadyForDelegation %q", name, got)
		}
		if r.Status.ZoneID != authName || r.Status.ZoneDomainName != root {
			t.Errorf("%s: zone %q %q, want %q %q", name, r.Status.ZoneID, r.Status.ZoneDomainName, authName, root)
		}
	}
	cl.waitReady(t, authName)
	auth := cl.get(t, authName)
	if auth.Labels[v1alpha1.AuthoritativeRecordLabel] != "true" || auth.Labels[v1alpha1.AuthoritativeRecordHashLabel] != hash.Base36(root, 8) ||
		auth.Spec.ProviderRef == nil || auth.Spec.ProviderRef.Name != "provider" || auth.Spec.RootHost != root {
		t.Fatalf("authoritative record: labels %v, providerRef %v, rootHost %q", auth.Labels, auth.Spec.ProviderRef, auth.Spec.RootHost)
	}
	eastOwner, authOwner := cl.get(t, "east").Status.OwnerID, auth.Status.OwnerID
	if !hasEndpoint(auth.Spec.Endpoints, registry.TXTName(eastOwner, "A", root)) {
		t.Errorf("authoritative record lacks east's ownership TXT: %v", auth.Spec.Endpoints)
	}
	want := []string{root + " A 60 10.9.0.1", west + " A 60 10.9.0.2"}
	eventually(t, 20*time.Second, func() string {
		if got := records(t, store, z); !slices.Equal(got, want) {
			return fmt.Sprintf("zone %v, want %v", got, want)
		}
		lines := strings.Join(zone(t, store, z), "\n")
		if !strings.Contains(lines, registry.TXTName(authOwner, "A", root)) || strings.Contains(lines, registry.TXTName(eastOwner, "A", root)) {
			return fmt.Sprintf("zone TXTs: want the authoritative record's claims, not east's:\n%s", lines)
		}
		return ""
	})

	cl.delete(t, "west")
	eventually(t, 20*time.Second, func() string {
		if got := records(t, store, z); !slices.Equal(got, want[:1]) {
			return fmt.Sprintf("zone %v, want %v", got, want[:1])
		}
		return ""
	})
	cl.delete(t, "east")
	eventually(t, 20*time.Second, func() string {
		err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: cl.ns, Name: authName}, &v1alpha1.DNSRecord{})
		if !apierrors.IsNotFound(err) {
			return fmt.Sprintf("authoritative record: %v", err)
		}
		if got := records(t, store, z); len(got) != 0 {
			return fmt.Sprintf("zone %v, want empty", got)
		}
		return ""
	})
}

// defaultSecret creates the namespace's default provider Secret, an inmemory one holding zones.
func defaultSecret(t *testing.T, cl *cluster, zones string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: cl.ns, Labels: map[string]string{v1alpha1.DefaultProviderLabel: "true"}},
		Type:       v1alpha1.SecretTypeInMemory,
		StringData: map[string]string{v1alpha1.InMemInitZonesKey: zones},
	}
	if err := cl.c.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
}

func hasEndpoint(eps []*v1alpha1.Endpoint, name string) bool {
	return slices.ContainsFunc(eps, func(e *v1alpha1.Endpoint) bool { return v1alpha1.NormalizeName(e.DNSName) == name })
}

// A primary builds the authoritative record as Kuadrant's dns-operator builds it, so that a Kuadrant
// primary and ours hold the same one (docs/mixed-fleet.md): its contributors' ownership TXTs have no
// TTL (recordTTL 0), and each record is labelled owner=<its claimants' owner IDs, sorted, joined by
// "&&">, following them as they come and go. The zone the authoritative record is published into
// gets what it got before: the records with their TTLs and the authoritative record's own claims
// with the records' TTL, none of its contributors' claims.
func TestDelegationAuthoritativeRecordAsKuadrant(t *testing.T) {
	store := inmemory.NewStore()
	cl := startRole(t, "", store)
	const z = "kuadrant-form.example.com"
	root := "app." + z
	www := "www." + root
	defaultSecret(t, cl, z)
	cl.delegating(t, "east", root, nil, a(root, 300, "10.9.1.1"))
	cl.delegating(t, "west", root, nil, a(root, 300, "10.9.1.2"), a(www, 300, "10.9.1.3"))
	authName := "authoritative-record-" + hash.Base36(root, 8)
	cl.waitReady(t, "east", "west", authName)
	east, west := cl.get(t, "east").Status.OwnerID, cl.get(t, "west").Status.OwnerID
	both := []string{east, west}
	slices.Sort(both)
	eventually(t, 20*time.Second, func() string {
		return kuadrantForm(cl.get(t, authName), map[string]string{root + " A": strings.Join(both, "&&"), www + " A": west})
	})
	authOwner := cl.get(t, authName).Status.OwnerID
	eventually(t, 20*time.Second, func() string {
		if got, want := records(t, store, z), []string{root + " A 300 10.9.1.1,10.9.1.2", www + " A 300 10.9.1.3"}; !slices.Equal(got, want) {
			return fmt.Sprintf("zone %v, want %v", got, want)
		}
		lines := zone(t, store, z)
		for _, name := range []string{root, www} {
			claim := registry.TXTName(authOwner, "A", name) + " TXT 300 "
			if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, claim) }) {
				return fmt.Sprintf("zone lacks the authoritative record's claim %q...:\n%s", claim, strings.Join(lines, "\n"))
			}
		}
		for _, l := range lines {
			if strings.Contains(l, registry.TXTName(east, "A", root)) || strings.Contains(l, " TXT 0 ") {
				return "zone holds a contributor's claim, or a TXT without a TTL: " + l
			}
		}
		return ""
	})

	cl.delete(t, "west")
	eventually(t, 20*time.Second, func() string {
		return kuadrantForm(cl.get(t, authName), map[string]string{root + " A": east})
	})
}

// kuadrantForm says how an authoritative record differs from the form Kuadrant's dns-operator
// writes: its ownership TXTs without a TTL, and its records exactly owners' keys ("<name> <type>"),
// each with its TTL (300 here) and the one label owner=owners[key].
func kuadrantForm(rec *v1alpha1.DNSRecord, owners map[string]string) string {
	var keys []string
	for _, e := range rec.Spec.Endpoints {
		if _, ok := registry.ParseTXT(e); ok {
			if e.RecordTTL != 0 {
				return fmt.Sprintf("ownership TXT %s has TTL %d, want none", e.DNSName, e.RecordTTL)
			}
			continue
		}
		if e.RecordType == v1alpha1.RecordTypeTXT {
			continue // a cluster's lease record
		}
		key := e.DNSName + " " + e.RecordType
		want, ok := owners[key]
		switch {
		case !ok:
			return "unexpected record " + e.String()
		case !maps.Equal(e.Labels, v1alpha1.Labels{registry.OwnerLabel: want}) || e.RecordTTL != 300:
			return fmt.Sprintf("%s: TTL %d, labels %v; want 300, owner=%s", key, e.RecordTTL, e.Labels, want)
		}
		keys = append(keys, key)
	}
	if len(keys) != len(owners) {
		return fmt.Sprintf("records %v, want those of %v", keys, owners)
	}
	return ""
}
