package route53

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/geo"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/conformance"
	emulator "github.com/dnspolicy/dnspolicy-controller/test/emulators/route53"
)

const (
	testKeyID  = "AKIDEMULATOR"
	testSecret = "emulator-secret-value"
)

// requestID matches the request IDs the emulator puts in every answer.
var requestID = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

func start(t *testing.T, opts emulator.Options) (*emulator.Server, string) {
	t.Helper()
	emu := emulator.New(opts)
	srv, url, err := emu.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return emu, url
}

func secret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "aws-creds"},
		Type:       v1alpha1.SecretTypeAWS,
		Data:       map[string][]byte{},
	}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func emulatorSecret(url string) *corev1.Secret {
	return secret(map[string]string{
		v1alpha1.AWSAccessKeyIDKey:     testKeyID,
		v1alpha1.AWSSecretAccessKeyKey: testSecret,
		v1alpha1.EndpointOverrideKey:   url,
	})
}

// fastProvider parses the Secret as the constructor does, with bounds that suit a local emulator.
// Backoff stays long enough for the token bucket to refill. An attempt may take a while on a loaded
// machine (a batch at the 1,000-change limit took over 2 s at load 30); the tests that are about
// attempt timeouts set their own.
func fastProvider(t *testing.T, url string) *Provider {
	t.Helper()
	opts, err := ParseOptions(emulatorSecret(url))
	if err != nil {
		t.Fatal(err)
	}
	opts.MaxBackoff = 500 * time.Millisecond
	opts.AttemptTimeout = 15 * time.Second
	opts.InsyncPoll = 10 * time.Millisecond
	opts.InsyncTimeout = 5 * time.Second
	return NewWithOptions(opts)
}

func zoneNamed(t *testing.T) string {
	return strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())) + ".example.com"
}

// The suite runs through the real SDK against the emulator with Route 53's token bucket, a small
// page size so every read pages, and a short PENDING phase.
func TestConformance(t *testing.T) {
	emu, url := start(t, emulator.Options{RecordsPageSize: 50, InsyncAfter: 20 * time.Millisecond, AccessKeys: []string{testKeyID}})
	p := fastProvider(t, url)
	conformance.Run(t, conformance.Harness{
		NewZone: func(t *testing.T) (providers.Provider, providers.Zone) {
			name := zoneNamed(t)
			return p, providers.Zone{ID: emu.AddZone(name), DNSName: name}
		},
	})
}

