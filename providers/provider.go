// Package providers holds the contract every DNS backend implements, the error kinds a backend
// returns, and the Factory that builds a backend from a provider Secret (the map from Secret type to
// constructor is filled in one place, package builtin).
//
// A constructor returns a Backend: the parts of the contract the backend has, declared as fields
// (Zones, Records, Hosts, ZoneScope) rather than found by type assertion, so a backend implements
// only what it does and a reader sees its shape in its constructor.
//
// A backend knows nothing about owners (but the authoritative-record backend labels each record with
// the owners its claims name, as Kuadrant stores it): it lists zones, reads a zone's record sets
// (ownership TXT records included, as plain TXT) with the State it needs to write against them, and
// applies a batch of changes to one zone atomically, refusing the whole batch as a stale view when
// the zone is not what the batch assumes (the sets it deletes, updates and requires). It keeps no
// copy of a zone: the engine owns the one view and hands the State back with every batch.
// Ownership, merging and conflict resolution live in pkg/registry and pkg/plan.
package providers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/zone"
)

// Zone is a hosted zone of a backend (see package zone).
type Zone = zone.Zone

// Changes is one batch of changes to one zone (see package batch).
type Changes = batch.Changes

// Capabilities describe what a backend can hold, so the engine plans only what the backend can apply.
type Capabilities struct {
	// ApexRecords: the backend can hold A/AAAA/TXT records at the zone apex (CNAME never can).
	ApexRecords bool
	// MaxChangesPerBatch is the most record-set changes one Apply takes; 0 means no limit.
	MaxChangesPerBatch int
	// BatchFits, when set, reports whether a batch within MaxChangesPerBatch also fits the backend's
	// other limits of one call (Route 53 counts resource records and characters of values, not
	// changes), so batches are cut where the backend's own limits fall rather than at a count
	// small enough for the worst case.
	BatchFits func(*Changes) bool
	// NoRoutingPolicies: the backend's servers answer every client alike (an RFC 2136 server), so
	// it holds no weighted or geo record sets: AdjustEndpoints and Apply refuse a set with a set
	// identifier, weight or geo-code as Permanent. The zero value is what every other backend
	// does, so a backend declares only the lack.
	NoRoutingPolicies bool
	// ClaimsWithoutTTL: the zone is an authoritative record, where Kuadrant's dns-operator writes
	// ownership TXTs with no TTL (0), so the engine writes its own so too and every primary builds
	// the same record (see plan.Input.ClaimsWithoutTTL). A DNS server serves such a TXT with its
	// default TTL. Elsewhere a claim has the TTL of the record it claims.
	ClaimsWithoutTTL bool
}

// RoutedSet returns the first endpoint of the lists that belongs to a weighted or geo set (a set
// identifier, a weight or a geo-code), nil when none does: what a backend that declares
// NoRoutingPolicies refuses.
func RoutedSet(lists ...[]*v1alpha1.Endpoint) *v1alpha1.Endpoint {
	for _, eps := range lists {
		for _, ep := range eps {
			_, weight := ep.GetProviderSpecific(v1alpha1.ProviderSpecificWeight)
			_, geo := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
			if ep.SetIdentifier != "" || weight || geo {
				return ep
			}
		}
	}
	return nil
}

// Fits reports whether one Apply takes the batch.
func (c Capabilities) Fits(changes *Changes) bool {
	return (c.MaxChangesPerBatch <= 0 || changes.Len() <= c.MaxChangesPerBatch) && (c.BatchFits == nil || c.BatchFits(changes))
}

// State is what a backend read beside a zone's endpoints and needs in order to write against them
// safely: ETags, the record sets as the cloud holds them, changes not yet propagated. It is opaque to
// the engine, which keeps it with its one view of the zone and hands it to every Apply and
// AwaitPropagation planned from that view. A backend keeps no copy of a zone of its own.
type State any

// View is one read of a zone.
type View struct {
	// Endpoints are every record set of the zone, TXT records included. The engine owns them.
	Endpoints []*v1alpha1.Endpoint
	// State is the backend's own record of the read (nil when it needs none).
	State State
}

