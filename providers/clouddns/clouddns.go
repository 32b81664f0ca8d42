// Package clouddns is the kuadrant.io/gcp backend: Google Cloud DNS through google.golang.org/api/dns/v1.
//
// Cloud DNS holds one record set per name and type, so the endpoints that share a name and type
// (weighted or geo sets, told apart by set identifier) are folded into one record set with a routing
// policy: a WRR item per weighted endpoint, a geo item (a Google Cloud region) per geo endpoint. Cloud
// DNS items carry no set identifier, so each folded set has a companion TXT record set
// ("_dnspolicy-sets-...") listing its items' set identifiers in order; Records hides companions and
// unfolds each item back into the endpoint AdjustEndpoints produced. Without a companion (a set
// written by another tool) an item's identifier is its first target (WRR) or its region (geo), the
// identifiers Kuadrant's builder uses.
//
// Apply turns one batch into one atomic Change: the affected record sets as last read are deleted and
// their new folded versions added. Cloud DNS refuses a deletion that does not match the zone exactly
// (412), which is how a stale view is detected. The client never retries; this package retries 429,
// 5xx and transport failures a bounded number of times with backoff, and resolves a retried Change
// whose first attempt may have applied by reading the zone back.
package clouddns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"
	corev1 "k8s.io/api/core/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/geo"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// ProviderName is the value of the kuadrant.io/dns-provider-name label for this backend.
const ProviderName = "google"

// MaxChangesPerBatch keeps a Change within Cloud DNS's 1,000 additions and 1,000 deletions: one
// endpoint change rewrites at most one record set and its companion (two deletions, two additions).
const MaxChangesPerBatch = 500

// Cloud DNS's default quotas ("Quotas and limits"): bytes of rrdata in one Change (additions and
// deletions together) and rrdatas in one record set. Going over either is 403 quotaExceeded, which
// no retry fixes.
const (
	maxRrdataBytesPerChange = 100000
	maxRrdatasPerSet        = 100
)

// defaultTTL is what Kuadrant publishes when an endpoint has no TTL.
const defaultTTL = 300

// companionPrefix starts the name of the TXT record sets that hold set identifiers.
const companionPrefix = "_dnspolicy-sets-"

// region matches Google Cloud region names (europe-west1, us-central1, northamerica-south1, ...).
var region = regexp.MustCompile(`^(africa|asia|australia|europe|me|northamerica|southamerica|us)-[a-z]+[0-9]+$`)

// retry bounds the retries of one API call.
type retry struct {
	attempts    int
	base, max   time.Duration
	callTimeout time.Duration
}

var defaultRetry = retry{attempts: 5, base: 200 * time.Millisecond, max: 5 * time.Second, callTimeout: 30 * time.Second}

// Provider is Cloud DNS in one project, with one Secret's credentials.
type Provider struct {
	svc     *dns.Service
	project string
	secret  string
	retry   retry
}

// state is the State of a view of one zone: its record sets as read and written since, which Apply
// deletes exactly, so a stale view fails with 412 instead of overwriting someone else's change, and
// the changes not yet done (served) when applied.
type state struct {
	mu      sync.Mutex
	sets    map[setKey]*dns.ResourceRecordSet
	pending []string
}

var _ providers.Provider = (*Provider)(nil)

type setKey struct{ name, typ string }

// New is the constructor of kuadrant.io/gcp Secrets.
func New(ctx context.Context, secret *corev1.Secret, _ providers.Env) (providers.Backend, error) {
	opts, err := ParseOptions(secret)
	if err != nil {
		return providers.Backend{}, err
	}
	p, err := NewWithOptions(ctx, opts)
	if err != nil {
		return providers.Backend{}, err
	}
	return providers.Backend{Zones: p, ZoneScope: p.ZoneScope()}, nil
}

