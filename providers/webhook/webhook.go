// Package webhook is the kuadrant.io/external-dns-webhook backend: a client of external-dns's webhook
// provider protocol, so that every webhook provider external-dns users run (Infoblox, PowerDNS,
// Hetzner, IONOS, UniFi, ... each in its own process, usually a sidecar) is a zone backend here.
//
// The protocol (external-dns provider/webhook, content type
// application/external.dns.webhook+json;version=1) has four calls: `GET /` negotiates and answers
// the provider's domain filter, `GET /records` answers every record the provider holds as one flat
// list, `POST /records` applies external-dns's plan.Changes {create, updateOld, updateNew, delete},
// and `POST /adjustendpoints` rewrites endpoints into what the provider stores.
//
// Zones. The protocol has no zones, only the domain filter, so each domain the filter includes is a
// zone (the ZONES key lists them instead when the filter names none, each checked to lie inside the
// filter). The filter is what the provider says it serves; a zone taken from anywhere else could lead
// the engine to write where the provider does not answer. A zone's view is the records at or under
// its name that the filter matches and that no deeper listed zone holds; a batch writing a name the
// filter does not match (an excluded subtree) is refused whole. The filter is negotiated again on
// every Zones, Records and Apply, because a provider restarted with other flags serves other names.
//
// Writes. The protocol has no preconditions (no ETag, no If-Match) and its reference server answers
// every failed apply with 500, so a stale plan cannot be told from a broken server by the answer.
// Apply therefore reads the provider's records right before each POST and checks the batch against
// them with providers.ApplyChanges (values of what it deletes and updates, nothing where it creates,
// the sets it requires, CNAME rules): a stale plan fails as StaleView before anything is sent. It
// then sends, for what it deletes and updates, the records as the provider holds them (their spelling
// and target order), since providers match those exactly. What remains is the window of one round
// trip between that read and the POST, which the engine's owner leases keep to one writer per name.
//
// Routing. The protocol carries an endpoint's setIdentifier and providerSpecific properties as they
// are, but no webhook provider reads Kuadrant's weight and geo-code properties: weighted and geo sets
// would reach such a provider as plain sets, one branch of a tree answering for all of it. So the
// backend declares Capabilities.NoRoutingPolicies (the record controller publishes a load-balanced
// tree as the round robin of its healthy leaves) and refuses any routed set that reaches it anyway,
// in AdjustEndpoints and Apply. See docs/providers/webhook.md.
//
// Errors. Answers 5xx, timeouts and refused connections are retried (MaxAttempts per call, with
// backoff) and then Transient; 3xx and 4xx, a wrong content type and a body that is not the
// protocol's JSON are Permanent. Messages hold the request and the status, never the URL (its user
// info or query may be credentials), a port or a time.
//
// Why our own client. external-dns's provider/webhook client would bring its module into the
// controller's build: it needs Go 1.27 at v0.23.0, raises a dozen of our dependencies at v0.22.0,
// and the test dependencies of its packages are not all served, so `go mod tidy` fails. Its client
// also retries only the negotiation, reports no error kinds we could use, and registers its own
// metrics. The protocol is four JSON calls whose shapes our Endpoint already has, so this package
// speaks it itself, and its tests run it against external-dns's own server (test/externaldns).
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// ProviderName is the value of the kuadrant.io/dns-provider-name label for this backend.
const ProviderName = "webhook"

// Provider is one webhook provider, reached at the URL of one Secret.
type Provider struct {
	opts   Options
	client *http.Client
}

var _ providers.Provider = (*Provider)(nil)

// New is the constructor of kuadrant.io/external-dns-webhook Secrets. It does not call the
// provider: a sidecar may start after us, and Zones reports an unreachable one as Transient.
func New(_ context.Context, secret *corev1.Secret, _ providers.Env) (providers.Backend, error) {
	opts, err := ParseOptions(secret)
	if err != nil {
		return providers.Backend{}, err
	}
	p := NewWithOptions(opts)
	return providers.Backend{Zones: p, ZoneScope: p.ZoneScope()}, nil
}

