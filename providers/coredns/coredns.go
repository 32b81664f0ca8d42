// Package coredns is the kuadrant.io/coredns backend: it publishes into zones that a DNS server
// serves from the API server, our embedded one (controllers/dnsserver) or Kuadrant's CoreDNS plugin.
//
// A zone is every authoritative DNSRecord of the Secret's namespace labelled with its name: one record
// per root host, named authoritative-record-<hash8(rootHost)>, holding the endpoints and ownership
// TXTs every contributor published under that root host (DESIGN 4b). That is the shape Kuadrant's
// dns-operator writes, so either can publish into a zone the other's server reads.
//
// Records publish as Kuadrant's do (providers.HostZones, host.go): through the endpoint backend
// (endpoint.Authoritative, which a delegation primary writes through too), each
// into the authoritative record of its own root host, which is that record's zone (status.zoneID is
// its name); the authoritative record is then a record of this backend, labelled coredns and checked
// for what the server can route. Provider itself reads and writes a coredns zone whole, for tools
// that work on zones (kubectl dns): the provider contract knows zones and names, not the contributing
// records, so the root host of a change is worked out from its name: the existing authoritative
// record that covers it, else the shortest name of the batch that covers it (a loadbalanced tree H,
// klb.H, eu.klb.H, ... lands in one record rooted at H, as Kuadrant puts it).
//
// Each authoritative record is written with the resourceVersion it was read at, so a concurrent
// writer makes the batch fail as StaleView and the engine re-plans. A batch is atomic per
// authoritative record; a whole-zone batch spanning several may stop part way, which a re-read and
// re-plan repairs.
package coredns

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/geo"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/endpoint"
)

// ProviderName is the value of the kuadrant.io/dns-provider-name label for this backend.
const ProviderName = "coredns"

// RecordName is the name of the authoritative record of a root host.
func RecordName(rootHost string) string { return endpoint.RecordName(rootHost) }

// RecordLabels are the labels of the authoritative record of a root host in a zone: the zone label
// is the one DNS servers select a zone's records by.
func RecordLabels(rootHost, zone string) map[string]string {
	l := endpoint.AuthoritativeLabels(rootHost)
	l[v1alpha1.CoreDNSZoneNameLabel] = zone
	return l
}

// Provider publishes into the authoritative records of one namespace.
type Provider struct {
	client    client.Client
	namespace string
	zones     []string
	// secret names the provider Secret: the providerRef of the authoritative records created.
	secret string
	host   *endpoint.Authoritative
}

var _ providers.Provider = (*Provider)(nil)

// New is the providers.Constructor of kuadrant.io/coredns Secrets. It uses env.Client and
// env.Namespace, where the Secret and its authoritative records live.
func New(_ context.Context, secret *corev1.Secret, env providers.Env) (providers.Backend, error) {
	opts, err := ParseOptions(secret)
	if err != nil {
		return providers.Backend{}, err
	}
	if env.Client == nil || env.Namespace == "" {
		return providers.Backend{}, fmt.Errorf("provider secret %s/%s: the coredns backend needs a client and a namespace",
			secret.Namespace, secret.Name)
	}
	p := &Provider{client: env.Client, namespace: env.Namespace, zones: opts.Zones, secret: secret.Name,
		host: &endpoint.Authoritative{Client: env.Client, Namespace: env.Namespace, Secret: secret.Name, InZones: opts.Zones, Labels: hostLabels}}
	return providers.Backend{Zones: p, Hosts: p}, nil
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return ProviderName }

// Capabilities implements providers.Provider. The DNS server routes geo and weighted sets itself,
// and a zone apex is just another name of an authoritative record.
func (p *Provider) Capabilities() providers.Capabilities {
	return providers.Capabilities{ApexRecords: true}
}

// Zones implements providers.Provider: the Secret's ZONES, each its own ID.
func (p *Provider) Zones(context.Context) ([]providers.Zone, error) {
	return p.zoneList(), nil
}

// Records implements providers.Provider: the union of the zone's authoritative records.
func (p *Provider) Records(ctx context.Context, zone providers.Zone) (providers.View, error) {
	records, err := p.records(ctx, zone)
	if err != nil {
		return providers.View{}, err
	}
	var eps []*v1alpha1.Endpoint
	for _, r := range records {
		for _, ep := range r.Spec.Endpoints {
			if ep != nil {
				eps = append(eps, ep.DeepCopy())
			}
		}
	}
	return providers.View{Endpoints: eps, State: &providers.ObjectWrites{}}, nil
}

