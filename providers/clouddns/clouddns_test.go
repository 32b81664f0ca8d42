package clouddns

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/conformance"
	emulator "github.com/dnspolicy/dnspolicy-controller/test/emulators/clouddns"
)

const project = "test-project"

// fastRetry keeps fault tests quick; the call timeout is what ends a hung request.
var fastRetry = retry{attempts: 6, base: 5 * time.Millisecond, max: 50 * time.Millisecond, callTimeout: 300 * time.Millisecond}

func startEmulator(t *testing.T, opts emulator.Options) (*emulator.Server, string) {
	t.Helper()
	opts.Project = project
	emu := emulator.New(opts)
	srv, url, err := emu.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return emu, url
}

func gcpSecret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gcp"}, Type: v1alpha1.SecretTypeGCP, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// newProvider builds a provider through the constructor, as the controllers do.
func newProvider(t *testing.T, url string) *Provider {
	t.Helper()
	backend, err := New(t.Context(), gcpSecret(map[string]string{v1alpha1.GoogleProjectIDKey: project, v1alpha1.EndpointOverrideKey: url}), providers.Env{})
	if err != nil {
		t.Fatalf("constructor: %v", err)
	}
	p := backend.Zones
	cp := p.(*Provider)
	cp.retry = fastRetry
	return cp
}

func zoneFor(t *testing.T, emu *emulator.Server) providers.Zone {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())) + ".example.com"
	return providers.Zone{ID: emu.AddZone(name), DNSName: name}
}

// suiteRegions maps the suite's Route53-style geo codes to Google Cloud regions, one to one. Cloud
// DNS cannot express countries, continents or a catch-all (AdjustEndpoints rejects the first two and
// drops "*"; TestAdjustEndpoints covers that), so the harness speaks regions to the backend and the
// suite's codes to the suite. Everything else passes through untouched.
var suiteRegions = map[string]string{"GEO-EU": "europe-west1", "US": "us-east1", v1alpha1.WildcardGeo: "asia-east1"}

type regionHarness struct{ *Provider }

func translate(eps []*v1alpha1.Endpoint, toRegion bool) []*v1alpha1.Endpoint {
	out := make([]*v1alpha1.Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = ep.DeepCopy()
		code, ok := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
		if !ok {
			continue
		}
		for suite, region := range suiteRegions {
			if toRegion && code == suite {
				out[i].SetProviderSpecific(v1alpha1.ProviderSpecificGeoCode, region)
			} else if !toRegion && code == region {
				out[i].SetProviderSpecific(v1alpha1.ProviderSpecificGeoCode, suite)
			}
		}
	}
	return out
}

func (h regionHarness) AdjustEndpoints(eps []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error) {
	adjusted, err := h.Provider.AdjustEndpoints(translate(eps, true))
	return translate(adjusted, false), err
}

func (h regionHarness) Records(ctx context.Context, zone providers.Zone) (providers.View, error) {
	read, err := h.Provider.Records(ctx, zone)
	read.Endpoints = translate(read.Endpoints, false)
	return read, err
}

func (h regionHarness) Apply(ctx context.Context, zone providers.Zone, st providers.State, c *providers.Changes) error {
	return h.Provider.Apply(ctx, zone, st, &providers.Changes{Create: translate(c.Create, true), UpdateOld: translate(c.UpdateOld, true),
		UpdateNew: translate(c.UpdateNew, true), Delete: translate(c.Delete, true), Require: translate(c.Require, true)})
}

func TestConformance(t *testing.T) {
	emu, url := startEmulator(t, emulator.Options{RequestsPerSecond: -1, PageSize: 50})
	conformance.Run(t, conformance.Harness{
		NewZone: func(t *testing.T) (providers.Provider, providers.Zone) {
			return regionHarness{newProvider(t, url)}, zoneFor(t, emu)
		},
	})
}

