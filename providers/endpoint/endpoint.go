// Package endpoint is the kuadrant.io/endpoint backend: a zone is a DNSRecord in the Secret's
// namespace that carries the zone label; its spec.rootHost is the zone's name and its
// spec.endpoints are the zone's record sets. Kuadrant's dns-operator keeps zones the same way (its
// CoreDNS authoritative records are such zones), so either can read and write what the other wrote.
//
// Writes carry the resourceVersion that was read: when another writer got there first, the API
// server refuses, and the engine re-reads and re-plans instead of overwriting a change it never saw.
package endpoint

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// ProviderName is the value of the kuadrant.io/dns-provider-name label for this backend.
const ProviderName = "endpoint"

// Provider keeps zones in labelled DNSRecords of one namespace.
type Provider struct {
	client    client.Client
	namespace string
	zones     labels.Selector
}

var _ providers.Provider = (*Provider)(nil)

// New is the providers.Constructor of kuadrant.io/endpoint Secrets. It uses env.Client and
// env.Namespace, where the Secret and its zones live.
func New(_ context.Context, secret *corev1.Secret, env providers.Env) (providers.Backend, error) {
	opts, err := ParseOptions(secret)
	if err != nil {
		return providers.Backend{}, err
	}
	if env.Client == nil || env.Namespace == "" {
		return providers.Backend{}, fmt.Errorf("provider secret %s/%s: the endpoint backend needs a client and a namespace",
			secret.Namespace, secret.Name)
	}
	return providers.Backend{Zones: &Provider{client: env.Client, namespace: env.Namespace, zones: opts.ZoneSelector}}, nil
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return ProviderName }

// Capabilities implements providers.Provider. Routing properties are stored as given, for the DNS
// server that serves the zone to interpret.
func (p *Provider) Capabilities() providers.Capabilities {
	return providers.Capabilities{ApexRecords: true}
}

// Zones implements providers.Provider.
func (p *Provider) Zones(ctx context.Context) ([]providers.Zone, error) {
	var list v1alpha1.DNSRecordList
	if err := p.client.List(ctx, &list, client.InNamespace(p.namespace), client.MatchingLabelsSelector{Selector: p.zones}); err != nil {
		return nil, classify(err, fmt.Sprintf("listing zone DNSRecords in namespace %s", p.namespace))
	}
	zones := make([]providers.Zone, 0, len(list.Items))
	for _, r := range list.Items {
		zones = append(zones, providers.Zone{ID: r.Name, DNSName: zoneName(&r)})
	}
	return zones, nil
}

// Records implements providers.Provider.
func (p *Provider) Records(ctx context.Context, zone providers.Zone) (providers.View, error) {
	record, err := p.zoneRecord(ctx, zone)
	if err != nil {
		return providers.View{}, err
	}
	records := make([]*v1alpha1.Endpoint, 0, len(record.Spec.Endpoints))
	for _, ep := range record.Spec.Endpoints {
		if ep != nil {
			records = append(records, ep.DeepCopy())
		}
	}
	return providers.View{Endpoints: records, State: &providers.ObjectWrites{}}, nil
}

// Apply implements providers.Provider. The batch is checked against the record's endpoints as
// strictly as the inmemory backend checks it, then written with the resourceVersion it was checked
// against, so a concurrent write makes it fail whole as StaleView. Unlike the inmemory backend it
// allows a CNAME at the zone's root: Kuadrant's authoritative records are zones rooted at the very
// hostname they publish, which may be a CNAME.
func (p *Provider) Apply(ctx context.Context, zone providers.Zone, state providers.State, changes *providers.Changes) error {
	record, err := p.zoneRecord(ctx, zone)
	if err != nil {
		return err
	}
	endpoints, err := providers.ApplyChanges(record.Spec.RootHost, record.Spec.Endpoints, changes)
	if err != nil || changes.Empty() {
		return err
	}
	before := record.ResourceVersion
	patch := client.MergeFromWithOptions(record.DeepCopy(), client.MergeFromWithOptimisticLock{})
	record.Spec.Endpoints = endpoints
	if err := p.client.Patch(ctx, record, patch); err != nil {
		return classify(err, fmt.Sprintf("writing zone DNSRecord %s/%s", p.namespace, zone.ID))
	}
	providers.ObjectWritesOf(state).Updated(record, before)
	return nil
}

// AwaitPropagation implements providers.Provider: the record is the zone, and it returns once the
// client the record is read with (the manager's cache) shows the batches' writes.
func (p *Provider) AwaitPropagation(ctx context.Context, _ providers.Zone, state providers.State) error {
	return providers.ObjectWritesOf(state).Await(ctx, p.client, func() client.Object { return &v1alpha1.DNSRecord{} })
}

// AdjustEndpoints implements providers.Provider. This backend stores every property as given.
func (p *Provider) AdjustEndpoints(endpoints []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error) {
	return copies(endpoints), nil
}

// copies are deep copies of endpoints: the plan keeps what it passed in, and the backend stores
// what it returns.
func copies(endpoints []*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	out := make([]*v1alpha1.Endpoint, len(endpoints))
	for i, ep := range endpoints {
		out[i] = ep.DeepCopy()
	}
	return out
}

// zoneRecord reads the DNSRecord of a zone and checks that it is still one.
func (p *Provider) zoneRecord(ctx context.Context, zone providers.Zone) (*v1alpha1.DNSRecord, error) {
	record := &v1alpha1.DNSRecord{}
	if err := p.client.Get(ctx, client.ObjectKey{Namespace: p.namespace, Name: zone.ID}, record); err != nil {
		return nil, classify(err, fmt.Sprintf("reading zone DNSRecord %s/%s", p.namespace, zone.ID))
	}
	if !p.zones.Matches(labels.Set(record.Labels)) {
		return nil, providers.Errorf(providers.Permanent, "DNSRecord %s/%s is not a zone: it lacks the zone label %s",
			p.namespace, zone.ID, p.zones)
	}
	return record, nil
}

func zoneName(r *v1alpha1.DNSRecord) string {
	return strings.ToLower(strings.TrimSuffix(r.Spec.RootHost, "."))
}

// classify gives API errors their kind: a conflict means the zone changed since it was read; what
// the request itself or its permissions cause will not change by retrying; the rest may pass.
func classify(err error, doing string) error {
	kind := providers.Transient
	switch {
	case apierrors.IsConflict(err):
		kind = providers.StaleView
	case apierrors.IsNotFound(err), apierrors.IsInvalid(err), apierrors.IsBadRequest(err),
		apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		kind = providers.Permanent
	}
	return providers.NewError(kind, fmt.Errorf("%s: %w", doing, err))
}