func TestConstructorReadsTheSecretAndListsZonesPageByPage(t *testing.T) {
	var names []string
	for i := range 5 {
		names = append(names, fmt.Sprintf("z%d.example.com", i))
	}
	emu, url := start(t, emulator.Options{Zones: names, ZonesPageSize: 2, AccessKeys: []string{testKeyID}})
	backend, err := New(t.Context(), emulatorSecret(url), providers.Env{Namespace: "team-a"})
	if err != nil {
		t.Fatal(err)
	}
	p := backend.Zones
	if p.Name() != "aws" {
		t.Errorf("Name() = %q, want aws", p.Name())
	}
	zones, err := p.Zones(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, z := range zones {
		got = append(got, z.DNSName)
		if strings.HasPrefix(z.ID, "/") {
			t.Errorf("zone ID %q keeps the /hostedzone/ prefix", z.ID)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(names) {
		t.Errorf("Zones() = %v, want %v", got, names)
	}
	if n := emu.Calls()[emulator.OpListHostedZones]; n != 3 {
		t.Errorf("%d ListHostedZones calls for 5 zones in pages of 2, want 3", n)
	}
}

func TestParseOptions(t *testing.T) {
	full := map[string]string{
		v1alpha1.AWSAccessKeyIDKey:     "AKIDVALUE",
		v1alpha1.AWSSecretAccessKeyKey: "secret-value",
	}
	with := func(key, value string) map[string]string {
		m := map[string]string{}
		for k, v := range full {
			m[k] = v
		}
		if value == "" {
			delete(m, key)
		} else {
			m[key] = value
		}
		return m
	}
	opts, err := ParseOptions(secret(full))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Region != DefaultRegion || opts.Endpoint != "" || opts.AccessKeyID != "AKIDVALUE" {
		t.Errorf("ParseOptions = %+v, want the default region and no endpoint", opts)
	}
	for _, tc := range []struct {
		name, key string
		data      map[string]string
	}{
		{"missing access key", v1alpha1.AWSAccessKeyIDKey, with(v1alpha1.AWSAccessKeyIDKey, "")},
		{"missing secret key", v1alpha1.AWSSecretAccessKeyKey, with(v1alpha1.AWSSecretAccessKeyKey, "")},
		{"access key with spaces", v1alpha1.AWSAccessKeyIDKey, with(v1alpha1.AWSAccessKeyIDKey, "AKID hunter2")},
		{"bad region", v1alpha1.AWSRegionKey, with(v1alpha1.AWSRegionKey, "Mars hunter2")},
		{"endpoint not a URL", v1alpha1.EndpointOverrideKey, with(v1alpha1.EndpointOverrideKey, "hunter2:/%zz")},
		{"endpoint without scheme", v1alpha1.EndpointOverrideKey, with(v1alpha1.EndpointOverrideKey, "hunter2.local:8053")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseOptions(secret(tc.data))
			if err == nil {
				t.Fatal("ParseOptions succeeded, want an error")
			}
			msg := err.Error()
			if !strings.Contains(msg, "team-a/aws-creds") || !strings.Contains(msg, tc.key) {
				t.Errorf("error %q must name the secret team-a/aws-creds and the key %s", msg, tc.key)
			}
			for _, v := range tc.data {
				if strings.Contains(msg, v) {
					t.Errorf("error %q carries a value of the secret", msg)
				}
			}
			if strings.Contains(msg, "hunter2") {
				t.Errorf("error %q carries a value of the secret", msg)
			}
		})
	}
	opts, err = ParseOptions(secret(with(v1alpha1.AWSRegionKey, "eu-west-1")))
	if err != nil || opts.Region != "eu-west-1" {
		t.Errorf("ParseOptions with a region = %+v, %v", opts, err)
	}
}

func TestWrongCredentialsArePermanentAndNotRetried(t *testing.T) {
	emu, url := start(t, emulator.Options{Zones: []string{"example.com"}, AccessKeys: []string{"AKIDOTHER"}})
	p := fastProvider(t, url)
	_, err := p.Zones(t.Context())
	if err == nil || providers.KindOf(err) != providers.Permanent {
		t.Fatalf("Zones with unknown credentials: %v (%v), want a Permanent error", err, providers.KindOf(err))
	}
	if msg := err.Error(); strings.Contains(msg, testSecret) || strings.Contains(msg, testKeyID) || requestID.MatchString(msg) {
		t.Errorf("error %q carries a credential or a request ID", msg)
	}
	if n := emu.Calls()[emulator.OpListHostedZones]; n != 1 {
		t.Errorf("%d ListHostedZones calls, want 1: a rejected credential is not retried", n)
	}
}

// Weight and geo-code become native Route 53 routing policies on the wire.
func TestRoutingPropertiesOnTheWire(t *testing.T) {
	emu, url := start(t, emulator.Options{})
	zoneID := emu.AddZone("example.com")
	p := fastProvider(t, url)
	eps, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("klb.app.example.com", "CNAME", 300, "geo-eu.klb.app.example.com").
			WithSetIdentifier("GEO-EU").WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, "GEO-EU"),
		v1alpha1.NewEndpoint("klb.app.example.com", "CNAME", 300, "us.klb.app.example.com").
			WithSetIdentifier("US").WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, "US"),
		v1alpha1.NewEndpoint("klb.app.example.com", "CNAME", 300, "geo-eu.klb.app.example.com").
			WithSetIdentifier("default").WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, "*"),
		v1alpha1.NewEndpoint("geo-eu.klb.app.example.com", "CNAME", 60, "gw1.example.net").
			WithSetIdentifier("gw1.example.net").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "120"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(t.Context(), providers.Zone{ID: zoneID, DNSName: "example.com"}, nil, &providers.Changes{Create: eps}); err != nil {
		t.Fatal(err)
	}
	raw := r53.New(r53.Options{Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider(testKeyID, testSecret, "")})
	out, err := raw.ListResourceRecordSets(t.Context(), &r53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zoneID)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, rs := range out.ResourceRecordSets {
		var routing string
		switch {
		case rs.Weight != nil:
			routing = fmt.Sprintf("weight=%d", *rs.Weight)
		case rs.GeoLocation != nil:
			routing = fmt.Sprintf("continent=%s country=%s", aws.ToString(rs.GeoLocation.ContinentCode), aws.ToString(rs.GeoLocation.CountryCode))
		}
		got[aws.ToString(rs.Name)+" "+aws.ToString(rs.SetIdentifier)] = routing
	}
	for key, want := range map[string]string{
		"klb.app.example.com. GEO-EU":                 "continent=EU country=",
		"klb.app.example.com. US":                     "continent= country=US",
		"klb.app.example.com. default":                "continent= country=*",
		"geo-eu.klb.app.example.com. gw1.example.net": "weight=120",
	} {
		if got[key] != want {
			t.Errorf("record set %s: routing %q, want %q", key, got[key], want)
		}
	}
}