// With faults on a fifth of requests and a rate limit, every batch lands exactly once.
func TestConformanceWithFaults(t *testing.T) {
	emu, url := startEmulator(t, emulator.Options{RequestsPerSecond: 2000, Burst: 100, PageSize: 50})
	emu.SetFaults(emulator.Faults{Rate: 0.2, Kinds: []string{emulator.FaultServerError, emulator.FaultTimeout, emulator.FaultDrop}, Hang: time.Second})
	p := newProvider(t, url)
	zone := zoneFor(t, emu)
	ctx := t.Context()
	var want []*v1alpha1.Endpoint
	for i := range 30 {
		name := fmt.Sprintf("r%d.%s", i, zone.DNSName)
		eps, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{
			v1alpha1.NewEndpoint(name, v1alpha1.RecordTypeCNAME, 60, "a.example.net").WithSetIdentifier("a").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "10"),
			v1alpha1.NewEndpoint(name, v1alpha1.RecordTypeCNAME, 60, "b.example.net").WithSetIdentifier("b").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "20"),
		})
		if err != nil {
			t.Fatal(err)
		}
		// The engine's loop: a transient failure is retried, a stale view re-read and re-planned.
		for attempt := 0; ; attempt++ {
			if attempt == 20 {
				t.Fatalf("batch %d did not land in 20 attempts", i)
			}
			readView, err := p.Records(ctx, zone)
			read := readView.Endpoints
			if err != nil {
				continue
			}
			create := missing(read, eps)
			if len(create) == 0 {
				break
			}
			if err := p.Apply(ctx, zone, nil, &providers.Changes{Create: create}); err != nil && providers.KindOf(err) == providers.Permanent {
				t.Fatalf("batch %d: %v", i, err)
			}
		}
		want = append(want, eps...)
	}
	emu.SetFaults(emulator.Faults{})
	gotView, err := p.Records(ctx, zone)
	got := gotView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	got = withoutApex(got, zone)
	if len(got) != len(want) || len(missing(got, want)) != 0 {
		t.Errorf("zone holds %d sets, want exactly %d: missing %v", len(got), len(want), missing(got, want))
	}
	if calls := emu.Calls()[emulator.OpCreateChange]; calls > 30*6 {
		t.Errorf("%d change calls for 30 batches: retries are not bounded", calls)
	}
}

func missing(have, want []*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	var out []*v1alpha1.Endpoint
	for _, w := range want {
		found := false
		for _, h := range have {
			if h.Key() == w.Key() && h.SameValues(w) {
				found = true
			}
		}
		if !found {
			out = append(out, w)
		}
	}
	return out
}

func withoutApex(eps []*v1alpha1.Endpoint, zone providers.Zone) []*v1alpha1.Endpoint {
	var out []*v1alpha1.Endpoint
	for _, ep := range eps {
		if ep.DNSName != zone.DNSName {
			out = append(out, ep)
		}
	}
	return out
}

func TestFoldsSetsIntoOneRoutingPolicy(t *testing.T) {
	emu, url := startEmulator(t, emulator.Options{RequestsPerSecond: -1})
	p := newProvider(t, url)
	zone := zoneFor(t, emu)
	name := "klb.app." + zone.DNSName
	desired, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint(name, v1alpha1.RecordTypeCNAME, 300, "europe-west1.klb.app."+zone.DNSName).WithSetIdentifier("europe-west1").WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, "europe-west1"),
		v1alpha1.NewEndpoint(name, v1alpha1.RecordTypeCNAME, 300, "us-east1.klb.app."+zone.DNSName).WithSetIdentifier("us-east1").WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, "us-east1"),
		v1alpha1.NewEndpoint(name, v1alpha1.RecordTypeCNAME, 300, "europe-west1.klb.app."+zone.DNSName).WithSetIdentifier("default").WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, "*"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(desired) != 2 {
		t.Fatalf("AdjustEndpoints kept %d sets, want the default geo set dropped", len(desired))
	}
	if err := p.Apply(t.Context(), zone, nil, &providers.Changes{Create: desired}); err != nil {
		t.Fatal(err)
	}
	var native int
	for _, rs := range emu.RecordSets(zone.ID) {
		if strings.TrimSuffix(rs.Name, ".") == name && rs.Type == "CNAME" {
			native++
			if rs.RoutingPolicy == nil || rs.RoutingPolicy.Geo == nil || len(rs.RoutingPolicy.Geo.Items) != 2 {
				t.Errorf("record set %s holds %+v, want one geo policy of two items", rs.Name, rs.RoutingPolicy)
			}
		}
	}
	if native != 1 {
		t.Errorf("%d CNAME record sets at %s, want one", native, name)
	}
}

