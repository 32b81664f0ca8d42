//go:build integration

// Package webhook_test runs two clusters (two control planes, each with its own record controller
// and owner) sharing one zone of an external-dns webhook provider (external-dns's own server over its
// in-memory provider, test/externaldns), and the same story on the Route 53 emulator: the zone and
// every record's conditions must end the same on both, as the clouds' own tests
// (test/integration/clouds) hold them to.
package webhook_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/webhook"
	"github.com/dnspolicy/dnspolicy-controller/test/emulators/cloud"
	"github.com/dnspolicy/dnspolicy-controller/test/externaldns"
	"github.com/dnspolicy/dnspolicy-controller/test/integration/internal/recordplane"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// envs are two control planes, one per simulated cluster.
var envs []*testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, 2, &envs)) }

const zoneName = "shared.example.com"

// backend is one place the two clusters publish to: the Secret type and keys that reach it.
type backend struct {
	name       string
	secretType string
	data       map[string]string
	register   func(*providers.Factory)
}

func webhookBackend(t *testing.T) backend {
	srv := externaldns.Start(t, externaldns.Options{Zones: []string{zoneName}, DomainFilter: []string{zoneName}})
	return backend{
		name:       webhook.ProviderName,
		secretType: string(v1alpha1.SecretTypeExternalDNSWebhook),
		data:       map[string]string{v1alpha1.WebhookProviderURLKey: srv.URL},
		register: func(f *providers.Factory) {
			f.Register(v1alpha1.SecretTypeExternalDNSWebhook, webhook.New)
		},
	}
}

func route53Backend(t *testing.T) backend {
	c, err := cloud.Start(cloud.AWS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.AddZone(zoneName)
	return backend{name: cloud.AWS, secretType: string(c.SecretType), data: c.SecretData(), register: c.Register}
}

func (b backend) secret(namespace, name string) *corev1.Secret {
	data := map[string][]byte{}
	for k, v := range b.data {
		data[k] = []byte(v)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Type: corev1.SecretType(b.secretType), Data: data}
}

// provider builds the backend as the controller does, with its one zone.
func (b backend) provider(t *testing.T) (providers.Provider, providers.Zone) {
	t.Helper()
	f := providers.NewFactory()
	b.register(f)
	built, err := f.New(t.Context(), b.secret("default", "reader"), providers.Env{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	zones, err := built.Zones.Zones(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, z := range zones {
		if z.DNSName == zoneName {
			return built.Zones, z
		}
	}
	t.Fatalf("%s: zone %s not listed in %v", b.name, zoneName, zones)
	return nil, providers.Zone{}
}

// cluster is one control plane running one manager, watching one namespace with a provider Secret.
type cluster struct {
	c  client.Client
	ns string
}

func startClusters(t *testing.T, b backend) []*cluster {
	t.Helper()
	factory := providers.NewFactory()
	b.register(factory)
	opts := dnsrecord.DefaultOptions()
	opts.MinRecheck, opts.MaxRecheck = 500*time.Millisecond, time.Second
	opts.MinBackoff, opts.MaxBackoff = 500*time.Millisecond, 4*time.Second
	opts.ValidationRetry = 200 * time.Millisecond
	var out []*cluster
	for i, e := range envs {
		ns := recordplane.Start(t, e, fmt.Sprintf("%s-c%d-", b.name, i),
			recordplane.Controller{App: app.Options{EnableRecordController: true}, Factory: factory, Record: opts})
		cl := &cluster{c: e.Client, ns: ns}
		if err := cl.c.Create(t.Context(), b.secret(ns, "provider")); err != nil {
			t.Fatal(err)
		}
		out = append(out, cl)
	}
	return out
}

func (cl *cluster) record(t *testing.T, name, rootHost string, eps ...*v1alpha1.Endpoint) {
	t.Helper()
	r := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: rootHost, ProviderRef: &v1alpha1.ProviderRef{Name: "provider"}, Endpoints: eps},
	}
	if err := cl.c.Create(t.Context(), r); err != nil {
		t.Fatal(err)
	}
}

// state is a record's conditions as "Ready=<status>/<reason> Conflicted=<status>", or "gone".
func (cl *cluster) state(t *testing.T, name string) string {
	r := &v1alpha1.DNSRecord{}
	if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: cl.ns, Name: name}, r); err != nil {
		return "gone"
	}
	s := ""
	for _, typ := range []string{v1alpha1.ConditionTypeReady, v1alpha1.ConditionTypeConflicted} {
		if c := meta.FindStatusCondition(r.Status.Conditions, typ); c != nil && c.ObservedGeneration == r.Generation {
			s += fmt.Sprintf(" %s=%s/%s", typ, c.Status, c.Reason)
		} else {
			s += " " + typ + "=unset"
		}
	}
	return strings.TrimSpace(s)
}