// NewWithOptions builds a provider from parsed options.
func NewWithOptions(ctx context.Context, opts Options) (*Provider, error) {
	var clientOpts []option.ClientOption
	if opts.Endpoint != "" {
		clientOpts = append(clientOpts, option.WithEndpoint(opts.Endpoint), option.WithoutAuthentication())
	} else {
		clientOpts = append(clientOpts, option.WithAuthCredentialsJSON(option.ServiceAccount, opts.CredentialsJSON))
	}
	// The SDK's own transport (with the credentials) over ours, counted in Kuadrant's http_client_*
	// metrics; an explicit HTTP client makes the SDK skip building one.
	transport, err := htransport.NewTransport(ctx, providers.InstrumentTransport(ProviderName, nil), clientOpts...)
	if err != nil {
		return nil, providers.Errorf(providers.Permanent, "Cloud DNS client for project %s could not be built from the service-account key", opts.Project)
	}
	clientOpts = append(clientOpts, option.WithHTTPClient(&http.Client{Transport: transport}))
	svc, err := dns.NewService(ctx, clientOpts...)
	if err != nil {
		// The message may quote the key; say only what failed.
		return nil, providers.Errorf(providers.Permanent, "Cloud DNS client for project %s could not be built from the service-account key", opts.Project)
	}
	return &Provider{svc: svc, project: opts.Project, secret: opts.Secret, retry: defaultRetry}, nil
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return ProviderName }

// Capabilities implements providers.Provider.
// BatchFits counts the rrdata bytes the batch's own endpoints add and delete (a required set both),
// with their companions' items: a folded set also rewrites the items of siblings the batch does not
// name, which Apply counts exactly before sending.
func (p *Provider) Capabilities() providers.Capabilities {
	return providers.Capabilities{ApexRecords: true, MaxChangesPerBatch: MaxChangesPerBatch,
		BatchFits: func(c *providers.Changes) bool { return batchBytes(c) <= maxRrdataBytesPerChange }}
}

// batchBytes estimates the rrdata bytes of the Change a batch becomes.
func batchBytes(c *providers.Changes) int {
	n := 0
	for _, ep := range slices.Concat(c.Create, c.UpdateNew, c.UpdateOld, c.Delete, c.Require, c.Require) {
		if ep == nil {
			continue
		}
		for _, d := range rrdatas(ep.RecordType, ep.Targets) {
			n += len(d)
		}
		if ep.SetIdentifier != "" {
			n += len(strconv.Quote("000=" + ep.SetIdentifier)) // its item in the companion
		}
	}
	return n
}

// changeBytes is the rrdata size of a Change as Cloud DNS counts it against its quota.
func changeBytes(c *dns.Change) int {
	n := 0
	for _, rs := range slices.Concat(c.Additions, c.Deletions) {
		for _, l := range rrdataLists(rs) {
			for _, d := range l {
				n += len(d)
			}
		}
	}
	return n
}

// rrdataLists are a set's rrdatas and those of each routing item.
func rrdataLists(rs *dns.ResourceRecordSet) [][]string {
	lists := [][]string{rs.Rrdatas}
	if rp := rs.RoutingPolicy; rp != nil {
		if rp.Wrr != nil {
			for _, it := range rp.Wrr.Items {
				lists = append(lists, it.Rrdatas)
			}
		}
		if rp.Geo != nil {
			for _, it := range rp.Geo.Items {
				lists = append(lists, it.Rrdatas)
			}
		}
	}
	return lists
}

// Zones implements providers.Provider.
func (p *Provider) Zones(ctx context.Context) ([]providers.Zone, error) {
	var zones []providers.Zone
	token := ""
	for {
		var resp *dns.ManagedZonesListResponse
		err := p.do(ctx, "list managed zones", func(cctx context.Context) error {
			var err error
			resp, err = p.svc.ManagedZones.List(p.project).PageToken(token).Context(cctx).Do()
			return err
		})
		if err != nil {
			return nil, p.classify(err, false, true)
		}
		for _, z := range resp.ManagedZones {
			// Peering zones hold no records of their own.
			if z.PeeringConfig != nil {
				continue
			}
			zones = append(zones, providers.Zone{ID: z.Name, DNSName: v1alpha1.NormalizeName(z.DnsName)})
		}
		if token = resp.NextPageToken; token == "" {
			break
		}
	}
	sort.Slice(zones, func(i, j int) bool { return zones[i].DNSName < zones[j].DNSName })
	return zones, nil
}

