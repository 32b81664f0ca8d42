package coredns

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/geo"
	zonechoice "github.com/dnspolicy/dnspolicy-controller/pkg/zone"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/endpoint"
)

var _ providers.HostZones = (*Provider)(nil)

// HostProvider implements providers.HostZones: records of a kuadrant.io/coredns Secret are written
// through the endpoint backend into the authoritative record of their root host, as Kuadrant's
// dns-operator writes them, so they are labelled "endpoint".
func (p *Provider) HostProvider() providers.Provider { return p.host }

// HostZone implements providers.HostZones: the authoritative record of the root host (a leading "*."
// dropped, as Kuadrant hashes it), in the most specific zone of the Secret's ZONES that holds it.
func (p *Provider) HostZone(rootHost string) (providers.HostZone, error) {
	root := strings.TrimPrefix(v1alpha1.NormalizeName(rootHost), v1alpha1.WildcardPrefix)
	z, err := zonechoice.Choose(rootHost, p.zoneList(), true, "")
	if err != nil {
		return providers.HostZone{}, providers.NewError(providers.Permanent, err)
	}
	return providers.HostZone{Zone: providers.Zone{ID: RecordName(root), DNSName: z.DNSName}, DomainName: root}, nil
}

// CheckEndpoints implements providers.HostZones with Kuadrant's checks and messages: the DNS server
// could not route an unknown geo code or a weight that is not a whole number.
func (p *Provider) CheckEndpoints(endpoints []*v1alpha1.Endpoint) error {
	if err := geo.ValidateEndpoints(endpoints); err != nil {
		return providers.NewError(providers.Permanent, err)
	}
	return nil
}

// AuthoritativeLabels implements providers.HostZones: the zone label DNS servers select a zone's
// authoritative records by.
func (p *Provider) AuthoritativeLabels(z providers.Zone) map[string]string {
	return map[string]string{v1alpha1.CoreDNSZoneNameLabel: z.DNSName}
}

func (p *Provider) zoneList() []providers.Zone {
	zones := make([]providers.Zone, len(p.zones))
	for i, z := range p.zones {
		zones[i] = providers.Zone{ID: z, DNSName: z}
	}
	return zones
}

// hostProvider is the endpoint backend over authoritative records: each zone is one authoritative
// record, named by its ID; the zone's DNSName is the coredns zone every name of it is in.
type hostProvider struct {
	client    client.Client
	namespace string
	// secret is the provider Secret, the providerRef of the authoritative records it creates (the
	// record controller reconciles them with it).
	secret string
	zones  []string
}

var _ providers.Provider = (*hostProvider)(nil)

// Name implements providers.Provider: it is Kuadrant's endpoint backend.
func (h *hostProvider) Name() string { return endpoint.ProviderName }

// Capabilities implements providers.Provider: the DNS server routes geo and weighted sets itself,
// and the root host may be the zone's apex.
func (h *hostProvider) Capabilities() providers.Capabilities {
	return providers.Capabilities{ApexRecords: true}
}

// Zones implements providers.Provider: the authoritative records of the namespace in the Secret's
// zones.
func (h *hostProvider) Zones(ctx context.Context) ([]providers.Zone, error) {
	var list v1alpha1.DNSRecordList
	if err := h.client.List(ctx, &list, client.InNamespace(h.namespace), client.MatchingLabels{v1alpha1.AuthoritativeRecordLabel: "true"}); err != nil {
		return nil, classify(err, fmt.Sprintf("listing authoritative records in namespace %s", h.namespace))
	}
	var zones []providers.Zone
	for i := range list.Items {
		r := &list.Items[i]
		if z := r.Labels[v1alpha1.CoreDNSZoneNameLabel]; r.DeletionTimestamp == nil && slices.Contains(h.zones, z) {
			zones = append(zones, providers.Zone{ID: r.Name, DNSName: z})
		}
	}
	return zones, nil
}

// Records implements providers.Provider. An authoritative record not yet created, or on its way
// out, holds nothing.
func (h *hostProvider) Records(ctx context.Context, z providers.Zone) (providers.View, error) {
	r, err := h.record(ctx, z)
	if err != nil {
		return providers.View{}, err
	}
	var eps []*v1alpha1.Endpoint
	if r != nil && r.DeletionTimestamp == nil {
		for _, ep := range r.Spec.Endpoints {
			if ep != nil {
				eps = append(eps, ep.DeepCopy())
			}
		}
	}
	return providers.View{Endpoints: eps, State: &providers.ObjectWrites{}}, nil
}