func TestAdjustEndpointsRejectsWhatRoute53CannotExpress(t *testing.T) {
	emu, url := start(t, emulator.Options{})
	p := fastProvider(t, url)
	set := func(props ...string) *v1alpha1.Endpoint {
		ep := v1alpha1.NewEndpoint("klb.app.example.com", "CNAME", 300, "t.example.net").WithSetIdentifier("x")
		for i := 0; i < len(props); i += 2 {
			ep.SetProviderSpecific(props[i], props[i+1])
		}
		return ep
	}
	for _, tc := range []struct {
		name string
		ep   *v1alpha1.Endpoint
		want string
	}{
		{"unknown country", set(v1alpha1.ProviderSpecificGeoCode, "XX"), geo.ErrGeoCode.Error()},
		{"lower-case country", set(v1alpha1.ProviderSpecificGeoCode, "ie"), geo.ErrGeoCode.Error()},
		{"unknown continent", set(v1alpha1.ProviderSpecificGeoCode, "GEO-XX"), "unexpected continent code. XX"},
		{"negative weight", set(v1alpha1.ProviderSpecificWeight, "-1"), geo.ErrWeight.Error()},
		{"weight above 255", set(v1alpha1.ProviderSpecificWeight, "256"), "above 255"},
		{"weight and geo", set(v1alpha1.ProviderSpecificWeight, "1", v1alpha1.ProviderSpecificGeoCode, "US"), "one routing policy"},
		{"set identifier alone", set(), "neither weight nor geo-code"},
		{"routing without set identifier", set(v1alpha1.ProviderSpecificWeight, "1").WithSetIdentifier(""), "no set identifier"},
		{"CNAME with two targets", v1alpha1.NewEndpoint("c.example.com", "CNAME", 60, "a.example.net", "b.example.net"), "one target"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{tc.ep})
			if err == nil || providers.KindOf(err) != providers.Permanent || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("AdjustEndpoints(%s) = %v (%v), want a Permanent error containing %q", tc.ep, err, providers.KindOf(err), tc.want)
			}
		})
	}
	if calls := emu.Calls(); len(calls) != 0 {
		t.Errorf("AdjustEndpoints made API calls: %v", calls)
	}
}