// Records implements providers.Provider.
func (p *Provider) Records(ctx context.Context, zone providers.Zone) (providers.View, error) {
	sets, err := p.read(ctx, zone)
	if err != nil {
		return providers.View{}, err
	}
	eps := unfold(sets)
	v1alpha1.SortEndpoints(eps)
	return providers.View{Endpoints: eps, State: &state{sets: sets}}, nil
}

// read lists a zone's record sets.
func (p *Provider) read(ctx context.Context, zone providers.Zone) (map[setKey]*dns.ResourceRecordSet, error) {
	sets := map[setKey]*dns.ResourceRecordSet{}
	token := ""
	for {
		var resp *dns.ResourceRecordSetsListResponse
		err := p.do(ctx, "list record sets of zone "+zone.DNSName, func(cctx context.Context) error {
			var err error
			resp, err = p.svc.ResourceRecordSets.List(p.project, zone.ID).PageToken(token).Context(cctx).Do()
			return err
		})
		if err != nil {
			return nil, p.classify(err, false, false)
		}
		for _, rs := range resp.Rrsets {
			sets[keyOf(rs)] = rs
		}
		if token = resp.NextPageToken; token == "" {
			break
		}
	}
	return sets, nil
}

// Apply implements providers.Provider. st is the State of the view the batch was planned from
// (nil: the zone is read first).
func (p *Provider) Apply(ctx context.Context, zone providers.Zone, st providers.State, changes *providers.Changes) error {
	if changes.Empty() {
		return nil
	}
	if changes.Len() > MaxChangesPerBatch {
		return providers.Errorf(providers.Permanent, "batch of %d changes exceeds the limit of %d per batch", changes.Len(), MaxChangesPerBatch)
	}
	s, ok := st.(*state)
	if !ok || s == nil {
		sets, err := p.read(ctx, zone)
		if err != nil {
			return err
		}
		s = &state{sets: sets}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Validate the batch against the view the plan was made from, with the rules every backend
	// shares: a stale plan is a StaleView before anything is sent.
	next, err := providers.ApplyChanges(zone.DNSName, unfoldAffected(s.sets, changes), changes)
	if err != nil {
		return err
	}
	change, want, err := buildChange(zone, s.sets, next, changes)
	if err != nil {
		return err
	}
	if len(change.Additions) == 0 && len(change.Deletions) == 0 {
		return nil
	}
	if n := changeBytes(change); n > maxRrdataBytesPerChange {
		return providers.Errorf(providers.Permanent, "the change to zone %s holds %d bytes of rrdata; Cloud DNS takes %d per change",
			zone.DNSName, n, maxRrdataBytesPerChange)
	}

	var created *dns.Change
	uncertain := false
	err = p.do(ctx, "change zone "+zone.DNSName, func(cctx context.Context) error {
		var err error
		created, err = p.svc.Changes.Create(p.project, zone.ID, change).Context(cctx).Do()
		if err != nil && retryable(err) {
			// The change may have applied before the failure reached us.
			uncertain = true
		}
		return err
	})
	if err != nil {
		if uncertain && staleView(err) && p.landed(ctx, zone, want) {
			remember(s.sets, change)
			return nil
		}
		return p.classify(err, true, false)
	}
	remember(s.sets, change)
	if created != nil && created.Status == "pending" {
		s.pending = append(s.pending, created.Id)
	}
	return nil
}

// landed reads the zone back and reports whether the affected record sets hold what the change
// wrote: a retried change that failed as stale had then already applied.
func (p *Provider) landed(ctx context.Context, zone providers.Zone, want map[setKey]*dns.ResourceRecordSet) bool {
	view, err := p.read(ctx, zone)
	if err != nil {
		return false
	}
	for k, rs := range want {
		cur, ok := view[k]
		if (rs == nil) != !ok || (rs != nil && canonical(rs) != canonical(cur)) {
			return false
		}
	}
	return true
}

// remember keeps the view's record sets current with a change that applied.
func remember(sets map[setKey]*dns.ResourceRecordSet, change *dns.Change) {
	for _, d := range change.Deletions {
		delete(sets, keyOf(d))
	}
	for _, a := range change.Additions {
		sets[keyOf(a)] = a
	}
}

// AwaitPropagation implements providers.Provider: it polls the changes applied with the view's state
// a few times. The record sets are already replaced when changes.create answers; "done" means Cloud
// DNS's name servers serve them, which takes moments, so the wait is bounded rather than an error.
func (p *Provider) AwaitPropagation(ctx context.Context, zone providers.Zone, st providers.State) error {
	s, ok := st.(*state)
	if !ok || s == nil {
		return nil
	}
	s.mu.Lock()
	ids := s.pending
	s.pending = nil
	s.mu.Unlock()
	for _, id := range ids {
		for i := 0; i < 10; i++ {
			select {
			case <-ctx.Done():
				return providers.NewError(providers.Transient, ctx.Err())
			case <-time.After(time.Duration(i+1) * 50 * time.Millisecond):
			}
			var c *dns.Change
			err := p.do(ctx, "read change of zone "+zone.DNSName, func(cctx context.Context) error {
				var err error
				c, err = p.svc.Changes.Get(p.project, zone.ID, id).Context(cctx).Do()
				return err
			})
			if err != nil || c.Status != "pending" {
				break // applied; an unreadable status is no reason to fail what landed
			}
		}
	}
	return nil
}

// buildChange folds the affected names and types of next into record sets and returns the Change
// that replaces their current versions, and what each affected set should hold afterwards (nil: none).
func buildChange(zone providers.Zone, view map[setKey]*dns.ResourceRecordSet, next []*v1alpha1.Endpoint, changes *providers.Changes) (*dns.Change, map[setKey]*dns.ResourceRecordSet, error) {
	affected := map[setKey]bool{}
	for _, list := range [][]*v1alpha1.Endpoint{changes.Create, changes.UpdateNew, changes.Delete} {
		for _, ep := range list {
			affected[setKey{v1alpha1.NormalizeName(ep.DNSName), ep.RecordType}] = true
		}
	}
	// A required set is deleted and added back unchanged: the deletion fails with 412 unless the
	// set is exactly as required, which is Cloud DNS's only precondition.
	required := map[setKey]bool{}
	for _, ep := range changes.Require {
		k := setKey{v1alpha1.NormalizeName(ep.DNSName), ep.RecordType}
		required[k], affected[k] = true, true
	}
	byKey := map[setKey][]*v1alpha1.Endpoint{}
	for _, ep := range next {
		k := setKey{v1alpha1.NormalizeName(ep.DNSName), ep.RecordType}
		if affected[k] {
			byKey[k] = append(byKey[k], ep)
		}
	}
	keys := make([]setKey, 0, len(affected))
	for k := range affected {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].name < keys[j].name || (keys[i].name == keys[j].name && keys[i].typ < keys[j].typ)
	})
	change := &dns.Change{}
	want := map[setKey]*dns.ResourceRecordSet{}
	replace := func(k setKey, rs *dns.ResourceRecordSet) {
		old := view[k]
		want[k] = rs
		if old != nil && rs != nil && canonical(old) == canonical(rs) && !required[k] {
			return
		}
		if old != nil {
			change.Deletions = append(change.Deletions, old)
		}
		if rs != nil {
			change.Additions = append(change.Additions, rs)
		}
	}
	for _, k := range keys {
		set, companion, err := fold(zone, k, byKey[k])
		if err != nil {
			return nil, nil, err
		}
		replace(k, set)
		replace(companionKey(zone, k), companion)
	}
	return change, want, nil
}

