// Package azure is the kuadrant.io/azure backend: Azure DNS record sets for plain records, and a
// Traffic Manager profile per weighted or geo name, aliased from the name's record set.
//
// Mapping, per name and type:
//   - a plain A, AAAA, CNAME or TXT set is one Azure DNS record set;
//   - weighted or geo A, AAAA or CNAME sets become one Traffic Manager profile (routing method
//     Weighted or Geographic) with one external endpoint per set: the endpoint's name is the set
//     identifier, its target the set's one target, its weight the set's weight (weight 0 is a
//     disabled endpoint of weight 1: Traffic Manager's weights are 1-1000) or its geo mapping the
//     set's geo code (`*` is WORLD). The record set of that name and type aliases the profile
//     (targetResource) and keeps the TTL;
//   - TXT sets with set identifiers (ownership records of routed sets) are one TXT record set holding
//     the distinct values, with the sets themselves in the record set's metadata, so they read back
//     as written.
//
// Azure DNS has no multi-record transaction. Apply checks the batch against the zone as the provider
// last read or wrote it (listing it only when it has not) with providers.ApplyChanges (so a stale or contradictory batch is refused before any write), and
// then writes each changed record set with an ETag precondition (If-Match, or If-None-Match for a
// new set): a concurrent writer makes the write fail with 412, reported as StaleView, and no update
// is lost. A profile is never edited in place: a changed profile is written under a fresh name and
// swapped in by the ETag-guarded record-set write, then the old one is deleted. Providers built by
// one constructor hold a lock per zone, so readers in this process never see half a batch; readers
// in other processes can, for the few writes a batch takes. They also pace their record-set writes
// to Azure DNS's 200 per minute per zone (pacer.go), and the SDK waits out the Retry-After of a 429
// that comes anyway, as Azure asks clients to.
package azure

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/trafficmanager/armtrafficmanager"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// ProviderName is the value of the kuadrant.io/dns-provider-name label for this backend.
const ProviderName = "azure"

// MaxChangesPerBatch keeps one batch's record-set writes inside Azure DNS's 200 writes per minute
// per zone, so a paced batch waits at most about a minute for the zone's window.
const MaxChangesPerBatch = 100

// Retry policy of the SDK clients: throttling (429) waits out its Retry-After, which Azure DNS sets
// to when the zone's minute lets another write in (up to 60 s, so maxRetryDelay is a little more);
// 408 and 5xx are retried with backoff from retryDelay. Each try has tryTimeout, so a hung request
// cannot hold a zone (Apply holds the zone's lock). After maxRetries the error is Transient and the
// engine's own backoff takes over.
const (
	maxRetries    = 3
	retryDelay    = 200 * time.Millisecond
	maxRetryDelay = 65 * time.Second
	tryTimeout    = 30 * time.Second
)

// retryOptions are the SDK clients' retry options unless WithClientOptions sets its own.
func retryOptions() policy.RetryOptions {
	return policy.RetryOptions{MaxRetries: maxRetries, RetryDelay: retryDelay, MaxRetryDelay: maxRetryDelay, TryTimeout: tryTimeout}
}

// Option configures a constructor.
type Option func(*config)

type config struct {
	clientOptions arm.ClientOptions
	credential    azcore.TokenCredential
	// pacing of record-set writes per zone: at most writeLimit in any writeWindow, on the clock now
	// (nil: real time and sleep).
	writeLimit  int
	writeWindow time.Duration
	now         func() time.Time
	sleep       func(context.Context, time.Duration) error
}

// WithClientOptions sets the SDK clients' options, for example a transport to an emulator. An
// ENDPOINT_URL in the Secret still replaces the endpoint.
func WithClientOptions(o arm.ClientOptions) Option {
	return func(c *config) { c.clientOptions = o }
}

// WithCredential replaces the client-secret credential built from the Secret (tests use a fake).
func WithCredential(cred azcore.TokenCredential) Option {
	return func(c *config) { c.credential = cred }
}

// withPacing replaces the write pacing (limit 0 turns it off) and, for tests, its clock.
func withPacing(limit int, window time.Duration, now func() time.Time, sleep func(context.Context, time.Duration) error) Option {
	return func(c *config) { c.writeLimit, c.writeWindow, c.now, c.sleep = limit, window, now, sleep }
}