// What Route 53 refuses is not sent: a value given twice is one value of the set (Route 53 answers
// "Duplicate Resource Record"), and the countries Route 53 does not route by are refused up front.
func TestAdjustEndpointsKeepsWhatRoute53Refuses(t *testing.T) {
	emu, url := start(t, emulator.Options{InsyncAfter: time.Millisecond})
	zone := providers.Zone{ID: emu.AddZone("example.com"), DNSName: "example.com"}
	p := fastProvider(t, url)
	eps, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{
		{DNSName: "a.example.com", RecordType: "A", RecordTTL: 60, Targets: v1alpha1.Targets{"192.0.2.1", "192.0.2.2", "192.0.2.1"}},
		{DNSName: "t.example.com", RecordType: "TXT", RecordTTL: 60, Targets: v1alpha1.Targets{"x", `"x"`}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(t.Context(), zone, nil, &providers.Changes{Create: eps}); err != nil {
		t.Fatalf("Apply of a set with a value given twice: %v", err)
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
	for _, code := range []string{"BV", "CX", "EH", "HM"} {
		_, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{v1alpha1.NewEndpoint("klb.example.com", "CNAME", 300, "t.example.net").
			WithSetIdentifier(code).WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, code)})
		if providers.KindOf(err) != providers.Permanent || !strings.Contains(err.Error(), "Route 53") {
			t.Errorf("geo code %s: %v, want a Permanent error saying Route 53 does not route by it", code, err)
		}
	}
}

// Route 53 refuses weighted sets of one name and type with different TTLs. Another owner's member
// with another TTL is not this backend's to change, so the batch fails as Permanent with Route 53's
// reason (not as a stale view, which would re-plan the same batch at once, forever).
func TestWeightedMemberWithAnotherTTLIsPermanent(t *testing.T) {
	emu, url := start(t, emulator.Options{InsyncAfter: time.Millisecond})
	zone := providers.Zone{ID: emu.AddZone("example.com"), DNSName: "example.com"}
	p := fastProvider(t, url)
	member := func(id string, ttl v1alpha1.TTL) *v1alpha1.Endpoint {
		return v1alpha1.NewEndpoint("eu.klb.example.com", "CNAME", ttl, id+".example.net").
			WithSetIdentifier(id).WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "120")
	}
	if err := p.Apply(t.Context(), zone, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{member("gw1", 60)}}); err != nil {
		t.Fatal(err)
	}
	err := p.Apply(t.Context(), zone, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{member("gw2", 300)}})
	if providers.KindOf(err) != providers.Permanent || !strings.Contains(err.Error(), "weighted sets must contain the same TTL") {
		t.Errorf("a weighted member with another TTL: %v (%v), want Permanent with Route 53's reason", err, providers.KindOf(err))
	}
	if err := p.Apply(t.Context(), zone, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{member("gw2", 60)}}); err != nil {
		t.Errorf("a weighted member with the group's TTL: %v", err)
	}
}

func TestStaleSetsAreStaleView(t *testing.T) {
	emu, url := start(t, emulator.Options{InsyncAfter: time.Millisecond})
	zone := providers.Zone{ID: emu.AddZone("example.com"), DNSName: "example.com"}
	p := fastProvider(t, url)
	a := v1alpha1.NewEndpoint("a.example.com", "A", 60, "192.0.2.1")
	if err := p.Apply(t.Context(), zone, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{a}}); err != nil {
		t.Fatal(err)
	}
	other := v1alpha1.NewEndpoint("a.example.com", "A", 60, "192.0.2.9")
	missing := v1alpha1.NewEndpoint("gone.example.com", "A", 60, "192.0.2.1")
	for _, c := range []*providers.Changes{
		{Delete: []*v1alpha1.Endpoint{missing}},
		{Delete: []*v1alpha1.Endpoint{other}},
		{UpdateOld: []*v1alpha1.Endpoint{other}, UpdateNew: []*v1alpha1.Endpoint{other}},
		{Create: []*v1alpha1.Endpoint{other}},
	} {
		err := p.Apply(t.Context(), zone, nil, c)
		if providers.KindOf(err) != providers.StaleView {
			t.Errorf("Apply(%+v) = %v (%v), want a stale view", c, err, providers.KindOf(err))
		}
		if err != nil && requestID.MatchString(err.Error()) {
			t.Errorf("error %q carries a request ID", err)
		}
	}
}

// Batches are cut where Route 53's limits of one call fall (1,000 records, 32,000 characters of
// values), not at a count of changes small enough for the worst case.
func TestBatchFitsRoute53Limits(t *testing.T) {
	p := NewWithOptions(Options{AccessKeyID: "AKIA", SecretAccessKey: "s"})
	fits := p.Capabilities().BatchFits
	batch := func(n, targets int) *providers.Changes {
		c := &providers.Changes{}
		for i := range n {
			var ips []string
			for j := range targets {
				ips = append(ips, fmt.Sprintf("10.%d.%d.%d", j, i/250, i%250))
			}
			c.Create = append(c.Create, v1alpha1.NewEndpoint(fmt.Sprintf("h%d.example.com", i), "A", 60, ips...))
		}
		return c
	}
	if !p.Capabilities().Fits(batch(1000, 1)) {
		t.Error("1,000 single-value sets do not fit one call")
	}
	if p.Capabilities().Fits(batch(501, 2)) {
		t.Error("501 two-value sets (1,002 records) fit one call")
	}
	if !fits(batch(500, 2)) {
		t.Error("500 two-value sets (1,000 records) do not fit one call")
	}
}

