//go:build integration

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1 "k8s.io/api/core/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/health"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/plan"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/test/emulators/cloud"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

var envs []*testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 1, &envs)) }

const zoneName = "example.com"

// The owners of the shared zone: this cluster's record (published by the controller), a live
// cluster with a lease, a dead cluster whose lease stopped an hour ago, and a cluster on Kuadrant's
// dns-operator, whose claims name no lease and say nothing of its wish.
const (
	ownerA   = "cluster-a-web"
	ownerB   = "cluster-b-web"
	holderB  = "cluster-b-uid"
	ownerC   = "cluster-c-web"
	holderC  = "cluster-c-uid"
	ownerK   = "kuadrant-k1"
	kuadrant = "10.0.0.9"
)

// fixture is the zone and the cluster the plugin is run against.
type fixture struct {
	cloud      *cloud.Cloud
	ns         string
	kubeconfig string
	provider   providers.Provider
	zone       providers.Zone
	// holderA is the cluster ID of the controller the test runs (its lease's holder).
	holderA string
}

func TestPlugin(t *testing.T) {
	f := setup(t)

	// owners: every owner at the host, with its lease (or none) and what it claims.
	out := f.run(t, "owners", "app.example.com")
	for _, want := range []string{
		fmt.Sprintf("zone example.com (%s, aws) through secret %s/provider, as DNSRecord %s/web publishes app.example.com", f.zone.ID, f.ns, f.ns),
		"names: app.example.com\n",
		"OWNER " + ownerA + "\n  lease: holder " + f.holderA + ", record " + lease.RecordName(f.holderA, zoneName),
		"OWNER " + ownerB + "\n  lease: holder " + holderB + ", record " + lease.RecordName(holderB, zoneName),
		"OWNER " + ownerC + "\n  lease: holder " + holderC + ", record " + lease.RecordName(holderC, zoneName),
		"OWNER " + ownerK + "\n  no lease: never expires",
		"every 30s, expires 1m15s after its value last changed",
		"A app.example.com wants 10.0.0.2 ttl 30",
		"A app.example.com wants 10.0.0.3 ttl 60",
		"A app.example.com (Kuadrant-format claim, wish not recorded; the record holds 10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.9 ttl 60)",
		"health statement " + health.RecordName(ownerC, "app.example.com"),
	} {
		contains(t, "owners", out, want)
	}
	// The live lease looks live, the dead one expired; both ages are labelled as estimates.
	section := func(owner string) string {
		_, rest, _ := strings.Cut(out, "OWNER "+owner+"\n")
		s, _, _ := strings.Cut(rest, "\nOWNER ")
		return s
	}
	contains(t, "owners "+ownerB, section(ownerB), "by this machine's clock (estimate: clocks differ), looks live")
	contains(t, "owners "+ownerC, section(ownerC), "age about 1h0m")
	contains(t, "owners "+ownerC, section(ownerC), "looks EXPIRED")
	if strings.Contains(section(ownerC), "only-c.example.com") {
		t.Errorf("owners app.example.com lists a name outside the host:\n%s", out)
	}

	// records: this cluster's records with zone, owners and readiness, in each format.
	out = f.run(t, "records")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME ") || !strings.HasPrefix(lines[1], "api ") || !strings.HasPrefix(lines[2], "web ") {
		t.Fatalf("records: want a header and rows api, web; got\n%s", out)
	}
	for _, want := range []string{"app.example.com", "example.com (" + f.zone.ID + ")", ownerA, ownerA + "," + ownerB + "," + ownerC + "," + ownerK, "True", "ProviderSuccess"} {
		contains(t, "records row web", lines[2], want)
	}
	contains(t, "records row api", lines[1], "api.example.com")
	contains(t, "records -A header", f.run(t, "records", "-A"), "NAMESPACE  ")

	var asJSON recordList
	if err := json.Unmarshal([]byte(f.run(t, "records", "-o", "json")), &asJSON); err != nil {
		t.Fatal(err)
	}
	var asYAML recordList
	if err := yaml.Unmarshal([]byte(f.run(t, "records", "-o", "yaml")), &asYAML); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]recordList{"json": asJSON, "yaml": asYAML} {
		if len(got.Records) != 2 {
			t.Fatalf("records -o %s: %+v", name, got)
		}
		web := got.Records[1]
		if web.Name != "web" || web.Namespace != f.ns || web.Zone != zoneName || web.ZoneID != f.zone.ID || web.OwnerID != ownerA ||
			!slices.Equal(web.DomainOwners, []string{ownerA, ownerB, ownerC, ownerK}) || web.Ready != "True" || web.Reason != "ProviderSuccess" {
			t.Errorf("records -o %s: web is %+v", name, web)
		}
	}

	// explain: who answers (a simple host: every client, the union of the owners' addresses), per
	// record key the claimants and wishes, who won the TTL, the expired lease, the human's record.
	out = f.run(t, "explain", "app.example.com")
	for _, want := range []string{
		"\n  all  -       100.0%  10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.9  " + ownerA + "," + ownerB + "," + ownerC + "," + ownerK + "  " +
			f.holderA + " (this cluster)," + holderB + "," + holderC + "  DNSRecord " + f.ns + "/web  app.example.com\n",
		"\nA app.example.com\n  published: 10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.9 ttl 60\n  claimants:\n    " + ownerA + " wants 10.0.0.1 ttl 60\n    " + ownerB + " wants 10.0.0.2 ttl 30\n    " + ownerC + " wants 10.0.0.3 ttl 60 [lease looks expired]\n    " + ownerK + " (Kuadrant-format claim",
		"    recordTTL: " + ownerB + " wants 30, 60 is published, the wish of " + ownerA + " (it holds the published value)",
		"\nTXT app.example.com\n  published: \"v=spf1 -all\" ttl 300\n  no owner claims it: a human's",
		"\nTXT " + health.RecordName(ownerC, "app.example.com") + "\n  published: \"dnspolicy-health=1 owner=" + ownerC + " state=healthy renewal=7\" ttl 60\n  health statement of " + ownerC + " about app.example.com",
		"leases: the lease of " + ownerC + " looks expired",
		"once those leases are judged expired, " + ownerA + "'s next pass would change:\n  update A app.example.com: 10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.9 ttl 60 -> 10.0.0.1,10.0.0.2,10.0.0.9 ttl 60\n  delete TXT " + registry.TXTName(ownerC, "A", "app.example.com") + " ",
		"settled: with every lease counted live, planning every owner with what its claims wish changes nothing here",
	} {
		contains(t, "explain", out, want)
	}

	// remove-owner --dry-run prints the exact changes and changes nothing.
	before := f.cloud.Dump(zoneName)
	beforeEps := f.read(t)
	out = f.run(t, "remove-owner", ownerC, "--zone", zoneName, "--lease", holderC, "--dry-run")
	claimApp := registry.TXTName(ownerC, "A", "app.example.com")
	claimOnly := registry.TXTName(ownerC, "A", "only-c.example.com")
	wantChanges := []string{
		"withdrawing owner " + ownerC + ": 5 changes (ownership gate passed for " + ownerC + ")",
		"  update A app.example.com: 10.0.0.1,10.0.0.2,10.0.0.3,10.0.0.9 ttl 60 -> 10.0.0.1,10.0.0.2,10.0.0.9 ttl 60\n",
		"  delete A only-c.example.com 10.0.3.3 ttl 60\n",
		"  delete TXT " + claimApp + " ",
		"  delete TXT " + claimOnly + " ",
		"  delete TXT " + health.RecordName(ownerC, "app.example.com") + " ",
		"deleting the lease of cluster " + holderC + ": 1 changes (ownership gate passed for " + holderC + ")\n  delete TXT " + lease.RecordName(holderC, zoneName) + " ",
	}
	for _, want := range append(wantChanges, "dry run: nothing was changed") {
		contains(t, "remove-owner --dry-run", out, want)
	}
	if after := f.cloud.Dump(zoneName); !slices.Equal(before, after) {
		t.Fatalf("the dry run changed the zone:\nbefore %v\nafter  %v", before, after)
	}

	// remove-owner for real applies what the dry run printed, and nothing else.
	out = f.run(t, "remove-owner", ownerC, "--zone", f.zone.ID, "--lease", holderC)
	for _, want := range append(wantChanges, "applied 6 changes in 2 batches") {
		contains(t, "remove-owner", out, want)
	}
	gone := map[string]bool{
		"A only-c.example.com": true, "TXT " + claimApp: true, "TXT " + claimOnly: true,
		"TXT " + health.RecordName(ownerC, "app.example.com"): true, "TXT " + lease.RecordName(holderC, zoneName): true,
	}
	want := map[string]string{}
	for _, e := range beforeEps {
		k := keyString(e.Key())
		if gone[k] {
			continue
		}
		if k == "A app.example.com" {
			e = e.DeepCopy()
			e.Targets = slices.DeleteFunc(e.Targets, func(t string) bool { return t == "10.0.0.3" })
		}
		want[k] = valueString(e)
	}
	got := map[string]string{}
	for _, e := range f.read(t) {
		got[keyString(e.Key())] = valueString(e)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("after remove-owner %s holds %q, want %q", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("after remove-owner the zone holds %s %s, which it did not", k, v)
		}
	}
	if len(got) != len(beforeEps)-len(gone) {
		t.Errorf("zone holds %d record sets after remove-owner, want %d", len(got), len(beforeEps)-len(gone))
	}

	// The zone reads as the owner left: owners and explain no longer see it; a second run has
	// nothing to do.
	out = f.run(t, "owners", "app.example.com")
	if strings.Contains(out, ownerC) {
		t.Errorf("owners still lists %s after remove-owner:\n%s", ownerC, out)
	}
	contains(t, "explain after remove-owner", f.run(t, "explain", "app.example.com"), "leases: no owner's lease looks expired")
	contains(t, "remove-owner again", f.run(t, "remove-owner", ownerC, "--zone", zoneName), "owner "+ownerC+" has nothing in the zone: nothing to do")
}

