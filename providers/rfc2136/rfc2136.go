// Package rfc2136 is the kuadrant.io/rfc2136 backend: zones on an authoritative server the platform
// team already runs (BIND, Knot DNS, PowerDNS, or any server that takes RFC 2136 dynamic updates),
// read by zone transfer (AXFR) and written by UPDATE messages, both signed with a TSIG key.
//
// It speaks the protocol through miekg/dns, which the project already uses for its own server,
// rather than wrapping external-dns's rfc2136 provider: that provider reads and writes through
// external-dns's plan and registry (which here are the engine's), sends each change's deletion
// and addition without prerequisites (so a concurrent writer's change is overwritten, not
// detected), and cannot be imported without the rest of external-dns (see TOOLCHAIN.md). Owning
// the messages lets every batch carry the prerequisites that make it safe.
//
// A batch is one UPDATE message to its zone, which the server applies all or nothing (RFC 2136
// section 3.2-3.4), with prerequisites (section 2.4) stating the zone the batch was planned from:
// "RRset exists (value dependent)" for every set it deletes or updates (with its old values) and
// every set it requires, "RRset does not exist" for every set it creates (and for a CNAME at the
// name of a created set of another type, which the server would otherwise ignore silently). A
// concurrent writer's change therefore fails the whole message with NXRRSET or YXRRSET, reported
// as a stale view: the engine reads the zone again and re-plans. The batch is also checked against
// the view it was planned from before it is sent, so a batch a hosted DNS service would refuse is
// refused here too, with the same errors.
//
// RFC 2136 servers answer every client alike: a record set has no weight or geography. The backend
// declares it (Capabilities.NoRoutingPolicies), and the record controller publishes a load-balanced
// tree as the union of its leaves at the host instead (builder.RoundRobin). A weighted or geo set
// (a set identifier, weight or geo-code) that reaches the backend anyway is refused by
// AdjustEndpoints and Apply as a Permanent error naming the record: one branch of a tree published
// as a plain set would answer for all of it.
package rfc2136

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// ProviderName is the value of the kuadrant.io/dns-provider-name label for this backend.
const ProviderName = "rfc2136"

// maxMessage is the largest DNS message over TCP or TLS (a two-byte length prefix); over UDP an
// update is kept to 1,232 bytes, the size that crosses the Internet without fragmenting (DNS flag
// day 2020). tsigRoom is left for the TSIG record the message is signed with.
const (
	maxMessage    = 65535
	maxUDPMessage = 1232
	tsigRoom      = 512
)

// Provider is one server's zones, seen with one Secret's TSIG key.
type Provider struct {
	opts Options
}

// state is the State of a view of one zone: the record sets the transfer read, kept current by
// the batches applied since, against which the next batch is checked before it is sent.
type state struct {
	mu      sync.Mutex
	records []*v1alpha1.Endpoint
}

var _ providers.Provider = (*Provider)(nil)

// New is the constructor of kuadrant.io/rfc2136 Secrets.
func New(_ context.Context, secret *corev1.Secret, _ providers.Env) (providers.Backend, error) {
	opts, err := ParseOptions(secret)
	if err != nil {
		return providers.Backend{}, err
	}
	return providers.Backend{Zones: NewWithOptions(opts)}, nil
}

// NewWithOptions returns the provider of parsed options.
func NewWithOptions(opts Options) *Provider {
	return &Provider{opts: opts.withDefaults()}
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return ProviderName }

// Capabilities implements providers.Provider: a batch is one message, so it must fit one.
func (p *Provider) Capabilities() providers.Capabilities {
	return providers.Capabilities{
		ApexRecords:        true,
		MaxChangesPerBatch: p.opts.BatchChangeSize,
		NoRoutingPolicies:  true,
		BatchFits: func(c *providers.Changes) bool {
			m, err := updateMessage(".", c)
			return err != nil || m.Len() <= p.messageLimit() // a batch that does not build is refused by Apply
		},
	}
}

// messageLimit is the most bytes an unsigned update may take on the Secret's transport.
func (p *Provider) messageLimit() int {
	if p.opts.Transport == TransportUDP {
		return maxUDPMessage - tsigRoom
	}
	return maxMessage - tsigRoom
}

// Zones implements providers.Provider: the zones the Secret lists. An RFC 2136 server has no call
// that lists zones, and the Secret names those its key may write.
func (p *Provider) Zones(context.Context) ([]providers.Zone, error) {
	zones := make([]providers.Zone, len(p.opts.Zones))
	for i, z := range p.opts.Zones {
		zones[i] = providers.Zone{ID: z, DNSName: z}
	}
	return zones, nil
}

