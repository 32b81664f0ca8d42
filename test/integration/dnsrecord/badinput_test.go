//go:build integration

package dnsrecord_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

// twinZones lists every zone twice under two IDs, as a public and a private hosted zone of one
// domain would appear.
type twinZones struct{ providers.Provider }

func (p twinZones) Zones(ctx context.Context) ([]providers.Zone, error) {
	zones, err := p.Provider.Zones(ctx)
	var out []providers.Zone
	for _, z := range zones {
		out = append(out, z, providers.Zone{ID: z.ID + "-private", DNSName: z.DNSName})
	}
	return out, err
}

const twinType corev1.SecretType = "test.dnspolicy.io/twin-zones"

// Each bad input gets its own condition, and the record retries with a growing backoff instead of
// looping hot.
func TestBadInput(t *testing.T) {
	store := inmemory.NewStore()
	factory := providers.NewFactory()
	factory.Register(v1alpha1.SecretTypeInMemory, inmemory.NewConstructor(store))
	inmem := inmemory.NewConstructor(store)
	factory.Register(twinType, func(ctx context.Context, s *corev1.Secret, env providers.Env) (providers.Backend, error) {
		b, err := inmem(ctx, s, env)
		b.Zones = twinZones{b.Zones}
		return b, err
	})
	cl := startClusters(t, 1, store, fastOptions(), factory)[0]
	secret := func(name string, typ corev1.SecretType, data map[string]string, labels map[string]string) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cl.ns, Labels: labels}, Type: typ, StringData: data}
		if err := cl.c.Create(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	secret("aws", v1alpha1.SecretTypeAWS, map[string]string{"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "y"}, nil)
	secret("suffix", v1alpha1.SecretTypeInMemory, map[string]string{v1alpha1.InMemInitZonesKey: "co.uk"}, nil)
	secret("twins", twinType, map[string]string{v1alpha1.InMemInitZonesKey: "twins.example.com"}, nil)
	// The factory was not told to allow endpoint overrides (--allow-provider-endpoint-override).
	secret("override", v1alpha1.SecretTypeInMemory, map[string]string{v1alpha1.InMemInitZonesKey: "override.example.com",
		v1alpha1.EndpointOverrideKey: "http://169.254.169.254/"}, nil)

	cases := []struct {
		name, host, provider, reason, message string
	}{
		{"missing secret", "a.example.com", "nope", v1alpha1.ReasonProviderSecretMissing, "secret " + cl.ns + "/nope not found"},
		{"no default provider", "b.example.com", "", v1alpha1.ReasonProviderSecretMissing, "no providerRef and no secret labelled kuadrant.io/default-provider=true"},
		{"unsupported type", "c.example.com", "aws", v1alpha1.ReasonUnsupportedProvider, `has type "kuadrant.io/aws", which is not supported or not enabled`},
		{"public suffix", "co.uk", "suffix", v1alpha1.ReasonDNSProviderError, "Unable to find suitable zone in provider: "},
		{"two zones of one name", "app.twins.example.com", "twins", v1alpha1.ReasonDNSProviderError, "Unable to find suitable zone in provider: "},
		{"endpoint override off", "app.override.example.com", "override", v1alpha1.ReasonUnsupportedProvider,
			"provider secret " + cl.ns + "/override: key ENDPOINT_URL is set but --allow-provider-endpoint-override is off"},
	}
	for _, tc := range cases {
		r := &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: strings.ReplaceAll(tc.name, " ", "-"), Namespace: cl.ns},
			Spec:       v1alpha1.DNSRecordSpec{RootHost: tc.host, Endpoints: []*v1alpha1.Endpoint{a(tc.host, 60, "10.9.9.9")}},
		}
		if tc.provider != "" {
			r.Spec.ProviderRef = &v1alpha1.ProviderRef{Name: tc.provider}
		}
		if err := cl.c.Create(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for _, tc := range cases {
		name := strings.ReplaceAll(tc.name, " ", "-")
		eventually(t, 10*time.Second, func() string {
			c := ready(cl.get(t, name))
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tc.reason || !strings.Contains(c.Message, tc.message) {
				return fmt.Sprintf("%s: Ready %v, want False %s containing %q", tc.name, c, tc.reason, tc.message)
			}
			return ""
		})
	}
	if c := ready(cl.get(t, "two-zones-of-one-name")); !strings.Contains(c.Message, inmemory.ZoneID("twins.example.com")) || !strings.Contains(c.Message, "-private") {
		t.Errorf("ambiguous zones: the message must name both zone IDs: %s", c.Message)
	}
	if c := ready(cl.get(t, "public-suffix")); !strings.Contains(c.Message, "public suffix") {
		t.Errorf("public suffix: the message must say so: %s", c.Message)
	}
	// Bounded: with a backoff from 0.5 s doubling, 8 s allow about 5 passes; a hot loop makes hundreds.
	time.Sleep(8*time.Second - time.Since(start))
	for _, tc := range cases {
		if n := passes(cl, strings.ReplaceAll(tc.name, " ", "-")); n > 8 {
			t.Errorf("%s: %v passes in 8 s, want a backoff (at most 8)", tc.name, n)
		}
	}
	// Nothing was written for any of them.
	if calls := store.Calls(); calls.Apply != 0 {
		t.Errorf("%d batches written for records that cannot be published", calls.Apply)
	}

	// An endpoint outside rootHost never reaches the controller: the API server rejects it, naming
	// the field.
	bad := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: "outside", Namespace: cl.ns},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: "a.example.com", Endpoints: []*v1alpha1.Endpoint{a("b.example.com", 60, "10.9.9.9")}},
	}
	if err := cl.c.Create(t.Context(), bad); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.endpoints") {
		t.Errorf("endpoint outside rootHost: want Invalid naming spec.endpoints, got %v", err)
	}
}