// NewWithOptions returns a provider for opts.
func NewWithOptions(opts Options) *Provider {
	opts = opts.withDefaults()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	return &Provider{
		opts: opts,
		client: &http.Client{
			Transport: providers.InstrumentTransport(ProviderName, transport),
			// A redirect is an answer of its own (3xx, Permanent): following it would send the
			// records, or the changes, wherever the server points.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// ZoneScope names where Zones looks, for the condition of a record whose host is in none of them.
func (p *Provider) ZoneScope() string {
	if len(p.opts.Zones) > 0 {
		return "zones of key " + v1alpha1.WebhookZonesKey
	}
	return "the domain filter of the webhook provider at key " + v1alpha1.WebhookProviderURLKey
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return ProviderName }

// Capabilities implements providers.Provider.
func (p *Provider) Capabilities() providers.Capabilities {
	return providers.Capabilities{ApexRecords: true, MaxChangesPerBatch: p.opts.BatchSize, NoRoutingPolicies: true}
}

// Zones implements providers.Provider: the zones of the negotiated domain filter.
func (p *Provider) Zones(ctx context.Context) ([]providers.Zone, error) {
	names, _, err := p.zoneNames(ctx)
	if err != nil {
		return nil, err
	}
	zones := make([]providers.Zone, len(names))
	for i, name := range names {
		zones[i] = providers.Zone{ID: name, DNSName: name}
	}
	return zones, nil
}

// zoneNames negotiates the domain filter and returns the zones and the filter.
func (p *Provider) zoneNames(ctx context.Context) ([]string, DomainFilter, error) {
	filter, err := p.negotiate(ctx)
	if err != nil {
		return nil, DomainFilter{}, err
	}
	names, err := zones(filter, p.opts.Zones, p.opts.Secret)
	if err != nil {
		return nil, DomainFilter{}, providers.NewError(providers.Permanent, err)
	}
	return names, filter, nil
}

// Records implements providers.Provider.
func (p *Provider) Records(ctx context.Context, zone providers.Zone) (providers.View, error) {
	names, filter, err := p.zoneNames(ctx)
	if err != nil {
		return providers.View{}, err
	}
	if err := p.listed(zone, names); err != nil {
		return providers.View{}, err
	}
	all, err := p.records(ctx)
	if err != nil {
		return providers.View{}, err
	}
	eps := inZone(all, zone.DNSName, names, filter)
	v1alpha1.SortEndpoints(eps)
	return providers.View{Endpoints: eps}, nil
}

func (p *Provider) listed(zone providers.Zone, names []string) error {
	if !slices.Contains(names, v1alpha1.NormalizeName(zone.DNSName)) {
		return providers.Errorf(providers.Permanent, "provider secret %s: zone %s is not in the webhook provider's domain filter",
			p.opts.Secret, zone.DNSName)
	}
	return nil
}

// inZone keeps the records of one zone: at or under its name, matched by the filter, and not at or
// under a deeper zone of names (those are that zone's).
func inZone(all []*v1alpha1.Endpoint, zoneName string, names []string, filter DomainFilter) []*v1alpha1.Endpoint {
	zoneName = v1alpha1.NormalizeName(zoneName)
	var out []*v1alpha1.Endpoint
	for _, ep := range all {
		if ep == nil {
			continue
		}
		name := v1alpha1.NormalizeName(ep.DNSName)
		if !atOrUnder(name, zoneName) || !filter.Match(name) {
			continue
		}
		deeper := slices.ContainsFunc(names, func(z string) bool {
			return len(z) > len(zoneName) && atOrUnder(z, zoneName) && atOrUnder(name, z)
		})
		if !deeper {
			out = append(out, ep)
		}
	}
	return out
}

func atOrUnder(name, zone string) bool {
	return name == zone || strings.HasSuffix(name, "."+zone)
}

// Apply implements providers.Provider. Each attempt negotiates the filter, reads the provider's
// records, checks the batch against them and posts it; see the package comment.
func (p *Provider) Apply(ctx context.Context, zone providers.Zone, _ providers.State, changes *providers.Changes) error {
	if changes == nil || (changes.Empty() && len(changes.Require) == 0) {
		return nil
	}
	if p.opts.BatchSize > 0 && changes.Len() > p.opts.BatchSize {
		return providers.Errorf(providers.Permanent, "provider secret %s: batch of %d changes exceeds the limit of %d in key %s",
			p.opts.Secret, changes.Len(), p.opts.BatchSize, v1alpha1.WebhookProviderBatchSizeKey)
	}
	if ep := providers.RoutedSet(changes.Create, changes.UpdateNew); ep != nil {
		return p.routed(ep)
	}
	return p.retry(ctx, "apply to zone "+zone.DNSName, func(ctx context.Context) error {
		return p.applyOnce(ctx, zone, changes)
	})
}

func (p *Provider) applyOnce(ctx context.Context, zone providers.Zone, changes *providers.Changes) error {
	var filter DomainFilter
	if err := p.attempt(ctx, http.MethodGet, pathNegotiate, nil, &filter); err != nil {
		return fmt.Errorf("GET %s: %w", pathNegotiate, err)
	}
	names, err := zones(filter, p.opts.Zones, p.opts.Secret)
	if err != nil {
		return providers.NewError(providers.Permanent, err)
	}
	if err := p.listed(zone, names); err != nil {
		return err
	}
	for _, ep := range slices.Concat(changes.Create, changes.UpdateNew, changes.UpdateOld, changes.Delete) {
		if ep != nil && !filter.Match(ep.DNSName) {
			return providers.Errorf(providers.Permanent, "provider secret %s: %s is outside the webhook provider's domain filter",
				p.opts.Secret, ep.DNSName)
		}
	}
	var all []*v1alpha1.Endpoint
	if err := p.attempt(ctx, http.MethodGet, pathRecords, nil, &all); err != nil {
		return fmt.Errorf("GET %s: %w", pathRecords, err)
	}
	held := inZone(all, zone.DNSName, names, filter)
	if _, err := providers.ApplyChanges(zone.DNSName, held, changes); err != nil {
		return err
	}
	if changes.Empty() {
		return nil
	}
	body, err := json.Marshal(asHeld(held, changes))
	if err != nil {
		return providers.Errorf(providers.Permanent, "provider secret %s: cannot encode the batch for the webhook provider: %v", p.opts.Secret, err)
	}
	if err := p.attempt(ctx, http.MethodPost, pathRecords, body, nil); err != nil {
		return fmt.Errorf("POST %s: %w", pathRecords, err)
	}
	return nil
}

// asHeld is the body of POST /records for a batch checked against held: what it deletes and the old
// values of what it updates as the provider holds them, and the new values under the provider's
// spelling of the name, since providers find records by exact name and values.
func asHeld(held []*v1alpha1.Endpoint, c *providers.Changes) changes {
	byKey := make(map[v1alpha1.EndpointKey]*v1alpha1.Endpoint, len(held))
	for _, ep := range held {
		byKey[ep.Key()] = ep
	}
	stored := func(ep *v1alpha1.Endpoint) *v1alpha1.Endpoint {
		if h, ok := byKey[ep.Key()]; ok {
			return h
		}
		return ep
	}
	// A set deleted and created again in one batch (valid here: deletions apply first) is sent as
	// an update: external-dns's plans never hold one key twice, and its providers apply creations
	// before deletions or refuse the second sight of a key.
	recreated := map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}
	for _, ep := range c.Create {
		recreated[ep.Key()] = ep
	}
	var body changes
	for _, ep := range c.Delete {
		if again, ok := recreated[ep.Key()]; ok {
			h := stored(ep)
			updated := again.DeepCopy()
			updated.DNSName = h.DNSName
			body.UpdateOld, body.UpdateNew = append(body.UpdateOld, h), append(body.UpdateNew, updated)
			delete(recreated, ep.Key())
			continue
		}
		body.Delete = append(body.Delete, stored(ep))
	}
	for _, ep := range c.Create {
		if _, ok := recreated[ep.Key()]; ok {
			body.Create = append(body.Create, ep)
		}
	}
	for i, old := range c.UpdateOld {
		h := stored(old)
		body.UpdateOld = append(body.UpdateOld, h)
		updated := c.UpdateNew[i].DeepCopy()
		updated.DNSName = h.DNSName
		body.UpdateNew = append(body.UpdateNew, updated)
	}
	return body
}

// AwaitPropagation implements providers.Provider. The protocol has no notion of propagation: a
// provider answers POST /records once it applied the changes.
func (p *Provider) AwaitPropagation(context.Context, providers.Zone, providers.State) error {
	return nil
}

// AdjustEndpoints implements providers.Provider by the provider's POST /adjustendpoints. A provider
// may drop or add endpoints there; an endpoint we asked for that comes back missing is one it will
// not store, which is refused (Permanent) rather than left out of the plan in silence.
func (p *Provider) AdjustEndpoints(endpoints []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error) {
	if len(endpoints) == 0 {
		return nil, nil
	}
	if ep := providers.RoutedSet(endpoints); ep != nil {
		return nil, p.routed(ep)
	}
	// The contract gives no context; one call is bounded by the attempts and their timeout.
	adjusted, err := p.adjust(context.Background(), endpoints)
	if err != nil {
		return nil, err
	}
	keys := make(map[v1alpha1.EndpointKey]bool, len(adjusted))
	for _, ep := range adjusted {
		if ep != nil {
			keys[ep.Key()] = true
		}
	}
	for _, ep := range endpoints {
		if !keys[ep.Key()] {
			return nil, providers.Errorf(providers.Permanent, "provider secret %s: the webhook provider's adjustendpoints dropped %s, which it will not store",
				p.opts.Secret, ep)
		}
	}
	return slices.DeleteFunc(adjusted, func(ep *v1alpha1.Endpoint) bool { return ep == nil }), nil
}

// ErrNoRouting is the error of a weighted or geo record set: webhook providers do not read
// Kuadrant's weight and geo-code, so they would serve the set as a plain one.
var ErrNoRouting = errors.New("a webhook provider answers every client alike and holds no weighted or geo record sets")

// routed is the Permanent error of a routed set that reached the backend.
func (p *Provider) routed(ep *v1alpha1.Endpoint) error {
	return providers.NewError(providers.Permanent, fmt.Errorf("provider secret %s: %w: %s (set %q) is a weighted or geo record set",
		p.opts.Secret, ErrNoRouting, strings.TrimSuffix(ep.DNSName, "."), ep.SetIdentifier))
}