// fold turns the endpoints of one name and type into one record set and, for a routing policy, the
// companion TXT set that names its items.
func fold(zone providers.Zone, k setKey, eps []*v1alpha1.Endpoint) (*dns.ResourceRecordSet, *dns.ResourceRecordSet, error) {
	if len(eps) == 0 {
		return nil, nil, nil
	}
	sort.Slice(eps, func(i, j int) bool { return eps[i].SetIdentifier < eps[j].SetIdentifier })
	set := &dns.ResourceRecordSet{Name: k.name + ".", Type: k.typ, Ttl: int64(eps[0].RecordTTL)}
	_, weighted := eps[0].GetProviderSpecific(v1alpha1.ProviderSpecificWeight)
	_, located := eps[0].GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
	if !weighted && !located {
		if len(eps) > 1 || eps[0].SetIdentifier != "" {
			return nil, nil, providers.Errorf(providers.Permanent, "%s %s: set identifiers need a weight or a geo-code in Cloud DNS", k.name, k.typ)
		}
		set.Rrdatas = rrdatas(k.typ, eps[0].Targets)
		return set, nil, nil
	}
	policy := &dns.RRSetRoutingPolicy{}
	if weighted {
		policy.Wrr = &dns.RRSetRoutingPolicyWrrPolicy{}
	} else {
		policy.Geo = &dns.RRSetRoutingPolicyGeoPolicy{}
	}
	ids := make([]string, 0, len(eps))
	for i, ep := range eps {
		if int64(ep.RecordTTL) != set.Ttl {
			return nil, nil, providers.Errorf(providers.Permanent, "%s %s: sets with TTLs %d and %d; Cloud DNS holds one TTL per name and type",
				k.name, k.typ, set.Ttl, ep.RecordTTL)
		}
		weight, isWeighted := ep.GetProviderSpecific(v1alpha1.ProviderSpecificWeight)
		location, isGeo := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
		switch {
		case weighted && isWeighted && !isGeo:
			w, err := strconv.ParseFloat(weight, 64)
			if err != nil || w < 0 {
				return nil, nil, providers.Errorf(providers.Permanent, "%s: %v", ep, geo.ErrWeight)
			}
			policy.Wrr.Items = append(policy.Wrr.Items, &dns.RRSetRoutingPolicyWrrPolicyWrrPolicyItem{Weight: w, Rrdatas: rrdatas(k.typ, ep.Targets)})
		case located && isGeo && !isWeighted:
			policy.Geo.Items = append(policy.Geo.Items, &dns.RRSetRoutingPolicyGeoPolicyGeoPolicyItem{Location: location, Rrdatas: rrdatas(k.typ, ep.Targets)})
		default:
			return nil, nil, providers.Errorf(providers.Permanent, "%s %s: Cloud DNS holds one routing policy per name and type, "+
				"so its sets must all be weighted or all be geo", k.name, k.typ)
		}
		ids = append(ids, strconv.Quote(strconv.Itoa(i)+"="+ep.SetIdentifier))
	}
	set.RoutingPolicy = policy
	companion := &dns.ResourceRecordSet{Name: companionKey(zone, k).name + ".", Type: v1alpha1.RecordTypeTXT, Ttl: defaultTTL, Rrdatas: ids}
	return set, companion, nil
}