func TestBatchOverTheCharacterLimitIsRefusedWhole(t *testing.T) {
	emu, url := start(t, emulator.Options{})
	zone := providers.Zone{ID: emu.AddZone("example.com"), DNSName: "example.com"}
	p := fastProvider(t, url)
	var txt []*v1alpha1.Endpoint
	for i := range MaxChangesPerBatch {
		txt = append(txt, v1alpha1.NewEndpoint(fmt.Sprintf("t%d.example.com", i), "TXT", 300, strings.Repeat("x", 250)))
	}
	txt, err := p.AdjustEndpoints(txt)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Apply(t.Context(), zone, nil, &providers.Changes{Create: txt})
	if providers.KindOf(err) != providers.Permanent || !strings.Contains(fmt.Sprint(err), "32000") {
		t.Errorf("Apply of %d long TXT records = %v, want a Permanent error naming the 32000-character limit", len(txt), err)
	}
	if p.Capabilities().BatchFits(&providers.Changes{Create: txt}) {
		t.Errorf("BatchFits says %d TXT records of 250 characters fit one call", len(txt))
	}
	if n := emu.Calls()[emulator.OpChangeResourceRecordSets]; n != 0 {
		t.Errorf("%d change calls for a batch over the limit, want none", n)
	}
}

// Apply returns once Route 53 accepted a change and notes it in the view's State; AwaitPropagation
// waits until every change so noted is INSYNC, so the engine reports what the name servers serve,
// and a burst's batches do not each wait out the propagation of the one before. A read no longer
// waits: it is not the engine's way of waiting.
func TestAwaitPropagationWaitsForInsync(t *testing.T) {
	emu, url := start(t, emulator.Options{InsyncAfter: 300 * time.Millisecond})
	zone := providers.Zone{ID: emu.AddZone("example.com"), DNSName: "example.com"}
	p := fastProvider(t, url)
	read, err := p.Records(t.Context(), zone)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	for i := range 3 {
		if err := p.Apply(t.Context(), zone, read.State, &providers.Changes{Create: []*v1alpha1.Endpoint{
			v1alpha1.NewEndpoint(fmt.Sprintf("a%d.example.com", i), "A", 60, "192.0.2.1")}}); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(began); took > 250*time.Millisecond {
		t.Errorf("three Applies took %s: they waited for INSYNC", took)
	}
	if n := emu.Calls()[emulator.OpGetChange]; n != 0 {
		t.Errorf("%d GetChange calls before AwaitPropagation, want none", n)
	}
	if _, err := p.Records(t.Context(), zone); err != nil {
		t.Fatal(err)
	}
	if n := emu.Calls()[emulator.OpGetChange]; n != 0 {
		t.Errorf("a read made %d GetChange calls, want none", n)
	}
	if err := p.AwaitPropagation(t.Context(), zone, read.State); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took < 300*time.Millisecond {
		t.Errorf("AwaitPropagation returned %s after the first change, before it was INSYNC", took)
	}
	calls := emu.Calls()
	if calls[emulator.OpGetChange] == 0 || calls[emulator.OpGetChange] > 12 {
		t.Errorf("%d GetChange calls while waiting 300ms for three changes, want a few", calls[emulator.OpGetChange])
	}
	// Once seen INSYNC, a change is not asked about again.
	before := emu.Calls()[emulator.OpGetChange]
	if err := p.AwaitPropagation(t.Context(), zone, read.State); err != nil {
		t.Fatal(err)
	}
	if n := emu.Calls()[emulator.OpGetChange]; n != before {
		t.Errorf("a second wait made %d GetChange calls, want none", n-before)
	}
}

func TestThrottlingBurstIsRetried(t *testing.T) {
	emu, url := start(t, emulator.Options{Zones: []string{"example.com"}})
	p := fastProvider(t, url)
	emu.ThrottleNext(4)
	if _, err := p.Zones(t.Context()); err != nil {
		t.Fatalf("Zones after a burst of 4 Throttling answers: %v", err)
	}
	if n := emu.Calls()[emulator.OpListHostedZones]; n != 5 {
		t.Errorf("%d ListHostedZones calls, want 5 (4 throttled, 1 answered)", n)
	}
	emu.ThrottleNext(100)
	_, err := p.Zones(t.Context())
	if err == nil || providers.KindOf(err) != providers.Transient || !strings.Contains(err.Error(), "Throttling") {
		t.Errorf("Zones while throttled throughout = %v, want a Transient Throttling error", err)
	}
	if err != nil && requestID.MatchString(err.Error()) {
		t.Errorf("error %q carries a request ID", err)
	}
	if n := emu.Calls()[emulator.OpListHostedZones]; n != 5+p.opts.MaxAttempts {
		t.Errorf("%d ListHostedZones calls, want %d: attempts are bounded", n, 5+p.opts.MaxAttempts)
	}
}

// With a fifth of the requests failing (5xx, hung, throttled) and some answers lost after the change
// landed, every batch lands exactly once and the zone ends exact.
func TestFaultsEveryBatchLandsExactlyOnce(t *testing.T) {
	emu, url := start(t, emulator.Options{RequestsPerSecond: -1, RecordsPageSize: 40, InsyncAfter: time.Millisecond})
	zone := providers.Zone{ID: emu.AddZone("example.com"), DNSName: "example.com"}
	opts, err := ParseOptions(emulatorSecret(url))
	if err != nil {
		t.Fatal(err)
	}
	opts.MaxAttempts = 10
	opts.MaxBackoff = 20 * time.Millisecond
	opts.AttemptTimeout = 500 * time.Millisecond
	opts.InsyncPoll = 5 * time.Millisecond
	p := NewWithOptions(opts)
	emu.SetFaults(emulator.Faults{ServerErrorRate: 0.07, TimeoutRate: 0.06, ThrottleRate: 0.07, DropRate: 0.05,
		Hang: time.Second, Seed: 3})

	var errs []error
	apply := func(c *providers.Changes) {
		for range 5 {
			err := p.Apply(t.Context(), zone, nil, c)
			if err == nil {
				return
			}
			errs = append(errs, err)
			if providers.KindOf(err) != providers.Transient {
				t.Fatalf("Apply: %v (%v)", err, providers.KindOf(err))
			}
		}
		t.Fatalf("Apply failed 5 times: %v", errs)
	}
	want := map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}
	var batch []*v1alpha1.Endpoint
	for i := range 300 {
		ep := v1alpha1.NewEndpoint(fmt.Sprintf("r%d.example.com", i), "A", 60, fmt.Sprintf("10.0.%d.%d", i/250, i%250))
		batch = append(batch, ep)
		want[ep.Key()] = ep
		if len(batch) == 10 {
			apply(&providers.Changes{Create: batch})
			batch = nil
		}
	}
	// Update ten and delete ten, in one batch.
	var c providers.Changes
	for i := range 10 {
		old := want[v1alpha1.NewEndpoint(fmt.Sprintf("r%d.example.com", i), "A", 60).Key()]
		updated := v1alpha1.NewEndpoint(old.DNSName, "A", 60, "10.1.0.1", "10.1.0.2")
		c.UpdateOld, c.UpdateNew = append(c.UpdateOld, old), append(c.UpdateNew, updated)
		want[old.Key()] = updated
		gone := want[v1alpha1.NewEndpoint(fmt.Sprintf("r%d.example.com", 50+i), "A", 60).Key()]
		c.Delete = append(c.Delete, gone)
		delete(want, gone.Key())
	}
	apply(&c)

	emu.SetFaults(emulator.Faults{})
	gotView, err := p.Records(t.Context(), zone)
	got := gotView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	var a int
	for _, ep := range got {
		if ep.RecordType != "A" {
			continue
		}
		a++
		if w, ok := want[ep.Key()]; !ok || !w.SameValues(ep) {
			t.Errorf("zone holds %s, want %v", ep, w)
		}
	}
	if a != len(want) {
		t.Errorf("zone holds %d A sets, want %d", a, len(want))
	}
	for _, err := range errs {
		if requestID.MatchString(err.Error()) {
			t.Errorf("error %q carries a request ID", err)
		}
	}
	calls := emu.Calls()
	injected := emu.Injected()
	for _, kind := range []string{"error", "timeout", "throttle", "drop"} {
		if injected[kind] == 0 {
			t.Errorf("no %s fault was injected (%v): the test proves less than it says", kind, injected)
		}
	}
	total := 0
	for _, n := range calls {
		total += n
	}
	if total > 300 {
		t.Errorf("%d calls in all (%v) for 31 batches and their reads, want a bounded number", total, calls)
	}
	t.Logf("calls %v, faults %v, errors returned to the engine %d", calls, injected, len(errs))
}