// Apply implements providers.Provider. The batch is checked as strictly as every backend checks it,
// against the zone's name: the ownership TXT of the root host is not under the root host. The
// authoritative record is created by the batch that first writes to it, written at the version it
// was read at, and deleted at that version by the batch that empties it.
func (h *hostProvider) Apply(ctx context.Context, z providers.Zone, state providers.State, changes *providers.Changes) error {
	r, err := h.record(ctx, z)
	if err != nil {
		return err
	}
	if r != nil && r.DeletionTimestamp != nil {
		// The record controller releases it in a moment; then it is created again.
		return providers.Errorf(providers.StaleView, "authoritative record %s/%s is being deleted", h.namespace, z.ID)
	}
	var current []*v1alpha1.Endpoint
	if r != nil {
		current = r.Spec.Endpoints
	}
	endpoints, err := providers.ApplyChanges(z.DNSName, current, changes)
	if err != nil || changes.Empty() {
		return err
	}
	writes := providers.ObjectWritesOf(state)
	where := fmt.Sprintf("authoritative record %s/%s", h.namespace, z.ID)
	switch {
	case r == nil && len(endpoints) == 0:
		return nil
	case r == nil:
		root, ok := rootOf(z, changes)
		if !ok {
			return providers.Errorf(providers.Permanent, "%s: no name of the batch is under the root host the record is named for", where)
		}
		r = &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Namespace: h.namespace, Name: z.ID, Labels: h.labels(root, z.DNSName)},
			Spec: v1alpha1.DNSRecordSpec{RootHost: root, ProviderRef: &v1alpha1.ProviderRef{Name: h.secret},
				Endpoints: endpoints},
		}
		if err := h.client.Create(ctx, r); err != nil {
			return classify(err, "creating "+where)
		}
		writes.Created(r)
	case len(endpoints) == 0:
		rv := r.ResourceVersion
		if err := h.client.Delete(ctx, r, client.Preconditions{ResourceVersion: &rv}); err != nil {
			return classify(err, "deleting "+where)
		}
		writes.Deleted(r)
	default:
		rv := r.ResourceVersion
		patch := client.MergeFromWithOptions(r.DeepCopy(), client.MergeFromWithOptimisticLock{})
		r.Spec.Endpoints = endpoints
		// A record Kuadrant's dns-operator created carries only the authoritative labels until its
		// own pass; one an earlier version of this controller created has no providerRef. Both are
		// completed here, so the record controller reconciles them as it does those it creates.
		for k, v := range h.labels(r.Spec.RootHost, z.DNSName) {
			if _, ok := r.Labels[k]; !ok {
				if r.Labels == nil {
					r.Labels = map[string]string{}
				}
				r.Labels[k] = v
			}
		}
		if r.Spec.ProviderRef == nil {
			r.Spec.ProviderRef = &v1alpha1.ProviderRef{Name: h.secret}
		}
		if err := h.client.Patch(ctx, r, patch); err != nil {
			return classify(err, "writing "+where)
		}
		writes.Updated(r, rv)
	}
	return nil
}

// AwaitPropagation implements providers.Provider: it returns once the client the records are read
// with (the manager's cache, which the embedded DNS server serves from too) shows the writes.
func (h *hostProvider) AwaitPropagation(ctx context.Context, _ providers.Zone, state providers.State) error {
	return providers.ObjectWritesOf(state).Await(ctx, h.client, func() client.Object { return &v1alpha1.DNSRecord{} })
}

// AdjustEndpoints implements providers.Provider. Endpoints are stored as given, as Kuadrant's
// endpoint backend stores them: what the DNS server cannot route is reported on the authoritative
// record (CheckEndpoints), not refused here.
func (h *hostProvider) AdjustEndpoints(endpoints []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error) {
	out := make([]*v1alpha1.Endpoint, len(endpoints))
	for i, ep := range endpoints {
		out[i] = ep.DeepCopy()
	}
	return out, nil
}

// record reads the authoritative record of a zone: nil when there is none yet.
func (h *hostProvider) record(ctx context.Context, z providers.Zone) (*v1alpha1.DNSRecord, error) {
	if !slices.Contains(h.zones, z.DNSName) {
		return nil, providers.Errorf(providers.Permanent, "zone %s is not in the provider secret's %s", z.DNSName, v1alpha1.CoreDNSZonesKey)
	}
	r := &v1alpha1.DNSRecord{}
	err := h.client.Get(ctx, client.ObjectKey{Namespace: h.namespace, Name: z.ID}, r)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, classify(err, fmt.Sprintf("reading authoritative record %s/%s", h.namespace, z.ID))
	case r.Labels[v1alpha1.AuthoritativeRecordLabel] != "true":
		return nil, providers.Errorf(providers.Permanent, "DNSRecord %s/%s is not an authoritative record: it lacks the label %s=true",
			h.namespace, z.ID, v1alpha1.AuthoritativeRecordLabel)
	}
	return r, nil
}

// labels are the labels of the authoritative record of a root host in a zone: those DNS servers and
// Kuadrant's tools select it by, and the provider label its own pass sets.
func (h *hostProvider) labels(root, zoneName string) map[string]string {
	l := RecordLabels(root, zoneName)
	l[v1alpha1.ProviderNameLabel] = ProviderName
	return l
}

// rootOf finds the root host an authoritative record is named for among the names of a batch and
// their parents in the zone (the name is a hash of the root host, and every name of a record is
// under its root host).
func rootOf(z providers.Zone, changes *providers.Changes) (string, bool) {
	zoneName := v1alpha1.NormalizeName(z.DNSName)
	for _, ep := range changes.Create {
		name := strings.TrimPrefix(candidateRoot(ep), v1alpha1.WildcardPrefix)
		for {
			if RecordName(name) == z.ID {
				return name, true
			}
			dot := strings.Index(name, ".")
			if name == zoneName || dot < 0 {
				break
			}
			name = name[dot+1:]
		}
	}
	return "", false
}