// unfold turns record sets back into endpoints, one per routing item, hiding SOA and companions.
// unfoldAffected unfolds the record sets at the names a batch touches, with their companions: all a
// batch is checked against, without unfolding the whole zone for every batch.
func unfoldAffected(view map[setKey]*dns.ResourceRecordSet, changes *providers.Changes) []*v1alpha1.Endpoint {
	names := map[string]bool{}
	for _, ep := range slices.Concat(changes.Create, changes.UpdateOld, changes.UpdateNew, changes.Delete, changes.Require) {
		if ep != nil {
			names[v1alpha1.NormalizeName(ep.DNSName)] = true
		}
	}
	part := map[setKey]*dns.ResourceRecordSet{}
	for k, rs := range view {
		if names[k.name] || strings.HasPrefix(k.name, companionPrefix) {
			part[k] = rs
		}
	}
	return unfold(part)
}

func unfold(view map[setKey]*dns.ResourceRecordSet) []*v1alpha1.Endpoint {
	// Companions by their first label, which names the set they belong to (companionKey).
	companions := map[string]*dns.ResourceRecordSet{}
	for k, rs := range view {
		if k.typ == v1alpha1.RecordTypeTXT && strings.HasPrefix(k.name, companionPrefix) {
			label, _, _ := strings.Cut(k.name, ".")
			companions[label] = rs
		}
	}
	var eps []*v1alpha1.Endpoint
	for k, rs := range view {
		if k.typ == "SOA" || strings.HasPrefix(k.name, companionPrefix) {
			continue
		}
		ttl := v1alpha1.TTL(rs.Ttl)
		if rs.RoutingPolicy == nil {
			eps = append(eps, v1alpha1.NewEndpoint(k.name, k.typ, ttl, targets(k.typ, rs.Rrdatas)...))
			continue
		}
		ids := companionIDs(companions[companionLabel(k)])
		id := func(i int, fallback string) string {
			if v, ok := ids[i]; ok {
				return v
			}
			return fallback
		}
		if wrr := rs.RoutingPolicy.Wrr; wrr != nil {
			for i, item := range wrr.Items {
				t := targets(k.typ, item.Rrdatas)
				eps = append(eps, v1alpha1.NewEndpoint(k.name, k.typ, ttl, t...).
					WithSetIdentifier(id(i, first(t))).
					WithProviderSpecific(v1alpha1.ProviderSpecificWeight, strconv.FormatFloat(item.Weight, 'f', -1, 64)))
			}
		}
		if g := rs.RoutingPolicy.Geo; g != nil {
			for i, item := range g.Items {
				eps = append(eps, v1alpha1.NewEndpoint(k.name, k.typ, ttl, targets(k.typ, item.Rrdatas)...).
					WithSetIdentifier(id(i, item.Location)).
					WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, item.Location))
			}
		}
	}
	return eps
}

