//go:build integration

package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/test/emulators/cloud"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// fleet is a delegation primary and a secondary it reads through a Secret add-cluster-secret
// applied: the pair's clusters, each running the binary's controllers on namespace ns, the primary
// publishing into a Route 53 emulator's zone through its default provider Secret.
type fleet struct {
	*pair
	cloud             *cloud.Cloud
	provider          providers.Provider
	zone              providers.Zone
	secretsNS         string
	primaryID, readID string
}

func startFleet(t *testing.T) *fleet {
	t.Helper()
	ctx := t.Context()
	f := &fleet{pair: newPair(t), secretsNS: "clusters-" + rand.String(6)}
	shipRemoteRole(t, f.read)
	if err := f.primary.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.secretsNS}}); err != nil {
		t.Fatal(err)
	}
	f.mustRun(t, "add-cluster-secret", "--context", "read", "--name", "read-cluster", "-n", f.secretsNS,
		"--service-account-namespace", "remote-"+rand.String(6), "--apply")

	c, err := cloud.Start(cloud.AWS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.AddZone(zoneName)
	f.cloud = c
	secret := c.Secret(f.ns, "provider")
	secret.Labels = map[string]string{v1alpha1.DefaultProviderLabel: "true"}
	if err := f.primary.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	f.provider, f.zone = onlyZone(t, secret, f.primary.Client)
	f.primaryID, f.readID = clusterID(t, f.primary), clusterID(t, f.read)

	opts := dnsrecord.DefaultOptions()
	opts.MinRecheck, opts.MaxRecheck = 300*time.Millisecond, 600*time.Millisecond
	opts.MinBackoff, opts.MaxBackoff = 500*time.Millisecond, 4*time.Second
	testenv.StartManagerIn(t, f.primary, f.ns, func(mgr ctrl.Manager) error {
		return app.AddControllers(mgr, app.Options{EnableRecordController: true, NoHealthProbeController: true,
			ClusterSecretNamespace: f.secretsNS, ClusterSecretLabel: defaultClusterSecretLabel,
			OwnerLeases: app.OwnerLeaseOptions{Every: lease.MinEvery, Duration: lease.DefaultDuration, Expiry: true}}, factory(), opts)
	})
	testenv.StartManagerIn(t, f.read, f.ns, func(mgr ctrl.Manager) error {
		return app.AddControllers(mgr, app.Options{EnableRecordController: true, NoHealthProbeController: true,
			DelegationRole: dnsrecord.DelegationRoleSecondary,
			OwnerLeases:    app.OwnerLeaseOptions{Every: lease.MinEvery, Duration: lease.DefaultDuration, Expiry: true}}, factory(), opts)
	})
	return f
}

func clusterID(t *testing.T, env *testenv.Env) string {
	t.Helper()
	ns := &corev1.Namespace{}
	if err := env.Client.Get(t.Context(), types.NamespacedName{Name: metav1.NamespaceSystem}, ns); err != nil {
		t.Fatal(err)
	}
	return string(ns.UID)
}

// delegating creates a delegating record on env.
func (f *fleet) delegating(t *testing.T, env *testenv.Env, name, rootHost string, eps ...*v1alpha1.Endpoint) {
	t.Helper()
	r := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: rootHost, Delegate: true, Endpoints: eps},
	}
	if err := env.Client.Create(t.Context(), r); err != nil {
		t.Fatal(err)
	}
}