// A change that landed but whose answer was lost is retried by the SDK; the retry is rejected
// because the change is already there, and Apply recognises its own batch in the zone.
func TestLostAnswerLandsOnce(t *testing.T) {
	emu, url := start(t, emulator.Options{InsyncAfter: time.Millisecond})
	zone := providers.Zone{ID: emu.AddZone("example.com"), DNSName: "example.com"}
	p := fastProvider(t, url)
	a := v1alpha1.NewEndpoint("a.example.com", "A", 60, "192.0.2.1")
	b := v1alpha1.NewEndpoint("b.example.com", "A", 60, "192.0.2.2")
	for _, c := range []*providers.Changes{
		{Create: []*v1alpha1.Endpoint{a, b}},
		{Delete: []*v1alpha1.Endpoint{a}},
	} {
		emu.DropNext(1)
		if err := p.Apply(t.Context(), zone, nil, c); err != nil {
			t.Fatalf("Apply after a lost answer: %v", err)
		}
	}
	gotView, err := p.Records(t.Context(), zone)
	got := gotView.Endpoints
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, ep := range got {
		if ep.RecordType == "A" {
			names = append(names, ep.DNSName)
		}
	}
	if fmt.Sprint(names) != "[b.example.com]" {
		t.Errorf("zone holds A sets %v, want [b.example.com]", names)
	}
	if n := emu.Calls()[emulator.OpChangeResourceRecordSets]; n != 4 {
		t.Errorf("%d change calls for 2 batches whose first answers were lost, want 4", n)
	}
	// A rejection without a lost answer is not mistaken for a landed batch.
	if err := p.Apply(t.Context(), zone, nil, &providers.Changes{Delete: []*v1alpha1.Endpoint{a}}); providers.KindOf(err) != providers.StaleView {
		t.Errorf("deleting a set that is gone = %v, want a stale view", err)
	}
}

