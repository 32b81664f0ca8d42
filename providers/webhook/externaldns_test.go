//go:build integration

package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/zone"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/conformance"
	"github.com/dnspolicy/dnspolicy-controller/test/externaldns"
)

// These tests run against external-dns's own webhook server (provider/webhook/api) serving its
// in-memory provider, started as a process on 127.0.0.1 (package test/externaldns).

func webhookSecret(url string, extra map[string]string) *corev1.Secret {
	data := map[string]string{v1alpha1.WebhookProviderURLKey: url}
	for k, v := range extra {
		data[k] = v
	}
	return webhookSecretData(data)
}

// build makes the backend through its constructor, as the controller does.
func build(t *testing.T, secret *corev1.Secret) providers.Provider {
	t.Helper()
	backend, err := New(t.Context(), secret, providers.Env{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return backend.Zones
}

// subtestZone is a zone named after the subtest, served by a server of its own whose filter is
// that zone.
func subtestZone(t *testing.T, extra map[string]string) (providers.Provider, providers.Zone) {
	// external-dns refuses labels over 63 characters; subtest names are longer.
	name := "z" + hash.Base36(t.Name(), 8) + ".example.com"
	srv := externaldns.Start(t, externaldns.Options{Zones: []string{name}, DomainFilter: []string{name}})
	return build(t, webhookSecret(srv.URL, extra)), providers.Zone{ID: name, DNSName: name}
}

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		NewZone: func(t *testing.T) (providers.Provider, providers.Zone) { return subtestZone(t, nil) },
	})
}

func TestConformanceWithBatchLimit(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		NewZone: func(t *testing.T) (providers.Provider, providers.Zone) {
			return subtestZone(t, map[string]string{v1alpha1.WebhookProviderBatchSizeKey: "5"})
		},
	})
}

// post writes changes straight to the server, as another external-dns (or a person with its API)
// would: records that are not ours.
func post(t *testing.T, url string, c changes) {
	t.Helper()
	body, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+pathRecords, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", MediaType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /records: %s", resp.Status)
	}
}

// serverRecords reads every record the server holds, without going through the backend.
func serverRecords(t *testing.T, url string) []string {
	t.Helper()
	p := NewWithOptions(Options{URL: mustURL(t, url), Secret: "test/raw"})
	eps, err := p.records(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ep := range eps {
		out = append(out, ep.String())
	}
	slices.Sort(out)
	return out
}

// The server's in-memory provider holds three zones; its domain filter includes two, excludes one
// of them and a subtree of the other. We list only the zone left, a record for an excluded zone gets
// the no-zone error the record controller turns into its condition, and nothing under an excluded
// name is read or written, though the provider holds records there.
func TestDomainFilterKeepsUsOut(t *testing.T) {
	srv := externaldns.Start(t, externaldns.Options{
		Zones:          []string{"a.example.com", "b.example.com", "c.example.org"},
		DomainFilter:   []string{"a.example.com", "b.example.com"},
		ExcludeDomains: []string{"b.example.com", "x.a.example.com"},
	})
	theirs := []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("app.b.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1"),
		v1alpha1.NewEndpoint("app.x.a.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.2"),
		v1alpha1.NewEndpoint("app.c.example.org", v1alpha1.RecordTypeA, 60, "192.0.2.3"),
	}
	post(t, srv.URL, changes{Create: theirs})
	before := serverRecords(t, srv.URL)

	p := build(t, webhookSecret(srv.URL, nil))
	zones, err := p.Zones(t.Context())
	if err != nil {
		t.Fatalf("Zones: %v", err)
	}
	want := []providers.Zone{{ID: "a.example.com", DNSName: "a.example.com"}}
	if !slices.Equal(zones, want) {
		t.Fatalf("Zones() = %v, want %v", zones, want)
	}
	for _, host := range []string{"app.b.example.com", "app.c.example.org"} {
		if _, err := zone.Choose(host, zones, true, ""); !errors.Is(err, zone.ErrNoZone) {
			t.Errorf("zone.Choose(%s) = %v, want ErrNoZone", host, err)
		}
	}

	a := zones[0]
	view, err := p.Records(t.Context(), a)
	if err != nil {
		t.Fatalf("Records: %v", err)
	}
	if len(view.Endpoints) != 0 {
		t.Errorf("Records(a.example.com) = %v, want nothing of the excluded subtree x.a.example.com", view.Endpoints)
	}

	// A host under the excluded subtree is in zone a.example.com by name; writing it is refused.
	for _, c := range []*providers.Changes{
		{Create: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("new.x.a.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.9")}},
		{Delete: []*v1alpha1.Endpoint{theirs[1]}},
	} {
		err := p.Apply(t.Context(), a, view.State, c)
		if providers.KindOf(err) != providers.Permanent || err == nil || !strings.Contains(err.Error(), "outside the webhook provider's domain filter") {
			t.Errorf("Apply(%v) = %v, want a Permanent error naming the domain filter", c, err)
		}
	}
	// Zone b.example.com is not ours to read or write, even when asked by ID.
	b := providers.Zone{ID: "b.example.com", DNSName: "b.example.com"}
	if _, err := p.Records(t.Context(), b); providers.KindOf(err) != providers.Permanent || err == nil {
		t.Errorf("Records(b.example.com) = %v, want a Permanent error", err)
	}
	if err := p.Apply(t.Context(), b, nil, &providers.Changes{Delete: []*v1alpha1.Endpoint{theirs[0]}}); providers.KindOf(err) != providers.Permanent || err == nil {
		t.Errorf("Apply(b.example.com) = %v, want a Permanent error", err)
	}
	if after := serverRecords(t, srv.URL); !slices.Equal(after, before) {
		t.Errorf("the provider's records changed:\nbefore %v\nafter  %v", before, after)
	}

	// What is ours is written.
	mine := v1alpha1.NewEndpoint("app.a.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.10")
	if err := p.Apply(t.Context(), a, view.State, &providers.Changes{Create: []*v1alpha1.Endpoint{mine}}); err != nil {
		t.Fatalf("Apply(app.a.example.com): %v", err)
	}
	if after := serverRecords(t, srv.URL); len(after) != len(before)+1 {
		t.Errorf("after writing one record the provider holds %v", after)
	}
}

