//go:build tenancy

package install_test

import (
	"context"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// defaultSecret creates, as the team, its namespace's default provider Secret (the one a
// delegating record publishes with) of the type with the data.
func (e *tenancy) defaultSecret(t *testing.T, ns, name string, typ corev1.SecretType, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{v1alpha1.DefaultProviderLabel: "true"}},
		Type:       typ, StringData: data,
	}
	if err := e.teams[ns].Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// delegating creates, as the team, a DNSRecord with delegate: true (no provider: on this cluster,
// a delegation primary, it publishes with the namespace's default Secret through the authoritative
// record of its root host).
func (e *tenancy) delegating(t *testing.T, ns, name, rootHost string, eps ...*v1alpha1.Endpoint) *v1alpha1.DNSRecord {
	t.Helper()
	rec := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: rootHost, Delegate: true, Endpoints: eps},
	}
	if err := e.teams[ns].Create(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// zoneRecord creates, as the team, a DNSRecord shaped as a delegation primary's authoritative
// record of rootHost (its name, its labels), publishing through the provider Secret named, under
// the owner ID given.
func (e *tenancy) zoneRecord(t *testing.T, ns, rootHost, provider, ownerID string, eps ...*v1alpha1.Endpoint) *v1alpha1.DNSRecord {
	t.Helper()
	rec := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "authoritative-record-" + hash.Base36(rootHost, 8), Labels: map[string]string{
			v1alpha1.AuthoritativeRecordLabel: "true", v1alpha1.AuthoritativeRecordHashLabel: hash.Base36(rootHost, 8),
		}},
		Spec: v1alpha1.DNSRecordSpec{RootHost: rootHost, OwnerID: ownerID, ProviderRef: &v1alpha1.ProviderRef{Name: provider}, Endpoints: eps},
	}
	if err := e.teams[ns].Create(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// The attacks through delegation (docs/delegation.md), the controller being a primary as it is by
// default: a delegating record publishes with its namespace's default Secret into the authoritative
// record of its root host in its own namespace, which is then published like any record.
func TestTenancyDelegation(t *testing.T) {
	e := startTenancy(t)
	ctx := context.Background()
	// The administrator lets the controller find the teams' default Secrets (config/rbac/README.md).
	for _, ns := range []string{"team-a", "team-c"} {
		bindProviderSecrets(t, e.cp.c, ns)
	}
	app := "app." + demoZone
	ready := string(v1alpha1.ConditionTypeReady)
	e.defaultSecret(t, "team-c", "default", v1alpha1.SecretTypeCoreDNS, map[string]string{v1alpha1.CoreDNSZonesKey: demoZone})

	// A delegating record over team-a's name, through the team's own default coredns Secret naming
	// the zone: refused for the grant it lacks, while one over its own name is served.
	t.Run("delegating record takes no other team's name", func(t *testing.T) {
		before := e.snapshot(t, "team-a")
		shared := "shared." + demoZone
		own := e.delegating(t, "team-c", "own", shared, v1alpha1.NewEndpoint(shared, "A", 60, "192.0.2.30"))
		e.waitCondition(t, e.teams["team-c"], own, ready, "True")
		e.eventuallyAnswers(t, shared, dns.TypeA, "NOERROR 192.0.2.30")
		steal := e.delegating(t, "team-c", "steal", app, v1alpha1.NewEndpoint(app, "A", 60, evilAddr))
		e.waitCondition(t, e.teams["team-c"], steal, ready, "False", "NotGranted", "team-c", app)
		e.answers(t, app, dns.TypeA, "NOERROR "+appAddr)
		e.unchanged(t, "team-a", before)
	})

	// team-a's authoritative record of its name: another team can neither read nor write it, and
	// one of the same name in its own namespace, labelled as the primary labels it, is not served.
	t.Run("another namespace's authoritative record", func(t *testing.T) {
		before := e.snapshot(t, "team-a")
		name := "authoritative-record-" + hash.Base36(app, 8)
		var theirs v1alpha1.DNSRecord
		if err := e.cp.c.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: name}, &theirs); err != nil {
			t.Fatalf("team-a's authoritative record of %s: %v", app, err)
		}
		c := e.teams["team-c"]
		changed := theirs.DeepCopy()
		changed.Spec.Endpoints = append(changed.Spec.Endpoints, v1alpha1.NewEndpoint(app, "A", 60, evilAddr))
		patch := client.MergeFrom(&theirs)
		for what, err := range map[string]error{
			"get":    c.Get(ctx, client.ObjectKeyFromObject(&theirs), &v1alpha1.DNSRecord{}),
			"update": c.Update(ctx, changed.DeepCopy()),
			"patch":  c.Patch(ctx, changed.DeepCopy(), patch),
			"delete": c.Delete(ctx, theirs.DeepCopy()),
		} {
			if !apierrors.IsForbidden(err) {
				t.Errorf("team-c may %s team-a/%s: %v, want Forbidden", what, name, err)
			}
		}
		rec := e.zoneRecord(t, "team-c", app, "default", "", v1alpha1.NewEndpoint(app, "A", 60, evilAddr))
		e.waitCondition(t, e.teams["team-c"], rec, "Served", "False", "NotGranted", "team-c", app)
		e.answers(t, app, dns.TypeA, "NOERROR "+appAddr)
		e.unchanged(t, "team-a", before)
	})

	// In a zone of a backend without credentials (inmemory: kept apart by owners only), team-a
	// publishes through delegation; a record shaped as an authoritative record, with the owner ID
	// of team-a's, is refused as any borrower is, and its deletion withdraws nothing.
	t.Run("authoritative record borrows no owner ID", func(t *testing.T) {
		const zone = "deleg.example.com"
		host := "app." + zone
		e.defaultSecret(t, "team-a", "default", v1alpha1.SecretTypeInMemory, map[string]string{v1alpha1.InMemInitZonesKey: zone})
		e.secret(t, "team-c", "deleg", v1alpha1.SecretTypeInMemory, map[string]string{v1alpha1.InMemInitZonesKey: zone})
		good := e.delegating(t, "team-a", "app", host, v1alpha1.NewEndpoint(host, "CNAME", 60, "good.example.net"))
		e.waitCondition(t, e.teams["team-a"], good, ready, "True")
		auth := &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "authoritative-record-" + hash.Base36(host, 8)}}
		e.waitCondition(t, e.teams["team-a"], auth, ready, "True")
		if err := e.cp.c.Get(ctx, client.ObjectKeyFromObject(auth), auth); err != nil || auth.Status.OwnerID == "" {
			t.Fatalf("team-a's authoritative record: owner ID %q, %v", auth.Status.OwnerID, err)
		}
		before := e.snapshot(t, "team-a")
		borrow := e.zoneRecord(t, "team-c", host, "deleg", auth.Status.OwnerID, v1alpha1.NewEndpoint(host, "CNAME", 60, "evil.example.net"))
		e.waitCondition(t, e.teams["team-c"], borrow, ready, "False", "OwnerIDInUse", "team-a")
		if err := e.teams["team-c"].Delete(ctx, borrow); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, 30*time.Second, func() string {
			if err := e.cp.c.Get(ctx, client.ObjectKeyFromObject(borrow), &v1alpha1.DNSRecord{}); err == nil {
				return "the borrower is not gone yet"
			}
			return ""
		})
		// The zone still holds team-a's value: a record of team-c's own for the name meets it.
		probe := e.record(t, "team-c", "probe", host, "", "deleg", v1alpha1.NewEndpoint(host, "CNAME", 60, "other.example.net"))
		e.waitCondition(t, e.teams["team-c"], probe, string(v1alpha1.ConditionTypeConflicted), "True", "good.example.net")
		e.unchanged(t, "team-a", before)
	})
}
