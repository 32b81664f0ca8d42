//go:build integration

package dnsrecord_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/pkg/grant"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/integration/internal/recordplane"
	"github.com/dnspolicy/dnspolicy-controller/test/resolver"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// Delegation across clusters (docs/delegation.md), Kuadrant's scenarios: three control planes, two
// primaries and a secondary, each running the binary's wiring. Each primary reaches the secondary
// and the other primary through kubeconfig Secrets, and serves its authoritative records with the
// embedded DNS server (a kuadrant.io/coredns default provider Secret), asked with a real client.

// deleg is the delegation plane of one test: the three clusters share a namespace name.
type deleg struct {
	ns                   string
	zone                 string
	p1, p2, sec          *cluster
	p1Addr, p2Addr       string
	p1ID, p2ID           string
	startP1, startP2     func() func()
	stopP2               func()
	startSec             func() func()
	stopSec              func()
	secretsP1, secretsP2 string
}

// kubeconfigOf is a kubeconfig reaching env, as `kubectl dns add-cluster-secret` writes one.
func kubeconfigOf(t *testing.T, env *testenv.Env, name string) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: env.Config.CertData, ClientKeyData: env.Config.KeyData, Token: env.Config.BearerToken}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// clusterSecret creates, in namespace ns of env, the kubeconfig Secret of another cluster.
func clusterSecret(t *testing.T, env *testenv.Env, ns, name string, of *testenv.Env) {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{app.DefaultClusterSecretLabel: "true"}},
		Data:       map[string][]byte{app.ClusterSecretKey: kubeconfigOf(t, of, name)},
	}
	if err := env.Client.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
}

func clusterIDOf(t *testing.T, env *testenv.Env) string {
	t.Helper()
	id, err := env.ClusterID(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// startDeleg starts the plane: envs[0] and envs[1] primaries, envs[2] the secondary, whose owner
// lease is renewed every secEvery and lasts secDuration (0: the defaults, no expiry).
func startDeleg(t *testing.T, secEvery, secDuration time.Duration) *deleg {
	t.Helper()
	d := &deleg{ns: "rdeleg-" + rand.String(6), zone: "rdeleg.example.com"}
	for _, e := range envs {
		if err := e.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.ns}}); err != nil {
			t.Fatal(err)
		}
	}
	d.p1ID, d.p2ID = clusterIDOf(t, envs[0]), clusterIDOf(t, envs[1])
	d.secretsP1, d.secretsP2 = testenv.NewNamespace(t, envs[0], "clusters-"), testenv.NewNamespace(t, envs[1], "clusters-")
	clusterSecret(t, envs[0], d.secretsP1, "secondary", envs[2])
	clusterSecret(t, envs[0], d.secretsP1, "primary2", envs[1])
	clusterSecret(t, envs[1], d.secretsP2, "secondary", envs[2])
	clusterSecret(t, envs[1], d.secretsP2, "primary1", envs[0])
	for _, e := range envs[:2] {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: d.ns, Name: "coredns", Labels: map[string]string{v1alpha1.DefaultProviderLabel: "true"}},
			Type:       v1alpha1.SecretTypeCoreDNS,
			StringData: map[string]string{v1alpha1.CoreDNSZonesKey: d.zone},
		}
		if err := e.Client.Create(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	opts := fastOptions()
	d.p1Addr, d.p2Addr = freeport.Addr(t), freeport.Addr(t)
	primary := func(i int, addr, secrets string) func() func() {
		return func() func() {
			f, err := app.NewFactory(app.Options{Providers: []string{"coredns"}}, inmemory.NewStore())
			if err != nil {
				t.Fatal(err)
			}
			o := app.Options{EnableRecordController: true, NoHealthProbeController: true, DNSServerAddress: addr,
				ClusterSecretNamespace: secrets, ClusterSecretLabel: app.DefaultClusterSecretLabel,
				OwnerLeases: app.OwnerLeaseOptions{Expiry: true}}
			o.Grants.Grants = grant.Grants{{Namespaces: []string{d.ns}, Domains: []string{d.zone}}}
			return recordplane.StartIn(t, envs[i], d.ns, recordplane.Controller{App: o, Factory: f, Record: opts})
		}
	}
	d.startP1, d.startP2 = primary(0, d.p1Addr, d.secretsP1), primary(1, d.p2Addr, d.secretsP2)
	d.startP1()
	d.stopP2 = d.startP2()
	d.startSec = func() func() {
		return recordplane.StartIn(t, envs[2], d.ns, recordplane.Controller{
			App: app.Options{EnableRecordController: true, NoHealthProbeController: true, DelegationRole: dnsrecord.DelegationRoleSecondary,
				OwnerLeases: app.OwnerLeaseOptions{Every: secEvery, Duration: secDuration, Expiry: true}},
			Record: opts,
		})
	}
	d.stopSec = d.startSec()
	d.p1 = &cluster{name: "primary1", c: envs[0].Client, ns: d.ns}
	d.p2 = &cluster{name: "primary2", c: envs[1].Client, ns: d.ns}
	d.sec = &cluster{name: "secondary", c: envs[2].Client, ns: d.ns}
	return d
}

