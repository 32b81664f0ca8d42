package endpoint

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// RecordNamePrefix starts the name of every authoritative record; hash8 of the root host follows.
const RecordNamePrefix = "authoritative-record-"

// RecordName is the name of the authoritative record of a root host.
func RecordName(rootHost string) string {
	return RecordNamePrefix + hash.Base36(rootHost, 8)
}

// AuthoritativeLabels are the labels every authoritative record of a root host carries (Kuadrant's
// tools and DNS servers select them by these).
func AuthoritativeLabels(rootHost string) map[string]string {
	return map[string]string{
		v1alpha1.AuthoritativeRecordLabel:     "true",
		v1alpha1.AuthoritativeRecordHashLabel: hash.Base36(rootHost, 8),
	}
}

// Authoritative is Kuadrant's endpoint backend over authoritative records: each zone is one
// authoritative record, named by its ID (authoritative-record-<hash8(rootHost)>); the zone's
// DNSName is the zone every name of it is in. The coredns backend writes its records through it
// (a DNS server serves the authoritative records), and a delegation primary writes delegating
// records through it (the authoritative record is then published with the namespace's default
// provider). It holds them as Kuadrant's dns-operator does, so that a Kuadrant primary and ours build
// the same record: ownership TXTs without a TTL (Capabilities), and each record labelled with the
// owners whose TXTs claim it (registry.LabelOwners).
type Authoritative struct {
	Client    client.Client
	Namespace string
	// Secret is the provider Secret, the providerRef of the authoritative records it creates (the
	// record controller reconciles them with it).
	Secret string
	// InZones, when set, are the only zones an authoritative record may be in (coredns: the Secret's
	// ZONES); empty allows any.
	InZones []string
	// Labels are the labels of the authoritative record of a root host in a zone.
	Labels func(rootHost, zone string) map[string]string
}

var _ providers.Provider = (*Authoritative)(nil)

// Name implements providers.Provider: it is Kuadrant's endpoint backend.
func (h *Authoritative) Name() string { return ProviderName }

// Capabilities implements providers.Provider: the DNS server routes geo and weighted sets itself,
// and the root host may be the zone's apex. Ownership TXTs have no TTL, as Kuadrant writes them
// here.
func (h *Authoritative) Capabilities() providers.Capabilities {
	return providers.Capabilities{ApexRecords: true, ClaimsWithoutTTL: true}
}

// Zones implements providers.Provider: the authoritative records of the namespace in the Secret's
// zones.
func (h *Authoritative) Zones(ctx context.Context) ([]providers.Zone, error) {
	var list v1alpha1.DNSRecordList
	if err := h.Client.List(ctx, &list, client.InNamespace(h.Namespace), client.MatchingLabels{v1alpha1.AuthoritativeRecordLabel: "true"}); err != nil {
		return nil, ClassifyWrite(err, fmt.Sprintf("listing authoritative records in namespace %s", h.Namespace))
	}
	var zones []providers.Zone
	for i := range list.Items {
		r := &list.Items[i]
		if r.DeletionTimestamp != nil {
			continue
		}
		if len(h.InZones) == 0 {
			zones = append(zones, providers.Zone{ID: r.Name, DNSName: v1alpha1.NormalizeName(r.Spec.RootHost)})
		} else if z := r.Labels[v1alpha1.CoreDNSZoneNameLabel]; slices.Contains(h.InZones, z) {
			zones = append(zones, providers.Zone{ID: r.Name, DNSName: z})
		}
	}
	return zones, nil
}

// Records implements providers.Provider. An authoritative record not yet created, or on its way
// out, holds nothing.
func (h *Authoritative) Records(ctx context.Context, z providers.Zone) (providers.View, error) {
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
func (h *Authoritative) Apply(ctx context.Context, z providers.Zone, state providers.State, changes *providers.Changes) error {
	r, err := h.record(ctx, z)
	if err != nil {
		return err
	}
	if r != nil && r.DeletionTimestamp != nil {
		// The record controller releases it in a moment; then it is created again.
		return providers.Errorf(providers.StaleView, "authoritative record %s/%s is being deleted", h.Namespace, z.ID)
	}
	var current []*v1alpha1.Endpoint
	if r != nil {
		current = r.Spec.Endpoints
	}
	endpoints, err := providers.ApplyChanges(z.DNSName, current, changes)
	if err != nil || changes.Empty() {
		return err
	}
	// Each record names its claimants in its owner label, as in the authoritative records Kuadrant's
	// dns-operator writes: they are the same record, whichever primary wrote it.
	endpoints = registry.LabelOwners(endpoints)
	writes := providers.ObjectWritesOf(state)
	where := fmt.Sprintf("authoritative record %s/%s", h.Namespace, z.ID)
	switch {
	case r == nil && len(endpoints) == 0:
		return nil
	case r == nil:
		root, ok := rootOf(z, changes)
		if !ok {
			return providers.Errorf(providers.Permanent, "%s: no name of the batch is under the root host the record is named for", where)
		}
		r = &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Namespace: h.Namespace, Name: z.ID, Labels: h.Labels(root, z.DNSName)},
			Spec: v1alpha1.DNSRecordSpec{RootHost: root, ProviderRef: &v1alpha1.ProviderRef{Name: h.Secret},
				Endpoints: endpoints},
		}
		if err := h.Client.Create(ctx, r); err != nil {
			return ClassifyWrite(err, "creating "+where)
		}
		writes.Created(r)
	case len(endpoints) == 0:
		rv := r.ResourceVersion
		if err := h.Client.Delete(ctx, r, client.Preconditions{ResourceVersion: &rv}); err != nil {
			return ClassifyWrite(err, "deleting "+where)
		}
		writes.Deleted(r)
	default:
		rv := r.ResourceVersion
		patch := client.MergeFromWithOptions(r.DeepCopy(), client.MergeFromWithOptimisticLock{})
		r.Spec.Endpoints = endpoints
		// A record Kuadrant's dns-operator created carries only the authoritative labels until its
		// own pass; one an earlier version of this controller created has no providerRef. Both are
		// completed here, so the record controller reconciles them as it does those it creates.
		for k, v := range h.Labels(r.Spec.RootHost, z.DNSName) {
			if _, ok := r.Labels[k]; !ok {
				if r.Labels == nil {
					r.Labels = map[string]string{}
				}
				r.Labels[k] = v
			}
		}
		if r.Spec.ProviderRef == nil {
			r.Spec.ProviderRef = &v1alpha1.ProviderRef{Name: h.Secret}
		}
		if err := h.Client.Patch(ctx, r, patch); err != nil {
			return ClassifyWrite(err, "writing "+where)
		}
		writes.Updated(r, rv)
	}
	return nil
}