// Records implements providers.Provider: one zone transfer.
func (p *Provider) Records(ctx context.Context, zone providers.Zone) (providers.View, error) {
	q := new(dns.Msg)
	q.SetAxfr(dns.Fqdn(zone.DNSName))
	t := &dns.Transfer{DialTimeout: p.opts.Timeout, ReadTimeout: p.opts.Timeout, WriteTimeout: p.opts.Timeout}
	if p.opts.SignedTransfer {
		q.SetTsig(dns.Fqdn(p.opts.KeyName), p.opts.Algorithm, 300, time.Now().Unix())
		t.TsigSecret = map[string]string{dns.Fqdn(p.opts.KeyName): p.opts.Secret}
	}
	if p.opts.Transport == TransportTLS {
		t.TLS = p.opts.TLS
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	envelopes, err := t.In(q, p.opts.Server)
	if err != nil {
		return providers.View{}, p.transferError(zone, err)
	}
	// Closing the connection when the context ends unblocks the reader; it closes the channel.
	stop := context.AfterFunc(ctx, func() { _ = t.Close() })
	defer stop()
	var rrs []dns.RR
	var failed error
	for env := range envelopes {
		if env.Error != nil && failed == nil {
			failed = env.Error
		}
		rrs = append(rrs, env.RR...)
	}
	if ctx.Err() != nil && failed != nil {
		failed = ctx.Err()
	}
	if failed != nil {
		return providers.View{}, p.transferError(zone, failed)
	}
	records := endpointsOf(rrs)
	return providers.View{Endpoints: records, State: &state{records: copyEndpoints(records)}}, nil
}

// Apply implements providers.Provider: one UPDATE message, checked first against the view.
func (p *Provider) Apply(ctx context.Context, zone providers.Zone, s providers.State, changes *providers.Changes) error {
	if changes.Empty() {
		return nil
	}
	if changes.Len() > p.opts.BatchChangeSize {
		return providers.Errorf(providers.Permanent, "batch of %d changes exceeds %s, %d changes per update message",
			changes.Len(), v1alpha1.RFC2136BatchChangeSizeKey, p.opts.BatchChangeSize)
	}
	// The last gate: a weighted or geo set that reached here anyway would be published as a plain
	// set, one branch of a tree answering for all of it.
	if ep := providers.RoutedSet(changes.Create, changes.UpdateNew); ep != nil {
		return providers.NewError(providers.Permanent, fmt.Errorf("%w: %s (set %q) is a weighted or geo record set",
			ErrNoRouting, strings.TrimSuffix(ep.DNSName, "."), ep.SetIdentifier))
	}
	for _, ep := range slices.Concat(changes.Create, changes.UpdateNew) {
		if ep.RecordType == v1alpha1.RecordTypeCNAME && v1alpha1.NormalizeName(ep.DNSName) == zone.DNSName {
			// The apex holds SOA and NS, which a server would keep and ignore the CNAME beside.
			return providers.Errorf(providers.Permanent, "cannot put a CNAME at the apex of zone %s", zone.DNSName)
		}
	}
	st, ok := s.(*state)
	if !ok || st == nil {
		return providers.Errorf(providers.StaleView, "zone %s: the batch was not planned from a read of the zone", zone.DNSName)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	next, err := providers.ApplyChanges(zone.DNSName, st.records, changes)
	if err != nil {
		return err
	}
	m, err := updateMessage(zone.DNSName, changes)
	if err != nil {
		return err
	}
	if m.Len() > p.messageLimit() {
		return providers.Errorf(providers.Permanent, "zone %s: a batch of %d changes does not fit one %s update message",
			zone.DNSName, changes.Len(), p.opts.Transport)
	}
	if err := p.send(ctx, zone, m); err != nil {
		return err
	}
	st.records = next
	return nil
}

// send signs and sends one update and classifies the answer.
func (p *Provider) send(ctx context.Context, zone providers.Zone, m *dns.Msg) error {
	key := dns.Fqdn(p.opts.KeyName)
	m.SetTsig(key, p.opts.Algorithm, 300, time.Now().Unix())
	c := &dns.Client{Net: p.opts.Transport, Timeout: p.opts.Timeout, TsigSecret: map[string]string{key: p.opts.Secret}}
	if p.opts.Transport == TransportTLS {
		c.Net, c.TLSConfig = "tcp-tls", p.opts.TLS
	}
	r, _, err := c.ExchangeContext(ctx, m, p.opts.Server)
	return p.updateError(zone, r, err)
}

// AwaitPropagation implements providers.Provider: the primary serves an update once it answers it.
// (Its secondaries follow by NOTIFY and IXFR, as they do for every other change to the zone.)
func (p *Provider) AwaitPropagation(context.Context, providers.Zone, providers.State) error {
	return nil
}

// AdjustEndpoints implements providers.Provider. Names are lower-cased without the trailing dot, a
// missing TTL becomes 300, values are written as the server will give them back (TXT values as
// quoted strings, names without the trailing dot) and each value kept once (a record set is a set).
// Weighted and geo sets, an unknown record type or a value the type cannot hold are Permanent
// errors naming the record.
func (p *Provider) AdjustEndpoints(endpoints []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error) {
	if ep := providers.RoutedSet(endpoints); ep != nil {
		return nil, providers.NewError(providers.Permanent, fmt.Errorf("%w: %s (set %q) is a weighted or geo record set",
			ErrNoRouting, strings.TrimSuffix(ep.DNSName, "."), ep.SetIdentifier))
	}
	out := make([]*v1alpha1.Endpoint, 0, len(endpoints))
	for _, in := range endpoints {
		ep, err := adjust(in)
		if err != nil {
			return nil, providers.NewError(providers.Permanent, err)
		}
		out = append(out, ep)
	}
	return out, nil
}

// ErrNoRouting is the error of a weighted or geo record set: an RFC 2136 server gives every client
// the same answer.
var ErrNoRouting = errors.New("an RFC 2136 server answers every client alike and holds no weighted or geo record sets")

func copyEndpoints(eps []*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	out := make([]*v1alpha1.Endpoint, len(eps))
	for i, ep := range eps {
		out[i] = ep.DeepCopy()
	}
	return out
}