// A record waiting for its provider Secret, or for a default-provider Secret, is published as soon
// as the Secret appears, not at its next backoff retry: the backoff here is 5 minutes, so only the
// controller's Secret watch can bring the records to Ready within the test.
func TestSecretCreatedLaterIsPickedUpAtOnce(t *testing.T) {
	store := inmemory.NewStore()
	opts := fastOptions()
	opts.MinBackoff, opts.MaxBackoff = 5*time.Minute, 5*time.Minute
	cl := startClusters(t, 1, store, opts, nil)[0]
	const z = "later.example.com"
	store.EnsureZone(z)
	cl.record(t, "by-ref", "a."+z, a("a."+z, 60, "10.9.0.1"))
	unreferenced := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: "by-default", Namespace: cl.ns},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: "b." + z, Endpoints: []*v1alpha1.Endpoint{a("b."+z, 60, "10.9.0.2")}},
	}
	if err := cl.c.Create(t.Context(), unreferenced); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"by-ref", "by-default"} {
		eventually(t, 10*time.Second, func() string {
			if c := ready(cl.get(t, name)); c == nil || c.Reason != v1alpha1.ReasonProviderSecretMissing {
				return fmt.Sprintf("%s: Ready %v, want %s", name, c, v1alpha1.ReasonProviderSecretMissing)
			}
			return ""
		})
	}
	cl.secret(t, z) // "provider", which by-ref names
	def := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "default-provider", Namespace: cl.ns, Labels: map[string]string{v1alpha1.DefaultProviderLabel: "true"}},
		Type:       v1alpha1.SecretTypeInMemory,
		StringData: map[string]string{v1alpha1.InMemInitZonesKey: z},
	}
	if err := cl.c.Create(t.Context(), def); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"by-ref", "by-default"} {
		eventually(t, 15*time.Second, func() string {
			if c := ready(cl.get(t, name)); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Sprintf("%s: Ready %v", name, c)
			}
			return ""
		})
	}
}

// failingApply refuses every batch, as a provider rejecting credentials or a record would.
type failingApply struct{ providers.Provider }

func (failingApply) Apply(context.Context, providers.Zone, providers.State, *providers.Changes) error {
	return providers.Errorf(providers.Permanent, "AccessDenied: not authorized to change zone, RequestID: 5f2c-77aa")
}

const failingType corev1.SecretType = "test.dnspolicy.io/failing-apply"

// A provider error reaches the Ready condition with Kuadrant's verbatim prefix, and without the
// request ID that would change on every attempt.
func TestProviderErrorCondition(t *testing.T) {
	store := inmemory.NewStore()
	inmem := inmemory.NewConstructor(store)
	factory := providers.NewFactory()
	factory.Register(failingType, func(ctx context.Context, s *corev1.Secret, env providers.Env) (providers.Backend, error) {
		b, err := inmem(ctx, s, env)
		b.Zones = failingApply{b.Zones}
		return b, err
	})
	cl := startClusters(t, 1, store, fastOptions(), factory)[0]
	if err := cl.c.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: cl.ns},
		Type:       failingType,
		StringData: map[string]string{v1alpha1.InMemInitZonesKey: "failing.example.com"},
	}); err != nil {
		t.Fatal(err)
	}
	cl.record(t, "web", "app.failing.example.com", a("app.failing.example.com", 60, "10.6.0.1"))
	want := "The DNS provider failed to ensure the record: AccessDenied: not authorized to change zone"
	eventually(t, 10*time.Second, func() string {
		c := ready(cl.get(t, "web"))
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonProviderError || c.Message != want {
			return fmt.Sprintf("Ready %v, want False ProviderError %q", c, want)
		}
		return ""
	})
}