// answers are both primaries' DNS answers for host's A records, or why they differ from want.
func (d *deleg) answers(host, want string) string {
	for _, addr := range []string{d.p1Addr, d.p2Addr} {
		if got := resolver.AnswersA(addr, host); got != want {
			return fmt.Sprintf("%s at %s: %q, want %q", host, addr, got, want)
		}
	}
	return ""
}

// entry is a primary's entry of a record's status.remoteRecordStatuses, as "<Ready condition>", or
// "none".
func entry(r *v1alpha1.DNSRecord, clusterID string) string {
	st, ok := r.Status.RemoteRecordStatus(clusterID)
	if !ok {
		return "none"
	}
	return condition(&v1alpha1.DNSRecord{Status: st}, v1alpha1.ConditionTypeReady)
}

// authoritative lists the endpoints of a cluster's authoritative records in the namespace, sorted.
func authoritative(t *testing.T, cl *cluster) []string {
	t.Helper()
	list := &v1alpha1.DNSRecordList{}
	if err := cl.c.List(t.Context(), list, client.InNamespace(cl.ns), client.MatchingLabels{v1alpha1.AuthoritativeRecordLabel: "true"}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range list.Items {
		for _, e := range r.Spec.Endpoints {
			out = append(out, r.Name+" "+e.String())
		}
	}
	slices.Sort(out)
	return out
}

// Records of a primary and of a secondary merge into one authoritative record on each primary;
// both primaries build identical ones and answer alike; the secondary's edits reach both; a record
// of the secondary that does not delegate, or that its namespace is not granted, stays out; a
// deleted delegating record keeps its finalizer until every primary has withdrawn it; the
// authoritative record goes with its last contributor.
func TestRemoteDelegation(t *testing.T) {
	d := startDeleg(t, 0, 0)
	root := "app." + d.zone
	d.p1.delegating(t, "pri", root, nil, a(root, 60, "10.20.0.1"))
	d.sec.delegating(t, "sec", root, nil, a(root, 60, "10.20.0.2"))
	eventually(t, 60*time.Second, func() string { return d.answers(root, "10.20.0.1,10.20.0.2") })
	eventually(t, 20*time.Second, func() string {
		r := d.sec.get(t, "sec")
		for _, id := range []string{d.p1ID, d.p2ID} {
			if got, want := entry(r, id), "True ProviderSuccess: Provider ensured the dns record"; got != want {
				return fmt.Sprintf("sec's entry of %s: %q, want %q", id, got, want)
			}
		}
		if got := entry(d.p1.get(t, "pri"), d.p2ID); !strings.HasPrefix(got, "True ProviderSuccess") {
			return "pri's entry of primary2: " + got
		}
		return ""
	})
	st, _ := d.sec.get(t, "sec").Status.RemoteRecordStatus(d.p1ID)
	if st.OwnerID != d.sec.get(t, "sec").Status.OwnerID || st.ZoneID == "" || len(st.Endpoints) == 0 {
		t.Errorf("sec's entry of primary1: owner %q (record's %q), zone %q, endpoints %v", st.OwnerID, d.sec.get(t, "sec").Status.OwnerID, st.ZoneID, st.Endpoints)
	}
	eventually(t, 20*time.Second, func() string {
		if p1, p2 := authoritative(t, d.p1), authoritative(t, d.p2); !slices.Equal(p1, p2) || len(p1) == 0 {
			return fmt.Sprintf("authoritative records differ:\nprimary1 %v\nprimary2 %v", p1, p2)
		}
		return ""
	})

	// delegate: false on the secondary stays out, and so does a name the namespace is not granted.
	plain := "plain." + d.zone
	d.sec.record(t, "plain", plain, a(plain, 60, "10.20.0.9"))
	denied := "app.elsewhere.example.org"
	d.sec.delegating(t, "denied", denied, nil, a(denied, 60, "10.20.0.8"))
	eventually(t, 20*time.Second, func() string {
		got := entry(d.sec.get(t, "denied"), d.p1ID)
		if !strings.HasPrefix(got, "False NotGranted: namespace "+d.ns+" has no grant for "+denied) {
			return "denied's entry of primary1: " + got
		}
		return ""
	})
	if got := resolver.AnswersA(d.p1Addr, plain); got != "" {
		t.Errorf("plain (delegate: false) answered by primary1: %q", got)
	}
	if got := entry(d.sec.get(t, "plain"), d.p1ID); got != "none" {
		t.Errorf("plain (delegate: false) has primary1's entry %q", got)
	}

	// An edit on the secondary reaches both primaries.
	r := d.sec.get(t, "sec")
	patch := client.MergeFrom(r.DeepCopy())
	r.Spec.Endpoints = []*v1alpha1.Endpoint{a(root, 60, "10.20.0.3")}
	if err := d.sec.c.Patch(t.Context(), r, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() string { return d.answers(root, "10.20.0.1,10.20.0.3") })

	// Deleted while primary2 is stopped: primary1 withdraws it, and the finalizer waits for primary2.
	d.stopP2()
	d.sec.delete(t, "sec")
	waiting := "False ProviderEndpointsDeletion: DNS records are being deleted from provider: waiting for primary clusters " + d.p2ID +
		" to report them removed in status.remoteRecordStatuses"
	eventually(t, 30*time.Second, func() string {
		if got := resolver.AnswersA(d.p1Addr, root); got != "10.20.0.1" {
			return "primary1 answers " + got
		}
		r, ok := d.sec.exists(t, "sec")
		if !ok {
			return "sec released while primary2 still publishes it"
		}
		if got := condition(r, v1alpha1.ConditionTypeReady); got != waiting || !controllerutil.ContainsFinalizer(r, v1alpha1.RecordFinalizer) {
			return fmt.Sprintf("sec: Ready %q, finalizers %v; want %q", got, r.Finalizers, waiting)
		}
		if got := entry(r, d.p1ID); got != "False ProviderEndpointsRemoved: DNS records removed from provider" {
			return "sec's entry of primary1: " + got
		}
		return ""
	})
	d.stopP2 = d.startP2()
	eventually(t, 60*time.Second, func() string {
		if _, ok := d.sec.exists(t, "sec"); ok {
			return "sec still exists"
		}
		return d.answers(root, "10.20.0.1")
	})

	// The last contributor takes the authoritative record with it, on both primaries. A primary's
	// own delegating record waits for the other primary's entry too.
	d.stopP2()
	d.p1.delete(t, "pri")
	eventually(t, 30*time.Second, func() string {
		if p1 := authoritative(t, d.p1); len(p1) > 0 {
			return fmt.Sprintf("primary1's authoritative records left: %v", p1)
		}
		r, ok := d.p1.exists(t, "pri")
		if !ok {
			return "pri released while primary2 still publishes it"
		}
		if got := condition(r, v1alpha1.ConditionTypeReady); got != waiting {
			return fmt.Sprintf("pri: Ready %q, want %q", got, waiting)
		}
		return ""
	})
	d.stopP2 = d.startP2()
	eventually(t, 60*time.Second, func() string {
		if _, ok := d.p1.exists(t, "pri"); ok {
			return "pri still exists"
		}
		if p1, p2 := authoritative(t, d.p1), authoritative(t, d.p2); len(p1)+len(p2) > 0 {
			return fmt.Sprintf("authoritative records left: primary1 %v, primary2 %v", p1, p2)
		}
		return d.answers(root, "")
	})
	if v, _ := testenv.Metric("dns_provider_active_multi_cluster_count", nil); v < 4 {
		t.Errorf("dns_provider_active_multi_cluster_count %v, want at least 4 (two kubeconfig Secrets on each primary)", v)
	}
	if _, ok := testenv.Metric("dns_provider_remote_record_reconcile_count", map[string]string{"cluster": "secondary", "dns_record_name": "denied", "dns_record_namespace": d.ns}); !ok {
		t.Error("no dns_provider_remote_record_reconcile_count of the secondary's record denied")
	}
}

// A secondary whose controller stops (its owner lease stops changing) leaves both primaries'
// answers where it shares a name with a live owner, once its lease has expired, and keeps a name
// it holds alone (a name never loses its last targets to expiry); its records say why in the
// primaries' entries. Started again, it renews its lease and publishes again.
func TestRemoteDelegationLeaseExpiry(t *testing.T) {
	d := startDeleg(t, 5*time.Second, 10*time.Second)
	root, solo := "app."+d.zone, "solo."+d.zone
	d.p1.delegating(t, "pri", root, nil, a(root, 60, "10.21.0.1"))
	d.sec.delegating(t, "sec", root, nil, a(root, 60, "10.21.0.2"))
	d.sec.delegating(t, "alone", solo, nil, a(solo, 60, "10.21.0.3"))
	eventually(t, 60*time.Second, func() string {
		if msg := d.answers(root, "10.21.0.1,10.21.0.2"); msg != "" {
			return msg
		}
		return d.answers(solo, "10.21.0.3")
	})
	lease := d.sec.get(t, "sec").Annotations[v1alpha1.OwnerLeaseAnnotation]
	if !strings.HasPrefix(lease, "dnspolicy-lease=1 holder=") {
		t.Fatalf("the secondary's record carries no owner lease: %q", lease)
	}
	eventually(t, 20*time.Second, func() string {
		// Its claims in the authoritative records name the secondary's lease, whose record is there.
		for _, cl := range []*cluster{d.p1, d.p2} {
			if got := strings.Join(authoritative(t, cl), "\n"); !strings.Contains(got, "dnspolicy-lease-") || !strings.Contains(got, "claim-lease=") {
				return fmt.Sprintf("%s's authoritative records hold no lease of the secondary:\n%s", cl.name, got)
			}
		}
		return ""
	})

	stopped := time.Now()
	d.stopSec()
	eventually(t, 90*time.Second, func() string { return d.answers(root, "10.21.0.1") })
	t.Logf("the stopped secondary left the shared name %v after its controller stopped (lease 10s, renewal 5s, tolerance 10s)", time.Since(stopped).Round(time.Second))
	if msg := d.answers(solo, "10.21.0.3"); msg != "" {
		t.Errorf("a name the expired owner holds alone must keep its targets: %s", msg)
	}
	eventually(t, 30*time.Second, func() string {
		for _, id := range []string{d.p1ID, d.p2ID} {
			if got := entry(d.sec.get(t, "sec"), id); !strings.HasPrefix(got, "False OwnerLeaseExpired: the owner lease ") {
				return fmt.Sprintf("sec's entry of %s: %q", id, got)
			}
		}
		return ""
	})

	d.stopSec = d.startSec()
	eventually(t, 60*time.Second, func() string { return d.answers(root, "10.21.0.1,10.21.0.2") })
	eventually(t, 30*time.Second, func() string {
		if got := entry(d.sec.get(t, "sec"), d.p1ID); !strings.HasPrefix(got, "True ProviderSuccess") {
			return "sec's entry of primary1: " + got
		}
		return ""
	})
}