// companionIDs reads the set identifiers of a folded set's items, by item index, from its
// companion (nil when it has none).
func companionIDs(companion *dns.ResourceRecordSet) map[int]string {
	ids := map[int]string{}
	if companion == nil {
		return ids
	}
	for _, d := range companion.Rrdatas {
		s, err := strconv.Unquote(d)
		if err != nil {
			continue
		}
		i, id, ok := strings.Cut(s, "=")
		n, err := strconv.Atoi(i)
		if ok && err == nil {
			ids[n] = id
		}
	}
	return ids
}

// companionLabel is the first label of the name of k's companion.
func companionLabel(k setKey) string {
	return companionPrefix + strings.ToLower(k.typ) + "-" + hash.Base36(k.name, 12)
}

func companionKey(zone providers.Zone, k setKey) setKey {
	return setKey{companionLabel(k) + "." + zone.DNSName, v1alpha1.RecordTypeTXT}
}

// AdjustEndpoints implements providers.Provider. Names are lower-cased and name targets lose their
// trailing dot, as Cloud DNS returns them; a value given twice is kept once; TTL 0 becomes 300; weights become whole numbers; geo codes
// must be Google Cloud regions. The "*" (default) geo set is dropped, as Kuadrant does: Cloud DNS
// answers a client whose region has no item from the nearest region listed, and has no catch-all.
func (p *Provider) AdjustEndpoints(endpoints []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error) {
	out := make([]*v1alpha1.Endpoint, 0, len(endpoints))
	for _, in := range endpoints {
		ep := in.DeepCopy()
		ep.DNSName = v1alpha1.NormalizeName(ep.DNSName)
		if ep.RecordTTL == 0 {
			ep.RecordTTL = defaultTTL
		}
		if nameTyped(ep.RecordType) {
			for i, t := range ep.Targets {
				ep.Targets[i] = v1alpha1.NormalizeName(t)
			}
		}
		// A record set is a set: a value given twice is one rrdata, which Cloud DNS holds once.
		ep.Targets = uniqueTargets(ep.Targets)
		if len(ep.Targets) > maxRrdatasPerSet {
			return nil, providers.Errorf(providers.Permanent, "%s has %d targets; Cloud DNS holds at most %d per record set",
				ep.DNSName, len(ep.Targets), maxRrdatasPerSet)
		}
		weight, weighted := ep.GetProviderSpecific(v1alpha1.ProviderSpecificWeight)
		code, located := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
		switch {
		case weighted && located:
			return nil, providers.Errorf(providers.Permanent, "%s has both a weight and a geo-code; Cloud DNS routes a set by one of them", ep)
		case weighted:
			if err := geo.ValidateWeight(weight); err != nil {
				return nil, providers.NewError(providers.Permanent, err)
			}
			w, _ := strconv.Atoi(weight)
			ep.SetProviderSpecific(v1alpha1.ProviderSpecificWeight, strconv.Itoa(w))
		case located && code == v1alpha1.WildcardGeo:
			continue
		case located:
			if !region.MatchString(code) {
				return nil, providers.Errorf(providers.Permanent, "geo code %q of %s cannot be expressed in Google Cloud DNS: "+
					"use a Google Cloud region name such as europe-west1 or us-east1", code, ep.DNSName)
			}
		case ep.SetIdentifier != "":
			return nil, providers.Errorf(providers.Permanent, "%s has a set identifier but no weight or geo-code, which Cloud DNS cannot hold", ep)
		}
		if (weighted || located) && ep.RecordType == v1alpha1.RecordTypeNS {
			return nil, providers.Errorf(providers.Permanent, "%s: Cloud DNS has no routing policies for NS record sets", ep)
		}
		out = append(out, ep)
	}
	return out, nil
}