// ready lists the Ready condition of each record of the cluster, message included, for a failure.
func (cl *cluster) ready(t *testing.T) []string {
	var list v1alpha1.DNSRecordList
	if err := cl.c.List(t.Context(), &list, client.InNamespace(cl.ns)); err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, r := range list.Items {
		c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionTypeReady)
		if c == nil {
			out = append(out, cl.ns+"/"+r.Name+": no Ready")
			continue
		}
		out = append(out, fmt.Sprintf("%s/%s: Ready=%s %s: %s", cl.ns, r.Name, c.Status, c.Reason, c.Message))
	}
	return out
}

func (cl *cluster) delete(t *testing.T, name string) {
	t.Helper()
	if err := cl.c.Delete(t.Context(), &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: cl.ns, Name: name}}); err != nil {
		t.Fatal(err)
	}
}

// lines renders the zone without ownership TXT records, SOA and NS: name, type, TTL, sorted targets.
func lines(eps []*v1alpha1.Endpoint) []string {
	var out []string
	for _, ep := range eps {
		// Ownership records differ by owner ID; SOA and NS are the cloud's own.
		if ep.RecordType == v1alpha1.RecordTypeTXT && strings.HasPrefix(ep.DNSName, "kuadrant-") ||
			ep.RecordType == v1alpha1.RecordTypeNS || ep.RecordType == "SOA" {
			continue
		}
		targets := slices.Clone(ep.Targets)
		slices.Sort(targets)
		out = append(out, fmt.Sprintf("%s %s %d %s", strings.ToLower(strings.TrimSuffix(ep.DNSName, ".")), ep.RecordType, ep.RecordTTL, strings.Join(targets, ",")))
	}
	slices.Sort(out)
	return out
}

// outcome is where one run of the story ends: the zone and each record's conditions, after the
// clusters published and again after the first cluster left.
type outcome struct {
	shared, after []string
	states        []string
}

// story: a record a person wrote; both clusters want one A record set (their values add up), and
// each wants its own target for one single-value CNAME (the first published keeps it); cluster 0
// also wants the person's name. Then cluster 0 deletes its records.
func story(t *testing.T, b backend) outcome {
	p, z := b.provider(t)
	human, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("human."+zoneName, v1alpha1.RecordTypeA, 300, "192.0.2.10")})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(t.Context(), z, nil, &providers.Changes{Create: human}); err != nil {
		t.Fatal(err)
	}
	read := func() []string {
		view, err := p.Records(t.Context(), z)
		if err != nil {
			return []string{"error: " + err.Error()}
		}
		return lines(view.Endpoints)
	}
	cls := startClusters(t, b)
	app, www := "app."+zoneName, "www."+zoneName

	cls[0].record(t, "app", app, v1alpha1.NewEndpoint(app, v1alpha1.RecordTypeA, 60, "10.0.0.1"))
	cls[0].record(t, "www", www, v1alpha1.NewEndpoint(www, v1alpha1.RecordTypeCNAME, 300, "lb0.example.net"))
	cls[0].record(t, "human", "human."+zoneName, v1alpha1.NewEndpoint("human."+zoneName, v1alpha1.RecordTypeA, 60, "10.0.0.9"))
	testenv.Eventually(t, 60*time.Second, func() string {
		for _, n := range []string{"app", "www"} {
			if s := cls[0].state(t, n); !strings.HasPrefix(s, "Ready=True") {
				return "cluster 0 " + n + ": " + s
			}
		}
		return ""
	})
	cls[1].record(t, "app", app, v1alpha1.NewEndpoint(app, v1alpha1.RecordTypeA, 60, "10.0.0.2"))
	cls[1].record(t, "www", www, v1alpha1.NewEndpoint(www, v1alpha1.RecordTypeCNAME, 300, "lb1.example.net"))

	settled := func(want []string) func() string {
		return func() string {
			if got := read(); !slices.Equal(got, want) {
				return fmt.Sprintf("%s zone holds\n  %s\nwant\n  %s\nrecords:\n  %s", b.name, strings.Join(got, "\n  "),
					strings.Join(want, "\n  "), strings.Join(slices.Concat(cls[0].ready(t), cls[1].ready(t)), "\n  "))
			}
			return ""
		}
	}
	var out outcome
	out.shared = []string{
		"app." + zoneName + " A 60 10.0.0.1,10.0.0.2",
		"human." + zoneName + " A 300 192.0.2.10",
		"www." + zoneName + " CNAME 300 lb0.example.net",
	}
	testenv.Eventually(t, 60*time.Second, settled(out.shared))
	states := func() []string {
		return []string{"0/app " + cls[0].state(t, "app"), "0/www " + cls[0].state(t, "www"), "0/human " + cls[0].state(t, "human"),
			"1/app " + cls[1].state(t, "app"), "1/www " + cls[1].state(t, "www")}
	}
	// Conditions settle a pass after the zone.
	testenv.Eventually(t, 30*time.Second, func() string {
		for _, s := range states() {
			if strings.Contains(s, "unset") {
				return s
			}
		}
		return ""
	})
	out.states = states()

	for _, n := range []string{"app", "www", "human"} {
		cls[0].delete(t, n)
	}
	out.after = []string{
		"app." + zoneName + " A 60 10.0.0.2",
		"human." + zoneName + " A 300 192.0.2.10",
		"www." + zoneName + " CNAME 300 lb1.example.net",
	}
	testenv.Eventually(t, 60*time.Second, settled(out.after))
	testenv.Eventually(t, 60*time.Second, func() string {
		for _, n := range []string{"app", "www", "human"} {
			if s := cls[0].state(t, n); s != "gone" {
				return "cluster 0 " + n + ": " + s
			}
		}
		return ""
	})
	// The survivor's CNAME is published now, and its next pass says it lost nothing any more.
	const won = "Ready=True/ProviderSuccess Conflicted=False/NoConflict"
	testenv.Eventually(t, 30*time.Second, func() string {
		if s := cls[1].state(t, "www"); s != won {
			return "cluster 1 www: " + s
		}
		return ""
	})
	return out
}