// TestPluginErrors: the plugin refuses what it cannot do, with messages that say what to do.
func TestPluginErrors(t *testing.T) {
	f := setup(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"remove-owner", ownerC}, "--zone is required"},
		{[]string{"records", "-o", "wide"}, "-o wide: want table, json or yaml"},
		{[]string{"owners", "nowhere.example.com"}, "no DNSRecord in namespace " + f.ns + " publishes nowhere.example.com; name the zone's provider secret with --secret"},
		{[]string{"owners", "app.example.com", "--zone", "other.example.org"}, "no DNSRecord in namespace " + f.ns + " publishes app.example.com"},
		{[]string{"owners", "app.example.com", "--secret", "provider", "--zone", "nope.example"}, "no zone with ID or name nope.example"},
		// The lease is still named by B's claims: B is alive, its lease stays.
		{[]string{"remove-owner", ownerC, "--zone", zoneName, "--lease", holderB, "--dry-run"}, "the lease of cluster " + holderB + " is still named by claims of " + ownerB},
		{[]string{"remove-owner", ownerC, "--zone", zoneName, "--lease", "no-such-cluster", "--dry-run"}, "no lease record of cluster no-such-cluster"},
		{[]string{"remove-owner", ownerA, "--zone", zoneName, "--dry-run"}, "/web of this cluster: delete that record instead"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), append(tc.args, "--kubeconfig", f.kubeconfig), &stdout, &stderr, time.Now)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	// An explicit --secret finds the zone the Secret's backend holds the host in.
	contains(t, "owners --secret", f.run(t, "owners", "human.example.com", "--secret", f.ns+"/provider"),
		"zone example.com ("+f.zone.ID+", aws) through secret "+f.ns+"/provider, given by --secret\nnames: human.example.com\nno owner claims a record at these names")
}