// Apply implements providers.Provider. The batch is first checked against the whole zone, as strictly
// as every backend checks it, requirements included; then each change goes to the authoritative
// record that covers its name, each written at the version it was read at.
func (p *Provider) Apply(ctx context.Context, zone providers.Zone, state providers.State, changes *providers.Changes) error {
	records, err := p.records(ctx, zone)
	if err != nil {
		return err
	}
	var all []*v1alpha1.Endpoint
	for _, r := range records {
		all = append(all, r.Spec.Endpoints...)
	}
	if _, err := providers.ApplyChanges(zone.DNSName, all, changes); err != nil || changes.Empty() {
		return err
	}

	batches, created := route(zone.DNSName, records, changes)
	for _, r := range created {
		r.Namespace = p.namespace
		r.Labels[v1alpha1.ProviderNameLabel] = ProviderName
		r.Spec.ProviderRef = &v1alpha1.ProviderRef{Name: p.secret}
	}
	names := make([]string, 0, len(batches))
	for name := range batches {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b := batches[name]
		// Checked against the zone's name, not the root host: the ownership TXT of the root host is
		// not under it, and the zone-wide check above already held every name to the zone.
		endpoints, err := providers.ApplyChanges(zone.DNSName, b.record.Spec.Endpoints, b.changes)
		if err != nil {
			return err
		}
		if err := p.write(ctx, b.record, endpoints, providers.ObjectWritesOf(state)); err != nil {
			return err
		}
	}
	return nil
}

// AwaitPropagation implements providers.Provider: it returns once the client the records are read
// with shows the batches' writes. That client is the manager's cache, which the embedded DNS server
// serves from too.
func (p *Provider) AwaitPropagation(ctx context.Context, _ providers.Zone, state providers.State) error {
	return providers.ObjectWritesOf(state).Await(ctx, p.client, func() client.Object { return &v1alpha1.DNSRecord{} })
}

// write stores an authoritative record's new endpoints: creating it, updating it at the version it
// was read at, or deleting it (at that version) when it holds nothing. writes notes what was written.
func (p *Provider) write(ctx context.Context, r *v1alpha1.DNSRecord, endpoints []*v1alpha1.Endpoint, writes *providers.ObjectWrites) error {
	where := fmt.Sprintf("authoritative record %s/%s", p.namespace, r.Name)
	switch rv := r.ResourceVersion; {
	case rv == "":
		r.Spec.Endpoints = endpoints
		if err := p.client.Create(ctx, r); err != nil {
			return endpoint.ClassifyWrite(err, "creating "+where)
		}
		writes.Created(r)
	case len(endpoints) == 0:
		if err := p.client.Delete(ctx, r, client.Preconditions{ResourceVersion: &rv}); err != nil {
			return endpoint.ClassifyWrite(err, "deleting "+where)
		}
		writes.Deleted(r)
	default:
		patch := client.MergeFromWithOptions(r.DeepCopy(), client.MergeFromWithOptimisticLock{})
		r.Spec.Endpoints = endpoints
		if err := p.client.Patch(ctx, r, patch); err != nil {
			return endpoint.ClassifyWrite(err, "writing "+where)
		}
		writes.Updated(r, rv)
	}
	return nil
}

// AdjustEndpoints implements providers.Provider. Endpoints are stored as given; geo codes and weights
// are checked first, with Kuadrant's messages, since the server could not route an unknown code.
func (p *Provider) AdjustEndpoints(endpoints []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error) {
	if err := geo.ValidateEndpoints(endpoints); err != nil {
		return nil, providers.NewError(providers.Permanent, err)
	}
	out := make([]*v1alpha1.Endpoint, len(endpoints))
	for i, ep := range endpoints {
		out[i] = ep.DeepCopy()
	}
	return out, nil
}

// records lists the authoritative records of a zone, sorted by name.
func (p *Provider) records(ctx context.Context, zone providers.Zone) ([]*v1alpha1.DNSRecord, error) {
	if !slices.Contains(p.zones, zone.DNSName) {
		return nil, providers.Errorf(providers.Permanent, "zone %s is not in the provider secret's %s", zone.DNSName, v1alpha1.CoreDNSZonesKey)
	}
	var list v1alpha1.DNSRecordList
	if err := p.client.List(ctx, &list, client.InNamespace(p.namespace), client.MatchingLabels{
		v1alpha1.AuthoritativeRecordLabel: "true", v1alpha1.CoreDNSZoneNameLabel: zone.DNSName,
	}); err != nil {
		return nil, endpoint.ClassifyWrite(err, fmt.Sprintf("listing authoritative records in namespace %s", p.namespace))
	}
	records := make([]*v1alpha1.DNSRecord, 0, len(list.Items))
	for i := range list.Items {
		// A record on its way out is no longer part of the zone a server serves.
		if list.Items[i].DeletionTimestamp == nil {
			records = append(records, &list.Items[i])
		}
	}
	sort.Slice(records, func(i, j int) bool { return records[i].Name < records[j].Name })
	return records, nil
}