// Two clusters sharing a zone of a webhook provider end as two clusters sharing a Route 53 zone:
// the same records in the zone, the person's record untouched, the same conditions on every record,
// and the survivor's values published once the first cluster leaves.
func TestTwoClustersShareAZoneAsOnTheClouds(t *testing.T) {
	var onCloud, onWebhook outcome
	t.Run(cloud.AWS, func(t *testing.T) { onCloud = story(t, route53Backend(t)) })
	t.Run(webhook.ProviderName, func(t *testing.T) { onWebhook = story(t, webhookBackend(t)) })
	if t.Failed() {
		return
	}
	if !slices.Equal(onWebhook.states, onCloud.states) {
		t.Errorf("conditions differ:\nwebhook\n  %s\nroute53\n  %s", strings.Join(onWebhook.states, "\n  "), strings.Join(onCloud.states, "\n  "))
	}
	t.Logf("conditions on both:\n  %s", strings.Join(onCloud.states, "\n  "))
}

// A record for a host in a zone the provider's domain filter excludes gets the no-zone condition,
// naming the filter as where zones come from, and nothing is written there.
func TestExcludedZoneGetsTheNoZoneCondition(t *testing.T) {
	srv := externaldns.Start(t, externaldns.Options{
		Zones:          []string{zoneName, "other.example.com"},
		DomainFilter:   []string{zoneName, "other.example.com"},
		ExcludeDomains: []string{"other.example.com"},
	})
	b := backend{
		name:       "excluded",
		secretType: string(v1alpha1.SecretTypeExternalDNSWebhook),
		data:       map[string]string{v1alpha1.WebhookProviderURLKey: srv.URL},
		register:   func(f *providers.Factory) { f.Register(v1alpha1.SecretTypeExternalDNSWebhook, webhook.New) },
	}
	cl := startClusters(t, b)[0]
	host := "app.other.example.com"
	cl.record(t, "excluded", host, v1alpha1.NewEndpoint(host, v1alpha1.RecordTypeA, 60, "10.0.0.1"))
	want := "no zone for host: " + host + " is in none of the zones [" + zoneName + "] of provider secret " + cl.ns +
		"/provider (the domain filter of the webhook provider at key " + v1alpha1.WebhookProviderURLKey + ")"
	testenv.Eventually(t, 30*time.Second, func() string {
		r := &v1alpha1.DNSRecord{}
		if err := cl.c.Get(t.Context(), client.ObjectKey{Namespace: cl.ns, Name: "excluded"}, r); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionTypeReady)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonDNSProviderError || !strings.Contains(c.Message, want) {
			return fmt.Sprintf("Ready = %+v, want False %s containing %q", c, v1alpha1.ReasonDNSProviderError, want)
		}
		return ""
	})
	// The provider holds nothing at all: GET /records, as any client of the protocol reads it.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/records", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", webhook.MediaType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var held []*v1alpha1.Endpoint
	if err := json.NewDecoder(resp.Body).Decode(&held); err != nil || len(held) != 0 {
		t.Errorf("the provider holds %v (%v), want nothing written", held, err)
	}
}