// zoneLocks serialise the writers and readers of one zone within this process, and pace the
// writers.
type zoneLocks struct {
	mu    sync.Mutex
	zones map[string]*sync.RWMutex
	pacer *pacer
}

func (l *zoneLocks) get(zoneID string) *sync.RWMutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	m, ok := l.zones[zoneID]
	if !ok {
		m = &sync.RWMutex{}
		l.zones[zoneID] = m
	}
	return m
}

// NewConstructor returns the constructor of kuadrant.io/azure Secrets. Providers it builds share
// one lock and one write pacer per zone.
func NewConstructor(options ...Option) providers.Constructor {
	cfg := config{writeLimit: writesPerWindow, writeWindow: window + windowMargin}
	for _, o := range options {
		o(&cfg)
	}
	locks := &zoneLocks{zones: map[string]*sync.RWMutex{}, pacer: newPacer(cfg.writeLimit, cfg.writeWindow, cfg.now, cfg.sleep)}
	return func(_ context.Context, secret *corev1.Secret, _ providers.Env) (providers.Backend, error) {
		opts, err := ParseOptions(secret)
		if err != nil {
			return providers.Backend{}, err
		}
		p, err := newProvider(opts, cfg, locks, fmt.Sprintf("%s/%s", secret.Namespace, secret.Name))
		if err != nil {
			return providers.Backend{}, err
		}
		return providers.Backend{Zones: p, ZoneScope: p.ZoneScope()}, nil
	}
}

// Provider is one Secret's view of a subscription's resource group.
type Provider struct {
	resourceGroup string
	secretRef     string
	recordSets    *armdns.RecordSetsClient
	zones         *armdns.ZonesClient
	profiles      *armtrafficmanager.ProfilesClient
	locks         *zoneLocks
}

var _ providers.Provider = (*Provider)(nil)

func newProvider(opts Options, cfg config, locks *zoneLocks, secretRef string) (*Provider, error) {
	clientOptions := cfg.clientOptions
	if clientOptions.Retry.MaxRetries == 0 && clientOptions.Retry.RetryDelay == 0 {
		clientOptions.Retry = retryOptions()
	}
	clientOptions.Transport = instrumented(clientOptions.Transport)
	if opts.EndpointURL != "" {
		clientOptions.Cloud = cloud.Configuration{
			ActiveDirectoryAuthorityHost: cloud.AzurePublic.ActiveDirectoryAuthorityHost,
			Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
				cloud.ResourceManager: {Endpoint: opts.EndpointURL, Audience: cloud.AzurePublic.Services[cloud.ResourceManager].Audience},
			},
		}
		clientOptions.InsecureAllowCredentialWithHTTP = strings.HasPrefix(opts.EndpointURL, "http://")
	}
	cred := cfg.credential
	if cred == nil {
		var err error
		cred, err = azidentity.NewClientSecretCredential(opts.TenantID, opts.ClientID, opts.ClientSecret, nil)
		if err != nil {
			return nil, providers.Errorf(providers.Permanent, "provider secret %s: key %s: the tenantId or aadClientId is not valid",
				secretRef, v1alpha1.AzureJSONKey)
		}
	}
	dnsFactory, err := armdns.NewClientFactory(opts.SubscriptionID, cred, &clientOptions)
	if err != nil {
		return nil, providers.Errorf(providers.Permanent, "provider secret %s: cannot build the Azure DNS client", secretRef)
	}
	tmFactory, err := armtrafficmanager.NewClientFactory(opts.SubscriptionID, cred, &clientOptions)
	if err != nil {
		return nil, providers.Errorf(providers.Permanent, "provider secret %s: cannot build the Traffic Manager client", secretRef)
	}
	return &Provider{
		resourceGroup: opts.ResourceGroup,
		secretRef:     secretRef,
		recordSets:    dnsFactory.NewRecordSetsClient(),
		zones:         dnsFactory.NewZonesClient(),
		profiles:      tmFactory.NewProfilesClient(),
		locks:         locks,
	}, nil
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return ProviderName }

// Capabilities implements providers.Provider.
func (p *Provider) Capabilities() providers.Capabilities {
	return providers.Capabilities{ApexRecords: true, MaxChangesPerBatch: MaxChangesPerBatch}
}