// Backend is what a Constructor builds from one provider Secret: the parts of the contract the
// backend has. Zones or Records is set, never both; Hosts and ZoneScope only beside Zones.
type Backend struct {
	// Zones publishes record sets into zones the engine reads, plans and writes: every backend that
	// holds records in zones (all but k8gb).
	Zones Provider
	// Records serves whole DNSRecords itself (k8gb): the record controller skips zone choice,
	// planning and ownership records for it.
	Records RecordBackend
	// Hosts gives each root host a zone record of its own, written through Hosts.HostProvider
	// (coredns).
	Hosts HostZones
	// ZoneScope names where Zones lists zones and the Secret key that selects it (a project, a
	// resource group), for the condition of a record whose host is in none of them; "" when the
	// Secret has no such choice.
	ZoneScope string
}

// check reports a Backend that breaks the shape its fields declare: a constructor's bug.
func (b Backend) check() error {
	switch {
	case b.Zones == nil && b.Records == nil:
		return errors.New("the backend declares neither zones nor records")
	case b.Zones != nil && b.Records != nil:
		return errors.New("the backend declares both zones and whole records")
	case b.Zones == nil && (b.Hosts != nil || b.ZoneScope != ""):
		return errors.New("the backend declares host zones or a zone scope without zones")
	}
	return nil
}

// Provider is the Zones part of a Backend: one DNS backend's zones, bound to one provider Secret's
// credentials.
type Provider interface {
	// Name is the value of the kuadrant.io/dns-provider-name label (aws, google, azure, coredns,
	// inmemory, endpoint, ...).
	Name() string
	// Capabilities says what this backend can express.
	Capabilities() Capabilities
	// Zones lists the zones the credentials can see.
	Zones(ctx context.Context) ([]Zone, error)
	// Records reads every record set of one zone, TXT records included, and the State to write
	// against them.
	Records(ctx context.Context, zone Zone) (View, error)
	// Apply applies one batch to one zone, all or nothing, or fails as StaleView when the zone does
	// not hold what the batch assumes: the sets it deletes and updates with their old values, nothing
	// where it creates, and every set it requires (Changes.Require) with exactly the required
	// values. state is the State of the view the batch was planned from, kept current by the Apply
	// calls since: on success Apply updates it to the zone after the batch; after an error the engine
	// reads the zone again. A batch larger than MaxChangesPerBatch is a caller error.
	Apply(ctx context.Context, zone Zone, state State, changes *Changes) error
	// AwaitPropagation returns once the batches applied with state are served by the backend's
	// name servers (Route 53 answers PENDING until INSYNC), so a record reported Ready is served.
	// The engine calls it once after a cycle's batches, so a burst's batches go out back to back.
	// Backends that serve what they accept at once return nil.
	AwaitPropagation(ctx context.Context, zone Zone, state State) error
	// AdjustEndpoints rewrites desired endpoints into what the backend stores and reads back (for
	// example dropping routing properties it cannot express), so a plan compares like with like. It
	// returns a Permanent error for what the backend cannot express at all (an unknown geo code).
	AdjustEndpoints(endpoints []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error)
}

// ErrorKind classifies backend errors so the engine knows whether and how to retry.
type ErrorKind int

const (
	// Transient errors (throttling, timeouts, 5xx) are retried with backoff.
	Transient ErrorKind = iota
	// Permanent errors (bad credentials, an unexpressible record) are reported and not retried until
	// the inputs change.
	Permanent
	// StaleView errors mean the zone changed under the caller (a precondition failed): refresh the
	// zone view, re-plan and retry at once.
	StaleView
)

func (k ErrorKind) String() string {
	switch k {
	case Permanent:
		return "permanent"
	case StaleView:
		return "stale view"
	default:
		return "transient"
	}
}

// Error is a classified backend error. Its message must not carry request IDs, timestamps or secret
// values: it ends up in status conditions, and a message that changes on every call makes every status
// write trigger another reconcile.
type Error struct {
	Kind ErrorKind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// NewError wraps err with a kind.
func NewError(kind ErrorKind, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Kind: kind, Err: err}
}