// A filter of expressions names no zone: ZONES does, and only zones inside the filter are accepted.
func TestZonesKeyWithARegexFilter(t *testing.T) {
	srv := externaldns.Start(t, externaldns.Options{
		Zones:       []string{"a.example.com", "b.example.net"},
		RegexFilter: `(^|\.)a\.example\.com$`,
	})
	if _, err := build(t, webhookSecret(srv.URL, nil)).Zones(t.Context()); providers.KindOf(err) != providers.Permanent ||
		err == nil || !strings.Contains(err.Error(), v1alpha1.WebhookZonesKey) {
		t.Errorf("Zones() without ZONES = %v, want a Permanent error naming key %s", err, v1alpha1.WebhookZonesKey)
	}
	outside := build(t, webhookSecret(srv.URL, map[string]string{v1alpha1.WebhookZonesKey: "a.example.com,b.example.net"}))
	if _, err := outside.Zones(t.Context()); providers.KindOf(err) != providers.Permanent || err == nil ||
		!strings.Contains(err.Error(), "b.example.net") {
		t.Errorf("Zones() with a zone outside the filter = %v, want a Permanent error naming it", err)
	}
	p := build(t, webhookSecret(srv.URL, map[string]string{v1alpha1.WebhookZonesKey: "A.example.com."}))
	zones, err := p.Zones(t.Context())
	if err != nil || !slices.Equal(zones, []providers.Zone{{ID: "a.example.com", DNSName: "a.example.com"}}) {
		t.Fatalf("Zones() = %v, %v, want a.example.com", zones, err)
	}
	rec := v1alpha1.NewEndpoint("www.a.example.com", v1alpha1.RecordTypeCNAME, 300, "lb.example.net")
	if err := p.Apply(t.Context(), zones[0], nil, &providers.Changes{Create: []*v1alpha1.Endpoint{rec}}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	view, err := p.Records(t.Context(), zones[0])
	if err != nil || len(view.Endpoints) != 1 || !view.Endpoints[0].SameValues(rec) {
		t.Errorf("Records = %v, %v, want %v", view.Endpoints, err, rec)
	}
}