// Zones implements providers.Provider: the DNS zones of the Secret's resource group.
func (p *Provider) Zones(ctx context.Context) ([]providers.Zone, error) {
	var zones []providers.Zone
	pager := p.zones.NewListByResourceGroupPager(p.resourceGroup, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, p.zonesError(err)
		}
		for _, z := range page.Value {
			if z == nil || z.ID == nil || z.Name == nil {
				continue
			}
			zones = append(zones, providers.Zone{ID: *z.ID, DNSName: v1alpha1.NormalizeName(*z.Name)})
		}
	}
	return zones, nil
}

// Records implements providers.Provider. The view's State is the read itself: the record sets
// with their ETags, which Apply writes against (If-Match, If-None-Match), so a stale view fails with
// 412 (a stale view, which the engine re-reads for) rather than overwrite anything.
func (p *Provider) Records(ctx context.Context, zone providers.Zone) (providers.View, error) {
	lock := p.locks.get(zone.ID)
	lock.RLock()
	defer lock.RUnlock()
	st, err := p.read(ctx, zone)
	if err != nil {
		return providers.View{}, err
	}
	return providers.View{Endpoints: st.endpoints(), State: st}, nil
}

// read lists a zone's record sets of the types this backend handles and, only when one aliases a
// profile, the resource group's Traffic Manager profiles, and decodes them into endpoints.
func (p *Provider) read(ctx context.Context, zone providers.Zone) (*state, error) {
	rg, zoneName, err := zoneRef(zone)
	if err != nil {
		return nil, err
	}
	st := &state{zoneName: v1alpha1.NormalizeName(zone.DNSName), sets: map[groupKey]*armdns.RecordSet{}, decoded: map[groupKey][]*v1alpha1.Endpoint{}}
	aliases := false
	pager := p.recordSets.NewListAllByDNSZonePager(rg, zoneName, nil)
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, classify("read record sets of zone", zone.DNSName, err)
		}
		for _, rs := range page.Value {
			if rs == nil || rs.Name == nil || rs.Type == nil || rs.Properties == nil {
				continue
			}
			recordType := (*rs.Type)[strings.LastIndex(*rs.Type, "/")+1:]
			if !supportedType(recordType) || *rs.Name == "@" && recordType == v1alpha1.RecordTypeNS {
				// The apex NS set is Azure's own, like the SOA: it can be neither deleted nor owned.
				continue
			}
			name := st.zoneName
			if *rs.Name != "@" {
				name = v1alpha1.NormalizeName(*rs.Name) + "." + st.zoneName
			}
			key := groupKey{name, recordType}
			st.sets[key] = rs
			aliases = aliases || aliasedProfile(rs) != ""
		}
	}
	profiles := map[string]*armtrafficmanager.Profile{}
	if aliases {
		pager := p.profiles.NewListByResourceGroupPager(p.resourceGroup, nil)
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return nil, classify("read Traffic Manager profiles of resource group", p.resourceGroup, err)
			}
			for _, prof := range page.Value {
				if prof != nil && prof.ID != nil {
					profiles[strings.ToLower(*prof.ID)] = prof
				}
			}
		}
	}
	for key, rs := range st.sets {
		eps, err := decodeSet(key, rs, profiles)
		if err != nil {
			return nil, err
		}
		st.decoded[key] = eps
	}
	return st, nil
}

// AwaitPropagation implements providers.Provider: Azure DNS serves a record set once its write
// returns.
func (p *Provider) AwaitPropagation(context.Context, providers.Zone, providers.State) error {
	return nil
}