// Refused credentials are blamed on the Secret key to fix, naming the Secret and never a value.
func TestRefusedCredentialsNameTheSecretAndKey(t *testing.T) {
	_, url := start(t, emulator.Options{Zones: []string{"example.com"}, AccessKeys: []string{"AKIDOTHER"}})
	p := fastProvider(t, url)
	_, err := p.Zones(t.Context())
	want := "provider secret team-a/aws-creds: key AWS_ACCESS_KEY_ID is not an access key ID Route 53 accepts (route53 ListHostedZones: InvalidClientTokenId: "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Zones with an unknown access key: %v, want an error starting %q", err, want)
	}
	for _, tc := range []struct{ code, key string }{
		{"SignatureDoesNotMatch", "key AWS_SECRET_ACCESS_KEY is not the secret of the access key ID in key AWS_ACCESS_KEY_ID"},
		{"AccessDenied", "the credentials in keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are expired or not allowed to call ChangeResourceRecordSets"},
		{"ExpiredToken", "the credentials in keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are expired"},
	} {
		err := p.classify("ChangeResourceRecordSets", &smithy.GenericAPIError{Code: tc.code, Message: "refused"})
		if providers.KindOf(err) != providers.Permanent || !strings.HasPrefix(err.Error(), "provider secret team-a/aws-creds: "+tc.key) {
			t.Errorf("%s: %v (%v), want a Permanent error naming team-a/aws-creds and %q", tc.code, err, providers.KindOf(err), tc.key)
		}
	}
	// Other errors are left as they were.
	if err := p.classify("ListHostedZones", &smithy.GenericAPIError{Code: "Throttling", Message: "Rate exceeded"}); strings.Contains(err.Error(), "provider secret") {
		t.Errorf("throttling blamed on the Secret: %v", err)
	}
}