// uniqueTargets drops the repeats of a value, keeping the first.
func uniqueTargets(targets v1alpha1.Targets) v1alpha1.Targets {
	out := make(v1alpha1.Targets, 0, len(targets))
	for _, t := range targets {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// do runs one API call with a deadline, retrying 429, 5xx and transport failures with exponential
// backoff and full jitter, a bounded number of times.
func (p *Provider) do(ctx context.Context, what string, call func(context.Context) error) error {
	var err error
	for attempt := 0; attempt < p.retry.attempts; attempt++ {
		if attempt > 0 {
			backoff := min(p.retry.max, p.retry.base<<(attempt-1))
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(rand.N(backoff) + backoff/2):
			}
		}
		cctx, cancel := context.WithTimeout(ctx, p.retry.callTimeout)
		err = call(cctx)
		cancel()
		if err == nil || ctx.Err() != nil || !retryable(err) {
			break
		}
	}
	if err != nil {
		return &callError{what: what, project: p.project, err: err}
	}
	return nil
}

type callError struct {
	what, project string
	err           error
}

func (e *callError) Error() string { return e.err.Error() }
func (e *callError) Unwrap() error { return e.err }

var rateReasons = []string{"rateLimitExceeded", "userRateLimitExceeded", "quotaExceeded"}

func apiError(err error) (*googleapi.Error, string) {
	var gerr *googleapi.Error
	if !errors.As(err, &gerr) {
		return nil, ""
	}
	reason := ""
	if len(gerr.Errors) > 0 {
		reason = gerr.Errors[0].Reason
	}
	return gerr, reason
}

func retryable(err error) bool {
	gerr, reason := apiError(err)
	if gerr == nil {
		// Timeouts, resets and dropped connections.
		return true
	}
	return gerr.Code == http.StatusTooManyRequests || gerr.Code >= 500 ||
		(gerr.Code == http.StatusForbidden && slices.Contains(rateReasons, reason))
}

func staleView(err error) bool {
	gerr, _ := apiError(err)
	return gerr != nil && (gerr.Code == http.StatusPreconditionFailed || gerr.Code == http.StatusConflict || gerr.Code == http.StatusNotFound)
}

// classify is classify, with what the Secret can fix blamed on its key: refused credentials on
// GOOGLE, a project that cannot be listed on PROJECT_ID. The condition then names the Secret and the
// key, never their values.
func (p *Provider) classify(err error, inChange, listingZones bool) error {
	classified := classify(err, inChange)
	gerr, _ := apiError(err)
	if gerr == nil || retryable(err) {
		return classified
	}
	var why string
	switch {
	case gerr.Code == http.StatusUnauthorized || gerr.Code == http.StatusForbidden:
		why = fmt.Sprintf("the service account of key %s may not do this in project %s of key %s",
			v1alpha1.GoogleJSONKey, p.project, v1alpha1.GoogleProjectIDKey)
	case gerr.Code == http.StatusNotFound && listingZones:
		why = fmt.Sprintf("key %s: project %s does not exist or the service account of key %s cannot see it",
			v1alpha1.GoogleProjectIDKey, p.project, v1alpha1.GoogleJSONKey)
	default:
		return classified
	}
	secret := "provider secret"
	if p.secret != "" {
		secret += " " + p.secret
	}
	return providers.Errorf(providers.KindOf(classified), "%s: %s (%v)", secret, why, classified)
}

// classify turns a failed call into a provider error whose message holds the operation, the HTTP
// status and Google's reason, never a request ID or header. In a change, 404/409/412 mean the zone
// moved under the caller.
func classify(err error, inChange bool) error {
	what, project := "call", ""
	var ce *callError
	if errors.As(err, &ce) {
		what, project = ce.what, ce.project
	}
	prefix := fmt.Sprintf("Cloud DNS: %s in project %s", what, project)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return providers.Errorf(providers.Transient, "%s: timed out", prefix)
	}
	gerr, reason := apiError(err)
	if gerr == nil {
		return providers.Errorf(providers.Transient, "%s: the connection failed", prefix)
	}
	status := fmt.Sprintf("%s: HTTP %d %s", prefix, gerr.Code, reason)
	switch {
	case retryable(err):
		return providers.Errorf(providers.Transient, "%s (retries exhausted)", status)
	case inChange && staleView(err):
		return providers.Errorf(providers.StaleView, "%s: the zone changed since it was read", status)
	case gerr.Code == http.StatusUnauthorized || gerr.Code == http.StatusForbidden:
		return providers.Errorf(providers.Permanent, "%s: access denied; the service account needs dns.managedZones.list, "+
			"dns.resourceRecordSets.list, dns.changes.create and dns.changes.get", status)
	case gerr.Code == http.StatusNotFound:
		return providers.Errorf(providers.Permanent, "%s: not found", status)
	default:
		return providers.Errorf(providers.Permanent, "%s: %s", status, gerr.Message)
	}
}