// Apply implements providers.Provider. view is the State of the view: its read, updated write by write (nil: the
// zone is read first). Sets the batch requires are read again just before the writes and must still
// carry the ETag the view read: Azure has no batch to make a precondition atomic with, so this is as
// close as it gets.
func (p *Provider) Apply(ctx context.Context, zone providers.Zone, view providers.State, changes *providers.Changes) (err error) {
	if changes.Empty() {
		return nil
	}
	if changes.Len() > MaxChangesPerBatch {
		return providers.Errorf(providers.Permanent, "batch of %d changes exceeds the limit of %d per batch", changes.Len(), MaxChangesPerBatch)
	}
	lock := p.locks.get(zone.ID)
	lock.Lock()
	defer lock.Unlock()

	st, ok := view.(*state)
	if !ok || st == nil {
		if st, err = p.read(ctx, zone); err != nil {
			return err
		}
	}
	if err := p.checkRequired(ctx, zone, st, changes.Require); err != nil {
		return err
	}
	for _, ep := range append(append([]*v1alpha1.Endpoint{}, changes.Create...), changes.UpdateNew...) {
		if ep != nil && ep.RecordType == v1alpha1.RecordTypeCNAME && v1alpha1.NormalizeName(ep.DNSName) == v1alpha1.NormalizeName(zone.DNSName) {
			return providers.Errorf(providers.Permanent, "cannot put a CNAME at the apex of zone %s", zone.DNSName)
		}
	}
	current := st.endpoints()
	next, err := providers.ApplyChanges(zone.DNSName, current, changes)
	if err != nil {
		return err
	}
	before, after := groupEndpoints(current), groupEndpoints(next)

	// Encode every changed group before writing anything, so a batch the backend cannot express
	// changes nothing.
	type write struct {
		key groupKey
		rs  encoded
		eps []*v1alpha1.Endpoint
	}
	var writes []write
	var deletes []groupKey
	for key, eps := range after {
		if sameGroup(before[key], eps) {
			continue
		}
		rs, err := encodeGroup(key, eps)
		if err != nil {
			return err
		}
		writes = append(writes, write{key, rs, eps})
	}
	for key := range before {
		if _, ok := after[key]; !ok {
			deletes = append(deletes, key)
		}
	}
	// Azure applies one record set per call, so a batch can stop half-way. The order keeps every
	// record owned at every step: ownership TXTs are written before the records they claim and
	// deleted after them (a record without its TXT would be every owner's "record no owner claims"
	// for good; a TXT without its record is only a claim, which the next pass completes or
	// withdraws). Among the records, deletions come first: a batch that turns an A into a CNAME must
	// remove the A before Azure takes the CNAME.
	isTXT := func(key groupKey) bool { return key.recordType == v1alpha1.RecordTypeTXT }
	for _, w := range writes {
		if isTXT(w.key) {
			if err := p.writeGroup(ctx, zone, st, w.key, w.rs, w.eps); err != nil {
				return err
			}
		}
	}
	for _, key := range deletes {
		if !isTXT(key) {
			if err := p.deleteGroup(ctx, zone, st, key); err != nil {
				return err
			}
		}
	}
	for _, w := range writes {
		if !isTXT(w.key) {
			if err := p.writeGroup(ctx, zone, st, w.key, w.rs, w.eps); err != nil {
				return err
			}
		}
	}
	for _, key := range deletes {
		if isTXT(key) {
			if err := p.deleteGroup(ctx, zone, st, key); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkRequired fails as a stale view when a required set is no longer the one the view read.
func (p *Provider) checkRequired(ctx context.Context, zone providers.Zone, st *state, required []*v1alpha1.Endpoint) error {
	rg, zoneName, err := zoneRef(zone)
	if err != nil {
		return err
	}
	seen := map[groupKey]bool{}
	for _, ep := range required {
		key := groupKey{v1alpha1.NormalizeName(ep.DNSName), ep.RecordType}
		if seen[key] {
			continue
		}
		seen[key] = true
		held := st.sets[key]
		if held == nil {
			return providers.Errorf(providers.StaleView, "required record set %s is not in the zone as read", key)
		}
		got, err := p.recordSets.Get(ctx, rg, zoneName, st.relativeName(key.name), armdns.RecordType(key.recordType), nil)
		var re *azcore.ResponseError
		if errors.As(err, &re) && re.StatusCode == http.StatusNotFound {
			return providers.Errorf(providers.StaleView, "required record set %s is gone", key)
		}
		if err != nil {
			return classify("read record set", key.String(), err)
		}
		if deref(got.Etag) != deref(held.Etag) {
			return providers.Errorf(providers.StaleView, "required record set %s changed since the zone was read", key)
		}
	}
	return nil
}

func (p *Provider) deleteGroup(ctx context.Context, zone providers.Zone, st *state, key groupKey) error {
	current := st.sets[key]
	rg, zoneName, err := zoneRef(zone)
	if err != nil {
		return err
	}
	done, err := p.locks.pacer.reserve(ctx, zone.ID)
	if err != nil {
		return classify("delete record set", key.String(), err)
	}
	_, err = p.recordSets.Delete(ctx, rg, zoneName, st.relativeName(key.name), armdns.RecordType(key.recordType),
		&armdns.RecordSetsClientDeleteOptions{IfMatch: current.Etag})
	done()
	if err != nil {
		return classify("delete record set", key.String(), err)
	}
	delete(st.sets, key)
	delete(st.decoded, key)
	if profile := aliasedProfile(current); profile != "" {
		p.deleteProfile(ctx, profile)
	}
	return nil
}

// writeGroup writes one record set (and its Traffic Manager profile) holding eps, and updates st.
func (p *Provider) writeGroup(ctx context.Context, zone providers.Zone, st *state, key groupKey, rs encoded, eps []*v1alpha1.Endpoint) error {
	rg, zoneName, err := zoneRef(zone)
	if err != nil {
		return err
	}
	// The zone's turn comes before the profile is written: a profile waiting for its record set
	// would be an unused profile should the wait end the batch.
	done, err := p.locks.pacer.reserve(ctx, zone.ID)
	if err != nil {
		return classify("write record set", key.String(), err)
	}
	defer done()
	var newProfile string
	if rs.profile != nil {
		newProfile = profileName(zone, key)
		rs.profile.Properties.DNSConfig.RelativeName = &newProfile
		resp, err := p.profiles.CreateOrUpdate(ctx, p.resourceGroup, newProfile, *rs.profile, nil)
		if err != nil {
			return classify("write Traffic Manager profile of", key.String(), err)
		}
		rs.set.Properties.TargetResource = &armdns.SubResource{ID: resp.ID}
	}
	opts := &armdns.RecordSetsClientCreateOrUpdateOptions{}
	current, exists := st.sets[key]
	if exists {
		opts.IfMatch = current.Etag
	} else {
		opts.IfNoneMatch = ptr("*")
	}
	out, err := p.recordSets.CreateOrUpdate(ctx, rg, zoneName, st.relativeName(key.name), armdns.RecordType(key.recordType), rs.set, opts)
	if err != nil {
		if newProfile != "" {
			p.deleteProfile(ctx, newProfile)
		}
		return classify("write record set", key.String(), err)
	}
	st.sets[key] = &out.RecordSet
	st.decoded[key] = make([]*v1alpha1.Endpoint, len(eps))
	for i, ep := range eps {
		st.decoded[key][i] = ep.DeepCopy()
	}
	if old := aliasedProfile(current); old != "" {
		p.deleteProfile(ctx, old)
	}
	return nil
}

// deleteProfile removes a profile no record set points at any more. A failure leaves an unused
// profile behind, which routes nothing; it does not fail the batch, whose record sets are written.
func (p *Provider) deleteProfile(ctx context.Context, name string) {
	_, _ = p.profiles.Delete(ctx, p.resourceGroup, name, nil)
}

// profileName is unique per write: profiles are replaced, never edited, so a writer that loses the
// ETag race never changed what the zone serves.
func profileName(zone providers.Zone, key groupKey) string {
	return fmt.Sprintf("dnspolicy-%s-%s", shortHash(zone.DNSName+"|"+key.name+"|"+key.recordType, 12),
		strconv.FormatUint(rand.Uint64(), 36))
}

func aliasedProfile(rs *armdns.RecordSet) string {
	if rs == nil || rs.Properties == nil || rs.Properties.TargetResource == nil || rs.Properties.TargetResource.ID == nil {
		return ""
	}
	id, err := arm.ParseResourceID(*rs.Properties.TargetResource.ID)
	if err != nil {
		return ""
	}
	return id.Name
}

func zoneRef(zone providers.Zone) (resourceGroup, name string, err error) {
	id, err := arm.ParseResourceID(zone.ID)
	if err != nil || id.ResourceGroupName == "" {
		return "", "", providers.Errorf(providers.Permanent, "zone ID %q is not an Azure DNS zone ID", zone.ID)
	}
	return id.ResourceGroupName, id.Name, nil
}

func ptr[T any](v T) *T { return &v }

// instrumented counts the SDK's requests through t (nil: the SDK's default, a plain HTTP client) in
// Kuadrant's http_client_* metrics.
func instrumented(t policy.Transporter) policy.Transporter {
	if t == nil {
		return &http.Client{Transport: providers.InstrumentTransport(ProviderName, nil)}
	}
	return transporter{providers.InstrumentTransport(ProviderName, promhttp.RoundTripperFunc(t.Do))}
}

// transporter is a RoundTripper as the SDK's Transporter.
type transporter struct{ http.RoundTripper }

func (t transporter) Do(req *http.Request) (*http.Response, error) { return t.RoundTrip(req) }
