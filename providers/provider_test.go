package providers

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// A Secret that sets ENDPOINT_URL is refused, with a stable permanent error and before its
// constructor runs, unless the operator allows endpoint overrides.
func TestEndpointOverrideIsGated(t *testing.T) {
	const typ corev1.SecretType = "test.dnspolicy.io/cloud"
	built := 0
	f := NewFactory()
	f.Register(typ, func(context.Context, *corev1.Secret, Env) (Backend, error) {
		built++
		return Backend{Zones: stub{}}, nil
	})
	secret := func(endpoint string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "cloud"}, Type: typ,
			Data: map[string][]byte{v1alpha1.EndpointOverrideKey: []byte(endpoint)}}
	}

	_, err := f.New(t.Context(), secret("http://169.254.169.254/"), Env{})
	want := "provider secret team-a/cloud: key ENDPOINT_URL is set but --allow-provider-endpoint-override is off"
	if !errors.Is(err, ErrEndpointOverrideOff) || KindOf(err) != Permanent || err.Error() != want || built != 0 {
		t.Fatalf("override off: err %v (kind %v), constructor ran %d times; want %q, permanent, never run", err, KindOf(err), built, want)
	}
	if strings.Contains(err.Error(), "169.254") {
		t.Errorf("the error shows the Secret's value: %v", err)
	}
	if _, err := f.New(t.Context(), secret(" \n"), Env{}); err != nil || built != 1 {
		t.Errorf("an empty ENDPOINT_URL sets nothing: err %v, constructor ran %d times", err, built)
	}

	f.AllowEndpointOverride(true)
	if _, err := f.New(t.Context(), secret("http://127.0.0.1:8053"), Env{}); err != nil || built != 2 {
		t.Errorf("override allowed: err %v, constructor ran %d times", err, built)
	}
}

// stub is a zone backend whose methods are never called.
type stub struct{ Provider }

// record is a backend that serves whole records, whose methods are never called.
type record struct{ RecordBackend }

// A constructor whose Backend breaks the declared shape is refused as a permanent error: the
// controller would otherwise find out record by record.
func TestMisdeclaredBackendIsRefused(t *testing.T) {
	const typ corev1.SecretType = "test.dnspolicy.io/shape"
	for _, tc := range []struct {
		name    string
		backend Backend
		valid   bool
	}{
		{"nothing", Backend{}, false},
		{"zones and records", Backend{Zones: stub{}, Records: record{}}, false},
		{"records with a zone scope", Backend{Records: record{}, ZoneScope: "a project"}, false},
		{"zones", Backend{Zones: stub{}}, true},
		{"zones with a zone scope", Backend{Zones: stub{}, ZoneScope: "a project"}, true},
		{"records", Backend{Records: record{}}, true},
	} {
		f := NewFactory()
		f.Register(typ, func(context.Context, *corev1.Secret, Env) (Backend, error) { return tc.backend, nil })
		_, err := f.New(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Type: typ}, Env{})
		if tc.valid && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !tc.valid && KindOf(err) != Permanent {
			t.Errorf("%s: want a permanent error, got %v", tc.name, err)
		}
	}
}