// batch is the part of a batch that goes to one authoritative record.
type batch struct {
	record  *v1alpha1.DNSRecord
	changes *providers.Changes
}

// route splits a batch by authoritative record. Deletions and updates go to the record that holds the
// set; creations to the most specific existing record that covers the name, else to a new record
// rooted at the shortest name of the batch's uncovered creations that covers it. It returns the
// batches by record name and the records it made up, which have no namespace yet.
func route(zone string, records []*v1alpha1.DNSRecord, changes *providers.Changes) (map[string]*batch, []*v1alpha1.DNSRecord) {
	batches := map[string]*batch{}
	batchOf := func(r *v1alpha1.DNSRecord) *providers.Changes {
		b, ok := batches[r.Name]
		if !ok {
			b = &batch{record: r, changes: &providers.Changes{}}
			batches[r.Name] = b
		}
		return b.changes
	}
	holder := func(ep *v1alpha1.Endpoint) *v1alpha1.DNSRecord {
		for _, r := range records {
			for _, have := range r.Spec.Endpoints {
				if have != nil && have.Key() == ep.Key() {
					return r
				}
			}
		}
		return nil
	}
	// The zone-wide check passed, so every set deleted or updated is held by some record.
	for _, ep := range changes.Delete {
		c := batchOf(holder(ep))
		c.Delete = append(c.Delete, ep)
	}
	for i, old := range changes.UpdateOld {
		c := batchOf(holder(old))
		c.UpdateOld = append(c.UpdateOld, old)
		c.UpdateNew = append(c.UpdateNew, changes.UpdateNew[i])
	}

	var uncovered []*v1alpha1.Endpoint
	for _, ep := range changes.Create {
		if r := coveringRecord(records, ep); r != nil {
			c := batchOf(r)
			c.Create = append(c.Create, ep)
		} else {
			uncovered = append(uncovered, ep)
		}
	}
	roots := newRoots(uncovered)
	created := make([]*v1alpha1.DNSRecord, 0, len(roots))
	byRoot := map[string]*v1alpha1.DNSRecord{}
	for _, root := range roots {
		r := &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: RecordName(root), Labels: RecordLabels(root, zone)},
			Spec:       v1alpha1.DNSRecordSpec{RootHost: root},
		}
		byRoot[root] = r
		created = append(created, r)
	}
	for _, ep := range uncovered {
		for _, root := range roots {
			if covers(root, ep) {
				c := batchOf(byRoot[root])
				c.Create = append(c.Create, ep)
				break
			}
		}
	}
	return batches, created
}

// coveringRecord is the existing record with the longest root host that covers ep: when records for
// app.example.com and www.app.example.com both exist, www.app.example.com's names go to the latter,
// as they do in Kuadrant, which keeps one record per contributing root host.
func coveringRecord(records []*v1alpha1.DNSRecord, ep *v1alpha1.Endpoint) *v1alpha1.DNSRecord {
	var best *v1alpha1.DNSRecord
	for _, r := range records {
		root := v1alpha1.NormalizeName(r.Spec.RootHost)
		if covers(root, ep) && (best == nil || len(root) > len(v1alpha1.NormalizeName(best.Spec.RootHost))) {
			best = r
		}
	}
	return best
}

// newRoots returns the root hosts of the records that uncovered creations need: each creation's
// candidate (its name, or for an ownership TXT the name it describes) unless another candidate
// covers it. Every creation is then covered by one of the roots, sorted.
func newRoots(eps []*v1alpha1.Endpoint) []string {
	candidates := map[string]bool{}
	for _, ep := range eps {
		candidates[endpoint.CandidateRoot(ep)] = true
	}
	var roots []string
	for c := range candidates {
		covered := false
		for other := range candidates {
			if other != c && coversName(other, c) {
				covered = true
				break
			}
		}
		if !covered {
			roots = append(roots, c)
		}
	}
	sort.Strings(roots)
	return roots
}

// covers reports whether an authoritative record rooted at root may hold ep, by the rule the
// DNSRecord API enforces: the root host, a name under it (under D for *.D), or an ownership TXT of it.
func covers(root string, ep *v1alpha1.Endpoint) bool {
	return coversName(root, v1alpha1.NormalizeName(ep.DNSName)) || (endpoint.DescribedName(ep) == root && root != "")
}

func coversName(root, name string) bool {
	return name == root || strings.HasSuffix(name, "."+strings.TrimPrefix(root, v1alpha1.WildcardPrefix))
}