func TestAdjustEndpoints(t *testing.T) {
	p := &Provider{}
	for _, tc := range []struct {
		name    string
		ep      *v1alpha1.Endpoint
		wantErr string
	}{
		{"continent", v1alpha1.NewEndpoint("a.example.com", "CNAME", 60, "x").WithSetIdentifier("GEO-EU").WithProviderSpecific("geo-code", "GEO-EU"), `geo code "GEO-EU"`},
		{"country", v1alpha1.NewEndpoint("a.example.com", "CNAME", 60, "x").WithSetIdentifier("US").WithProviderSpecific("geo-code", "US"), `geo code "US"`},
		{"negative weight", v1alpha1.NewEndpoint("a.example.com", "CNAME", 60, "x").WithSetIdentifier("x").WithProviderSpecific("weight", "-1"), "invalid weight"},
		{"set identifier alone", v1alpha1.NewEndpoint("a.example.com", "A", 60, "192.0.2.1").WithSetIdentifier("x"), "no weight or geo-code"},
		{"region", v1alpha1.NewEndpoint("a.example.com", "CNAME", 60, "x").WithSetIdentifier("us-east1").WithProviderSpecific("geo-code", "us-east1"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{tc.ep})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || providers.KindOf(err) != providers.Permanent {
				t.Errorf("AdjustEndpoints(%s) = %v, want a permanent error containing %q", tc.ep, err, tc.wantErr)
			}
		})
	}
}