// setup starts a Route 53 emulator with zone example.com, a namespace with its provider Secret and
// two DNSRecords published by the controller, then writes the other clusters' contributions as
// their controllers would (and the Kuadrant cluster's as Kuadrant writes them, and a human's
// records), waits until the controller has seen every owner, and stops the controller so only the
// plugin changes the zone.
func setup(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	f := newFixture(t, "kubectl-dns-")
	ns := f.ns

	opts := dnsrecord.DefaultOptions()
	opts.MinRecheck, opts.MaxRecheck = 300*time.Millisecond, 600*time.Millisecond
	stop := testenv.StartManagerIn(t, envs[0], ns, func(mgr ctrl.Manager) error {
		// Renewing every 5 s, the controller writes its cluster's lease soon after it shares a name.
		return app.AddControllers(mgr, app.Options{EnableRecordController: true,
			OwnerLeases: app.OwnerLeaseOptions{Every: lease.MinEvery, Duration: lease.DefaultDuration, Expiry: true}}, factory(), opts)
	})
	f.record(t, "web", ownerA, "app.example.com", v1alpha1.NewEndpoint("app.example.com", "A", 60, "10.0.0.1"))
	f.record(t, "api", "cluster-a-api", "api.example.com", v1alpha1.NewEndpoint("api.example.com", "A", 60, "10.0.1.1"))
	for _, name := range []string{"web", "api"} {
		testenv.Eventually(t, time.Minute, func() string {
			r := f.get(t, name)
			if cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionTypeReady); cond == nil || cond.Status != metav1.ConditionTrue {
				return fmt.Sprintf("record %s not ready: %+v", name, r.Status.Conditions)
			}
			return ""
		})
	}

	now := time.Now()
	f.write(t, []string{holderB}, &batch.Changes{Create: []*v1alpha1.Endpoint{lease.Renew(holderB, now, 30*time.Second, 75*time.Second).Record(zoneName)}})
	f.publish(t, ownerB, holderB, v1alpha1.NewEndpoint("app.example.com", "A", 30, "10.0.0.2"))
	f.write(t, []string{holderC}, &batch.Changes{Create: []*v1alpha1.Endpoint{lease.Renew(holderC, now.Add(-time.Hour), 30*time.Second, 75*time.Second).Record(zoneName)}})
	f.publish(t, ownerC, holderC, v1alpha1.NewEndpoint("app.example.com", "A", 60, "10.0.0.3"), v1alpha1.NewEndpoint("only-c.example.com", "A", 60, "10.0.3.3"))
	f.write(t, []string{ownerC}, &batch.Changes{Create: []*v1alpha1.Endpoint{health.Statement{Owner: ownerC, Healthy: true, Renewal: 7}.Record("app.example.com")}})

	// The Kuadrant cluster: a claim with owner and version only, and its target added to the record.
	z := registry.Read(f.read(t))
	shared := z.Endpoint(v1alpha1.EndpointKey{DNSName: "app.example.com", RecordType: "A"})
	merged := shared.DeepCopy()
	merged.Targets = append(merged.Targets, kuadrant)
	claim := v1alpha1.NewEndpoint(registry.TXTName(ownerK, "A", "app.example.com"), "TXT", 60,
		registry.FormatValue(map[string]string{registry.OwnerKey: ownerK, registry.VersionKey: registry.FormatVersion}))
	f.write(t, nil, &batch.Changes{UpdateOld: []*v1alpha1.Endpoint{shared}, UpdateNew: []*v1alpha1.Endpoint{merged}, Create: []*v1alpha1.Endpoint{claim}})
	// A human's records: a TXT at the host and a name of its own.
	f.write(t, nil, &batch.Changes{Create: []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("app.example.com", "TXT", 300, `"v=spf1 -all"`),
		v1alpha1.NewEndpoint("human.example.com", "A", 300, "192.0.2.1"),
	}})

	testenv.Eventually(t, time.Minute, func() string {
		if got := f.get(t, "web").Status.DomainOwners; !slices.Equal(got, []string{ownerA, ownerB, ownerC, ownerK}) {
			return fmt.Sprintf("web's domainOwners are %v", got)
		}
		return ""
	})
	// The controller's own lease: web shares app.example.com with other clusters' owners.
	kubeSystem := &corev1.Namespace{}
	if err := envs[0].Client.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, kubeSystem); err != nil {
		t.Fatal(err)
	}
	f.holderA = string(kubeSystem.UID)
	for deadline := time.Now().Add(time.Minute); !slices.ContainsFunc(f.read(t), func(e *v1alpha1.Endpoint) bool {
		return e.DNSName == lease.RecordName(f.holderA, zoneName)
	}); time.Sleep(500 * time.Millisecond) { // the emulator's rate limit, not a guess at timing
		if time.Now().After(deadline) {
			t.Fatal("the controller wrote no lease for its cluster")
		}
	}
	stop()
	return f
}