func keyOf(rs *dns.ResourceRecordSet) setKey {
	return setKey{v1alpha1.NormalizeName(rs.Name), rs.Type}
}

// canonical is a record set's value as Cloud DNS compares it for a deletion: without the "kind"
// fields the API adds to what it returns.
func canonical(rs *dns.ResourceRecordSet) string {
	c := *rs
	c.Kind = ""
	c.Name = v1alpha1.NormalizeName(c.Name)
	if rp := c.RoutingPolicy; rp != nil {
		p := &dns.RRSetRoutingPolicy{}
		if rp.Wrr != nil {
			p.Wrr = &dns.RRSetRoutingPolicyWrrPolicy{}
			for _, it := range rp.Wrr.Items {
				p.Wrr.Items = append(p.Wrr.Items, &dns.RRSetRoutingPolicyWrrPolicyWrrPolicyItem{Weight: it.Weight, Rrdatas: it.Rrdatas})
			}
		}
		if rp.Geo != nil {
			p.Geo = &dns.RRSetRoutingPolicyGeoPolicy{}
			for _, it := range rp.Geo.Items {
				p.Geo.Items = append(p.Geo.Items, &dns.RRSetRoutingPolicyGeoPolicyGeoPolicyItem{Location: it.Location, Rrdatas: it.Rrdatas})
			}
		}
		c.RoutingPolicy = p
	}
	b, _ := json.Marshal(c)
	return string(b)
}

func nameTyped(recordType string) bool {
	switch recordType {
	case v1alpha1.RecordTypeCNAME, v1alpha1.RecordTypeNS, "PTR":
		return true
	}
	return false
}

func rrdatas(recordType string, targets []string) []string {
	out := slices.Clone(targets)
	if nameTyped(recordType) {
		for i, t := range out {
			out[i] = v1alpha1.NormalizeName(t) + "."
		}
	}
	return out
}

func targets(recordType string, rrdatas []string) []string {
	out := slices.Clone(rrdatas)
	if nameTyped(recordType) {
		for i, t := range out {
			out[i] = v1alpha1.NormalizeName(t)
		}
	}
	return out
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