// A value given twice is one value of the set, written once and read back equal: the emulator, like
// RFC 2181's record sets, refuses repeated rrdatas, names compared after normalization.
func TestRepeatedTargetsAreWrittenOnce(t *testing.T) {
	emu, url := startEmulator(t, emulator.Options{RequestsPerSecond: -1})
	p := newProvider(t, url)
	zone := zoneFor(t, emu)
	eps, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{
		{DNSName: "a." + zone.DNSName, RecordType: "A", RecordTTL: 60, Targets: v1alpha1.Targets{"192.0.2.1", "192.0.2.2", "192.0.2.1"}},
		{DNSName: "n." + zone.DNSName, RecordType: "NS", RecordTTL: 60, Targets: v1alpha1.Targets{"ns1.example.net", "NS1.example.net."}},
		v1alpha1.NewEndpoint("w."+zone.DNSName, "A", 60, "192.0.2.3", "192.0.2.3").WithSetIdentifier("x").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "1"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(t.Context(), zone, nil, &providers.Changes{Create: eps}); err != nil {
		t.Fatalf("Apply of sets with a value given twice: %v", err)
	}
	read, err := p.Records(t.Context(), zone)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range eps {
		i := slices.IndexFunc(read.Endpoints, func(r *v1alpha1.Endpoint) bool { return r.Key() == ep.Key() })
		if i < 0 || !read.Endpoints[i].SameValues(ep) {
			t.Errorf("wrote %s, read back %v: the engine would rewrite it forever", ep, read.Endpoints)
		}
	}
}

// Cloud DNS takes at most 100,000 bytes of rrdata per Change and 100 rrdatas per set (403
// quotaExceeded, which retrying cannot fix): batches are cut where the bytes fall, a set over either
// limit is refused before any call, and a batch that fits applies.
func TestBatchesFitCloudDNSQuotas(t *testing.T) {
	emu, url := startEmulator(t, emulator.Options{RequestsPerSecond: -1})
	p := newProvider(t, url)
	zone := zoneFor(t, emu)
	txt := func(n int) []*v1alpha1.Endpoint {
		var eps []*v1alpha1.Endpoint
		for i := range n {
			eps = append(eps, v1alpha1.NewEndpoint(fmt.Sprintf("t%d.%s", i, zone.DNSName), "TXT", 60, `"`+strings.Repeat("x", 250)+`"`))
		}
		return eps
	}
	fits := p.Capabilities().BatchFits
	if fits == nil {
		t.Fatal("no BatchFits: batches are cut only by count")
	}
	over := &providers.Changes{Create: txt(emulator.MaxRrdataBytesPerChange/252 + 1)}
	if fits(over) {
		t.Errorf("a batch of %d bytes of rrdata fits, want it cut", (emulator.MaxRrdataBytesPerChange/252+1)*252)
	}
	err := p.Apply(t.Context(), zone, nil, over)
	if providers.KindOf(err) != providers.Permanent {
		t.Errorf("Apply of a batch over the byte quota: %v (%v), want Permanent", err, providers.KindOf(err))
	}
	if n := emu.Calls()[emulator.OpCreateChange]; n != 0 {
		t.Errorf("%d changes.create calls for a batch Cloud DNS refuses, want none", n)
	}
	under := &providers.Changes{Create: txt(emulator.MaxRrdataBytesPerChange/252 - 10)}
	if !fits(under) {
		t.Errorf("a batch of %d bytes does not fit", (emulator.MaxRrdataBytesPerChange/252-10)*252)
	}
	if err := p.Apply(t.Context(), zone, nil, under); err != nil {
		t.Errorf("Apply of a batch within the quotas: %v", err)
	}
	var ips []string
	for i := range emulator.MaxRecordsPerRRSet + 1 {
		ips = append(ips, fmt.Sprintf("10.0.%d.%d", i/256, i%256))
	}
	_, err = p.AdjustEndpoints([]*v1alpha1.Endpoint{v1alpha1.NewEndpoint("many."+zone.DNSName, "A", 60, ips...)})
	if providers.KindOf(err) != providers.Permanent || !strings.Contains(err.Error(), "100") {
		t.Errorf("a set of %d targets: %v, want a Permanent error naming the limit", len(ips), err)
	}
}

func TestStaleViewIsReported(t *testing.T) {
	emu, url := startEmulator(t, emulator.Options{RequestsPerSecond: -1})
	zone := zoneFor(t, emu)
	a, b := newProvider(t, url), newProvider(t, url)
	ctx := t.Context()
	set := func(target string) *v1alpha1.Endpoint {
		return v1alpha1.NewEndpoint("www."+zone.DNSName, "A", 60, target)
	}
	if err := a.Apply(ctx, zone, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{set("192.0.2.1")}}); err != nil {
		t.Fatal(err)
	}
	bView, err := b.Records(ctx, zone)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Apply(ctx, zone, nil, &providers.Changes{UpdateOld: []*v1alpha1.Endpoint{set("192.0.2.1")}, UpdateNew: []*v1alpha1.Endpoint{set("192.0.2.2")}}); err != nil {
		t.Fatal(err)
	}
	// b's view still holds 192.0.2.1: Cloud DNS refuses the deletion with 412.
	err = b.Apply(ctx, zone, bView.State, &providers.Changes{UpdateOld: []*v1alpha1.Endpoint{set("192.0.2.1")}, UpdateNew: []*v1alpha1.Endpoint{set("192.0.2.3")}})
	if providers.KindOf(err) != providers.StaleView {
		t.Fatalf("Apply from a stale view: %v, want a stale view error", err)
	}
	if !strings.Contains(err.Error(), "412") {
		t.Errorf("error %q should say Cloud DNS answered 412", err)
	}
	// After the refresh the same change applies.
	if _, err := b.Records(ctx, zone); err != nil {
		t.Fatal(err)
	}
	if err := b.Apply(ctx, zone, nil, &providers.Changes{UpdateOld: []*v1alpha1.Endpoint{set("192.0.2.2")}, UpdateNew: []*v1alpha1.Endpoint{set("192.0.2.3")}}); err != nil {
		t.Fatal(err)
	}
}

func TestErrorsAreClassified(t *testing.T) {
	for _, tc := range []struct {
		status int
		reason string
		want   providers.ErrorKind
	}{
		{http.StatusForbidden, "forbidden", providers.Permanent},
		{http.StatusUnauthorized, "authError", providers.Permanent},
		{http.StatusTooManyRequests, "rateLimitExceeded", providers.Transient},
		{http.StatusServiceUnavailable, "backendError", providers.Transient},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			var calls int
			var mu sync.Mutex
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				mu.Lock()
				calls++
				mu.Unlock()
				w.Header().Set("X-Goog-Request-Id", "req-12345")
				w.WriteHeader(tc.status)
				fmt.Fprintf(w, `{"error":{"code":%d,"message":"request req-12345 failed","errors":[{"reason":%q,"message":"request req-12345"}]}}`, tc.status, tc.reason)
			})}
			emuURL := serve(t, srv)
			p := newProvider(t, emuURL)
			_, err := p.Zones(t.Context())
			if providers.KindOf(err) != tc.want {
				t.Errorf("Zones: %v is %v, want %v", err, providers.KindOf(err), tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "req-12345") {
				t.Errorf("error %q carries a request ID", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if most := map[providers.ErrorKind]int{providers.Permanent: 1, providers.Transient: fastRetry.attempts}[tc.want]; calls != most {
				t.Errorf("%d calls, want %d", calls, most)
			}
		})
	}
}