// newFixture starts a Route 53 emulator with zone example.com and a namespace (named from prefix)
// holding its provider Secret "provider".
func newFixture(t *testing.T, prefix string) *fixture {
	t.Helper()
	ctx := t.Context()
	c, err := cloud.Start(cloud.AWS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.AddZone(zoneName)

	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := envs[0].Client.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	ns := nsObj.Name
	secret := c.Secret(ns, "provider")
	if err := envs[0].Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	f := &fixture{cloud: c, ns: ns, kubeconfig: writeKubeconfig(t, ns)}
	f.provider, f.zone = onlyZone(t, secret, envs[0].Client)
	return f
}

// onlyZone builds the backend of a provider Secret, as the plugin does, and returns it with the
// one zone its credentials see; the test fails unless there is exactly one.
func onlyZone(t *testing.T, secret *corev1.Secret, c client.Client) (providers.Provider, providers.Zone) {
	t.Helper()
	backend, err := factory().New(t.Context(), secret, providers.Env{Client: c, Namespace: secret.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	zones, err := backend.Zones.Zones(t.Context())
	if err != nil || len(zones) != 1 {
		t.Fatalf("zones %v, %v", zones, err)
	}
	return backend.Zones, zones[0]
}

// run runs the plugin in-process against the test's cluster and returns what it printed; it fails
// the test on an error.
func (f *fixture) run(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), append(args, "--kubeconfig", f.kubeconfig), &stdout, &stderr, time.Now); code != 0 {
		t.Fatalf("kubectl dns %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	t.Logf("kubectl dns %s\n%s", strings.Join(args, " "), stdout.String())
	return stdout.String()
}

func (f *fixture) read(t *testing.T) []*v1alpha1.Endpoint {
	t.Helper()
	view, err := f.provider.Records(t.Context(), f.zone)
	if err != nil {
		t.Fatal(err)
	}
	return view.Endpoints
}

// write applies a batch as another cluster's controller would, through the ownership gate for
// owners when given.
func (f *fixture) write(t *testing.T, owners []string, changes *batch.Changes) {
	t.Helper()
	view, err := f.provider.Records(t.Context(), f.zone)
	if err != nil {
		t.Fatal(err)
	}
	if owners != nil {
		if err := registry.Read(view.Endpoints).Check(owners, nil, changes); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.provider.Apply(t.Context(), f.zone, view.State, changes); err != nil {
		t.Fatal(err)
	}
}

// publish plans owner's wishes as its cluster's controller does (its claims naming holder's lease
// where it shares a name with another cluster) and applies them.
func (f *fixture) publish(t *testing.T, owner, holder string, desired ...*v1alpha1.Endpoint) {
	t.Helper()
	z := registry.Read(f.read(t))
	res, err := plan.Plan(plan.Input{OwnerID: owner, ZoneName: zoneName, Zone: z, Desired: desired, Lease: lease.Key(holder)})
	if err != nil {
		t.Fatal(err)
	}
	f.write(t, []string{owner}, res.Changes)
}

func (f *fixture) record(t *testing.T, name, owner, rootHost string, eps ...*v1alpha1.Endpoint) {
	t.Helper()
	r := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: rootHost, OwnerID: owner, ProviderRef: &v1alpha1.ProviderRef{Name: "provider"}, Endpoints: eps},
	}
	if err := envs[0].Client.Create(t.Context(), r); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) get(t *testing.T, name string) *v1alpha1.DNSRecord {
	t.Helper()
	r := &v1alpha1.DNSRecord{}
	if err := envs[0].Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: name}, r); err != nil {
		t.Fatal(err)
	}
	return r
}

// writeKubeconfig writes a kubeconfig for the test's API server whose context selects namespace,
// so the plugin is run the way a user runs it: --kubeconfig and the current context.
func writeKubeconfig(t *testing.T, namespace string) string {
	t.Helper()
	cfg := envs[0].Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: namespace}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func contains(t *testing.T, what, out, want string) {
	t.Helper()
	if !strings.Contains(out, want) {
		t.Errorf("%s: output lacks %q:\n%s", what, want, out)
	}
}
