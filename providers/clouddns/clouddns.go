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
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	dns "google.golang.org/api/dns/v1"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"
	corev1 "k8s.io/api/core/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
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