func serve(t *testing.T, srv *http.Server) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + l.Addr().String() + "/"
}

func TestParseOptions(t *testing.T) {
	key := `{"type":"service_account","client_email":"dns@p.iam.gserviceaccount.com","private_key":"SECRET-VALUE"}`
	for _, tc := range []struct {
		name    string
		data    map[string]string
		wantKey string
	}{
		{"no project", map[string]string{v1alpha1.GoogleJSONKey: key}, v1alpha1.GoogleProjectIDKey},
		{"no key", map[string]string{v1alpha1.GoogleProjectIDKey: "p"}, v1alpha1.GoogleJSONKey},
		{"key not JSON", map[string]string{v1alpha1.GoogleProjectIDKey: "p", v1alpha1.GoogleJSONKey: "SECRET-VALUE"}, v1alpha1.GoogleJSONKey},
		{"not a service account", map[string]string{v1alpha1.GoogleProjectIDKey: "p", v1alpha1.GoogleJSONKey: `{"type":"authorized_user","refresh_token":"SECRET-VALUE"}`}, v1alpha1.GoogleJSONKey},
		{"bad endpoint", map[string]string{v1alpha1.GoogleProjectIDKey: "p", v1alpha1.EndpointOverrideKey: "SECRET-VALUE"}, v1alpha1.EndpointOverrideKey},
		{"valid", map[string]string{v1alpha1.GoogleProjectIDKey: "p", v1alpha1.GoogleJSONKey: key}, ""},
		{"emulator", map[string]string{v1alpha1.GoogleProjectIDKey: "p", v1alpha1.EndpointOverrideKey: "http://127.0.0.1:1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := ParseOptions(gcpSecret(tc.data))
			if tc.wantKey == "" {
				if err != nil {
					t.Fatal(err)
				}
				if opts.Project != "p" {
					t.Errorf("project = %q", opts.Project)
				}
				return
			}
			if err == nil {
				t.Fatal("ParseOptions succeeded, want an error")
			}
			if msg := err.Error(); !strings.Contains(msg, "ns/gcp") || !strings.Contains(msg, tc.wantKey) || strings.Contains(msg, "SECRET-VALUE") {
				t.Errorf("error %q must name ns/gcp and key %s and no value", msg, tc.wantKey)
			}
		})
	}
}

// What the Secret can fix is blamed on its key, naming the Secret: a project the API does not know
// on PROJECT_ID, refused credentials on GOOGLE. Neither is retried.
func TestSecretProblemsNameTheSecretAndKey(t *testing.T) {
	emu, url := startEmulator(t, emulator.Options{})
	backend, err := New(t.Context(), gcpSecret(map[string]string{v1alpha1.GoogleProjectIDKey: "other-project", v1alpha1.EndpointOverrideKey: url}), providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
	p := backend.Zones
	_, err = p.Zones(t.Context())
	want := "provider secret ns/gcp: key PROJECT_ID: project other-project does not exist or the service account of key GOOGLE cannot see it"
	if err == nil || providers.KindOf(err) != providers.Permanent || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Zones in an unknown project: %v (%v), want a Permanent error starting %q", err, providers.KindOf(err), want)
	}
	if n := emu.Calls()[emulator.OpListManagedZones]; n != 1 {
		t.Errorf("%d listings, want 1: an unknown project is not retried", n)
	}

	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"error":{"code":403,"message":"Forbidden","errors":[{"reason":"forbidden","message":"Forbidden"}]}}`)
	})}
	_, err = newProvider(t, serve(t, srv)).Zones(t.Context())
	want = "provider secret ns/gcp: the service account of key GOOGLE may not do this in project " + project + " of key PROJECT_ID"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Zones refused: %v, want an error starting %q", err, want)
	}
}