// Errorf builds a classified error from a format.
func Errorf(kind ErrorKind, format string, args ...any) error {
	return &Error{Kind: kind, Err: fmt.Errorf(format, args...)}
}

// KindOf returns the kind of err. Unclassified errors count as Transient: retrying with backoff is
// the safe default for an error nobody has looked at.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Transient
}

// Env is what a constructor may use besides the Secret.
type Env struct {
	// Client reaches the API server of the cluster the record lives in (the endpoint and coredns
	// backends keep their zones in DNSRecords).
	Client client.Client
	// Namespace is the namespace of the record and its Secret.
	Namespace string
}

// Constructor builds a backend from a provider Secret. Errors about the Secret name the key, never
// its value.
type Constructor func(ctx context.Context, secret *corev1.Secret, env Env) (Backend, error)

// EndpointOverrideKeys are the keys of a provider Secret that point its backend at another API than
// the provider's (ENDPOINT_URL: an emulator, a private endpoint). They are test hooks: whoever may
// write a Secret could aim the controller, from where it runs and with the Secret's credentials, at
// any URL. A Factory refuses a Secret that sets one unless the operator allows it
// (AllowEndpointOverride, --allow-provider-endpoint-override).
var EndpointOverrideKeys = []string{v1alpha1.EndpointOverrideKey}

// ErrEndpointOverrideOff is the error of a Secret that sets an EndpointOverrideKeys key while the
// Factory does not allow it.
var ErrEndpointOverrideOff = errors.New("is set but --allow-provider-endpoint-override is off")

// Factory maps provider Secret types to constructors. It is built explicitly in one place (cmd/), and
// tests build their own, so nothing registers itself behind the reader's back.
type Factory struct {
	constructors map[corev1.SecretType]Constructor
	// endpointOverride: Secrets may set EndpointOverrideKeys.
	endpointOverride bool
}

// AllowEndpointOverride sets whether provider Secrets may point their backend at another endpoint
// (EndpointOverrideKeys): off by default, on for tests against emulators and for private endpoints
// the operator chooses to trust every Secret writer with.
func (f *Factory) AllowEndpointOverride(allow bool) { f.endpointOverride = allow }

// NewFactory returns an empty factory.
func NewFactory() *Factory {
	return &Factory{constructors: map[corev1.SecretType]Constructor{}}
}

// Register adds or replaces the constructor of one Secret type.
func (f *Factory) Register(secretType corev1.SecretType, c Constructor) {
	f.constructors[secretType] = c
}

// Types lists the registered Secret types, sorted.
func (f *Factory) Types() []string {
	types := make([]string, 0, len(f.constructors))
	for t := range f.constructors {
		types = append(types, string(t))
	}
	sort.Strings(types)
	return types
}

// New builds the backend for a Secret. An unknown or disabled type is a Permanent error naming the
// types that are enabled.
func (f *Factory) New(ctx context.Context, secret *corev1.Secret, env Env) (Backend, error) {
	c, ok := f.constructors[secret.Type]
	if !ok {
		return Backend{}, Errorf(Permanent, "provider secret %s/%s has type %q, which is not supported or not enabled (enabled: %s)",
			secret.Namespace, secret.Name, secret.Type, strings.Join(f.Types(), ", "))
	}
	if !f.endpointOverride {
		for _, key := range EndpointOverrideKeys {
			if strings.TrimSpace(string(secret.Data[key])) != "" {
				return Backend{}, NewError(Permanent, fmt.Errorf("provider secret %s/%s: key %s %w", secret.Namespace, secret.Name, key, ErrEndpointOverrideOff))
			}
		}
	}
	b, err := c(ctx, secret, env)
	if err != nil {
		var classified *Error
		if errors.As(err, &classified) {
			return Backend{}, err
		}
		// A constructor fails on the Secret's content, which retrying will not fix.
		return Backend{}, NewError(Permanent, err)
	}
	if err := b.check(); err != nil {
		return Backend{}, Errorf(Permanent, "provider secret %s/%s of type %q: %v", secret.Namespace, secret.Name, secret.Type, err)
	}
	return b, nil
}