func (f *fleet) get(t *testing.T, env *testenv.Env, name string) *v1alpha1.DNSRecord {
	t.Helper()
	r := &v1alpha1.DNSRecord{}
	if err := env.Client.Get(t.Context(), types.NamespacedName{Namespace: f.ns, Name: name}, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// published is the zone's record of key, as "targets ttl", or "" when it holds none.
func (f *fleet) published(t *testing.T, key v1alpha1.EndpointKey) string {
	t.Helper()
	view, err := f.provider.Records(t.Context(), f.zone)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range view.Endpoints {
		if e.Key() == key {
			targets := slices.Clone([]string(e.Targets))
			slices.Sort(targets)
			return strings.Join(targets, ",")
		}
	}
	return ""
}

// A primary reading a secondary through the Secret add-cluster-secret applied (the token of a
// ServiceAccount holding only the shipped remote role) publishes the secondary's delegating record
// beside its own and writes its entry of the record's status there; explain names, for each answer
// the authoritative record holds, the contributor each address comes from, its cluster (the
// Secret's name and the cluster's ID) and its record, also for a name only the other cluster
// publishes; a cluster it cannot read is said, and its contributors are named by their leases.
func TestExplainDelegatedAnswers(t *testing.T) {
	f := startFleet(t)
	root, only := "app."+zoneName, "only."+zoneName
	f.delegating(t, f.primary, "pri", root, v1alpha1.NewEndpoint(root, "A", 60, "10.0.0.1"))
	f.delegating(t, f.read, "sec", root, v1alpha1.NewEndpoint(root, "A", 60, "10.0.0.2"))
	f.delegating(t, f.read, "sec-only", only, v1alpha1.NewEndpoint(only, "A", 60, "10.0.1.2"))
	testenv.Eventually(t, 2*time.Minute, func() string {
		for key, want := range map[v1alpha1.EndpointKey]string{{DNSName: root, RecordType: "A"}: "10.0.0.1,10.0.0.2", {DNSName: only, RecordType: "A"}: "10.0.1.2"} {
			if got := f.published(t, key); got != want {
				return fmt.Sprintf("the zone holds A %s %q, want %q", key.DNSName, got, want)
			}
		}
		for _, name := range []string{"sec", "sec-only"} {
			st, ok := f.get(t, f.read, name).Status.RemoteRecordStatus(f.primaryID)
			if c := conditionOf(st, v1alpha1.ConditionTypeReady); !ok || c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Sprintf("%s's entry of the primary: %v %+v", name, ok, st.Conditions)
			}
		}
		return ""
	})
	pri, sec, secOnly := ownerIDOf(f.get(t, f.primary, "pri")), ownerIDOf(f.get(t, f.read, "sec")), ownerIDOf(f.get(t, f.read, "sec-only"))
	priFrom := "this cluster (" + f.primaryID + "), DNSRecord " + f.ns + "/pri"
	secFrom := func(name string) string {
		return "cluster read-cluster (" + f.readID + "), DNSRecord " + f.ns + "/" + name
	}
	// The claims state their wishes once the contributors have seen that they share the name.
	var out string
	testenv.Eventually(t, time.Minute, func() string {
		_, out, _ = f.run(t, "explain", root, "--cluster-secret-namespace", f.secretsNS)
		for _, want := range []string{
			"  " + f.primaryID + " (this cluster),read-cluster  DNSRecord " + f.ns + "/pri,read-cluster: DNSRecord " + f.ns + "/sec  " + root + "\n",
			"    <- 10.0.0.1 from " + pri + ": " + priFrom + "\n",
			"    <- 10.0.0.2 from " + sec + ": " + secFrom("sec") + "\n",
			"  merged from authoritative record " + f.ns + "/authoritative-record-",
			"    " + pri + " wants 10.0.0.1 ttl 60: " + priFrom + "\n",
			"    " + sec + " wants 10.0.0.2 ttl 60: " + secFrom("sec") + " [lease " + lease.Key(f.readID) + "]\n",
		} {
			if !strings.Contains(out, want) {
				return fmt.Sprintf("explain %s lacks %q", root, want)
			}
		}
		return ""
	})
	t.Log(out)

	// A name only the other cluster publishes: found through the authoritative record.
	out, _ = f.mustRun(t, "explain", only, "--cluster-secret-namespace", f.secretsNS)
	contains(t, "explain "+only, out, "as DNSRecord "+f.ns+"/authoritative-record-")
	contains(t, "explain "+only, out, "  read-cluster  read-cluster: DNSRecord "+f.ns+"/sec-only  "+only+"\n")
	contains(t, "explain "+only, out, "    <- 10.0.1.2 from "+secOnly+": "+secFrom("sec-only")+"\n")
	html, _ := f.mustRun(t, "explain", only, "--cluster-secret-namespace", f.secretsNS, "-o", "html")
	contains(t, "explain -o html", html, "<td colspan=\"8\">&lt;- 10.0.1.2 from "+secOnly+": "+secFrom("sec-only")+"</td>")

	// A cluster Secret whose server cannot be reached from here: said, and the other cluster's
	// contributor is named by the lease its claims name.
	unreachable := testenv.NewNamespace(t, f.primary, "unreachable-")
	broken := []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: gone\n  cluster:\n    server: https://127.0.0.1:1\n" +
		"contexts:\n- name: gone\n  context:\n    cluster: gone\n    user: gone\ncurrent-context: gone\nusers:\n- name: gone\n  user:\n    token: x\n")
	if err := f.primary.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: unreachable, Labels: map[string]string{defaultClusterSecretLabel: "true"}},
		Data:       map[string][]byte{clusterSecretKey: broken},
	}); err != nil {
		t.Fatal(err)
	}
	out, _ = f.mustRun(t, "explain", root, "--cluster-secret-namespace", unreachable)
	contains(t, "explain, unreachable cluster", out, "  ! cluster gone (secret "+unreachable+"/gone) could not be read from here: ")
	contains(t, "explain, unreachable cluster", out, "    <- 10.0.0.2 from "+sec+": another cluster ("+f.readID+"), no DNSRecord found with its owner ID\n")
}

func conditionOf(st v1alpha1.DNSRecordStatus, typ string) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}