// AwaitPropagation implements providers.Provider: it returns once the client the records are read
// with (the manager's cache, which the embedded DNS server serves from too) shows the writes.
func (h *Authoritative) AwaitPropagation(ctx context.Context, _ providers.Zone, state providers.State) error {
	return providers.ObjectWritesOf(state).Await(ctx, h.Client, func() client.Object { return &v1alpha1.DNSRecord{} })
}

// AdjustEndpoints implements providers.Provider. Endpoints are stored as given, as Kuadrant's
// endpoint backend stores them: what the DNS server cannot route is reported on the authoritative
// record (CheckEndpoints), not refused here.
func (h *Authoritative) AdjustEndpoints(endpoints []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error) {
	return copies(endpoints), nil
}

// record reads the authoritative record of a zone: nil when there is none yet.
func (h *Authoritative) record(ctx context.Context, z providers.Zone) (*v1alpha1.DNSRecord, error) {
	if len(h.InZones) > 0 && !slices.Contains(h.InZones, z.DNSName) {
		return nil, providers.Errorf(providers.Permanent, "zone %s is not in the provider secret's %s", z.DNSName, v1alpha1.CoreDNSZonesKey)
	}
	r := &v1alpha1.DNSRecord{}
	err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: z.ID}, r)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, ClassifyWrite(err, fmt.Sprintf("reading authoritative record %s/%s", h.Namespace, z.ID))
	case r.Labels[v1alpha1.AuthoritativeRecordLabel] != "true":
		return nil, providers.Errorf(providers.Permanent, "DNSRecord %s/%s is not an authoritative record: it lacks the label %s=true",
			h.Namespace, z.ID, v1alpha1.AuthoritativeRecordLabel)
	}
	return r, nil
}

// rootOf finds the root host an authoritative record is named for among the names of a batch and
// their parents in the zone (the name is a hash of the root host, and every name of a record is
// under its root host).
func rootOf(z providers.Zone, changes *providers.Changes) (string, bool) {
	zoneName := v1alpha1.NormalizeName(z.DNSName)
	for _, ep := range changes.Create {
		name := strings.TrimPrefix(CandidateRoot(ep), v1alpha1.WildcardPrefix)
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

// ownershipTXTName matches Kuadrant's ownership TXT names: kuadrant-<hash8(owner)>-<type>-<name>,
// where a name starting with "*" is written with "wildcard".
var ownershipTXTName = regexp.MustCompile(`^kuadrant-[0-9a-z]{8}-[a-z]+-(.+)$`)

// DescribedName is the name an ownership TXT describes, or "" when ep is none.
func DescribedName(ep *v1alpha1.Endpoint) string {
	if ep.RecordType != v1alpha1.RecordTypeTXT {
		return ""
	}
	m := ownershipTXTName.FindStringSubmatch(v1alpha1.NormalizeName(ep.DNSName))
	if m == nil {
		return ""
	}
	if rest, ok := strings.CutPrefix(m[1], "wildcard."); ok {
		return v1alpha1.WildcardPrefix + rest
	}
	return m[1]
}

// CandidateRoot is the root host a creation would want on its own: an ownership TXT belongs with the
// name it describes, so a record's TXTs and its sets land in one authoritative record.
func CandidateRoot(ep *v1alpha1.Endpoint) string {
	if d := DescribedName(ep); d != "" {
		return d
	}
	return v1alpha1.NormalizeName(ep.DNSName)
}

// ClassifyWrite gives the API errors of writing authoritative records their kind: a conflict, an
// existing or a vanished record means the zone changed since it was read; what the request itself
// or its permissions cause will not change by retrying; the rest may pass.
func ClassifyWrite(err error, doing string) error {
	kind := providers.Transient
	switch {
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err), apierrors.IsNotFound(err):
		kind = providers.StaleView
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		kind = providers.Permanent
	}
	return providers.NewError(kind, fmt.Errorf("%s: %w", doing, err))
}
