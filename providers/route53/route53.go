// Package route53 is the kuadrant.io/aws backend: Amazon Route 53 through aws-sdk-go-v2.
//
// The provider-neutral routing keys become Route 53 routing policies: weight -> a weighted record
// set (SetIdentifier + Weight), geo-code -> a geolocation record set (an ISO 3166 country as
// CountryCode, GEO-XX as ContinentCode, "*" as the default location CountryCode "*").
//
// A batch is one ChangeResourceRecordSets call, which Route 53 applies all or nothing: deletions and
// the old values of updates as DELETE, then creations and the new values of updates as CREATE, so a
// set that changed under the caller fails the whole batch (reported as a stale view) instead of being
// overwritten. Calls are retried by the SDK's standard retryer on Throttling, PriorRequestNotComplete,
// 5xx and connection errors, with exponential backoff and jitter, a bounded number of times.
//
// A set the batch requires (Changes.Require) is sent as a DELETE and a CREATE of its exact values,
// which changes nothing and fails the whole batch if the set changed: Route 53's only precondition.
//
// Apply returns once Route 53 has accepted a change (PENDING) and notes its ID in the view's State;
// AwaitPropagation, called by the engine once after a cycle's batches, waits until they are INSYNC,
// so Ready still means served by Route 53's name servers, while the batches of a burst go out back to
// back instead of each waiting out the propagation of the one before.
package route53

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// ProviderName is the value of the kuadrant.io/dns-provider-name label for this backend.
const ProviderName = "aws"

// MaxChangesPerBatch is the most changes one batch can hold: Route 53 takes at most 1,000
// ResourceRecord elements and 32,000 characters of values per call (the old and the new values of
// an update both counting, as DELETE and CREATE), and every change has at least one record. The
// engine cuts batches where those limits fall (Capabilities.BatchFits); a batch that still exceeds
// one is refused whole (Permanent): splitting it would lose atomicity.
const MaxChangesPerBatch = maxRecordsPerCall

// Route 53's documented limits per ChangeResourceRecordSets call.
const (
	maxRecordsPerCall    = 1000
	maxValueCharsPerCall = 32000
)

// defaultTTL is what Route 53 record sets get when an endpoint names no TTL (Route 53 requires one).
const defaultTTL = 300

// Provider is Route 53 seen with one Secret's credentials.
type Provider struct {
	client *r53.Client
	opts   Options
}

// state is the State of a view of one zone: the changes applied since it was read that were not
// INSYNC when last seen, oldest first.
type state struct {
	mu      sync.Mutex
	pending []string
}

var _ providers.Provider = (*Provider)(nil)

// New is the constructor of kuadrant.io/aws Secrets.
func New(_ context.Context, secret *corev1.Secret, _ providers.Env) (providers.Backend, error) {
	opts, err := ParseOptions(secret)
	if err != nil {
		return providers.Backend{}, err
	}
	p := NewWithOptions(opts)
	return providers.Backend{Zones: p, ZoneScope: p.ZoneScope()}, nil
}

// NewWithOptions returns a provider for parsed options.
func NewWithOptions(opts Options) *Provider {
	opts = opts.withDefaults()
	clientOpts := r53.Options{
		Region:      opts.Region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(opts.AccessKeyID, opts.SecretAccessKey, "")),
		HTTPClient:  attemptRecorder{providers.InstrumentTransport(ProviderName, promhttp.RoundTripperFunc(awshttp.NewBuildableClient().WithTimeout(opts.AttemptTimeout).Do))},
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = opts.MaxAttempts
			o.MaxBackoff = opts.MaxBackoff
			// The attempts are bounded; a client-side retry quota would only turn a throttled burst
			// into errors that the engine retries from the top, costing more calls.
			o.RateLimiter = ratelimit.None
		}),
	}
	if opts.Endpoint != "" {
		clientOpts.BaseEndpoint = aws.String(opts.Endpoint)
	}
	return &Provider{client: r53.New(clientOpts), opts: opts}
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return ProviderName }

// Capabilities implements providers.Provider.
func (p *Provider) Capabilities() providers.Capabilities {
	return providers.Capabilities{ApexRecords: true, MaxChangesPerBatch: MaxChangesPerBatch,
		BatchFits: func(c *providers.Changes) bool {
			batch, err := changeBatch(c)
			return err != nil || withinLimits(batch) == nil // a batch that cannot be encoded fails in Apply, alone
		}}
}

// Zones implements providers.Provider: every hosted zone the credentials can list, page by page.
func (p *Provider) Zones(ctx context.Context) ([]providers.Zone, error) {
	var zones []providers.Zone
	pages := r53.NewListHostedZonesPaginator(p.client, &r53.ListHostedZonesInput{})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, p.classify("ListHostedZones", err)
		}
		for _, z := range page.HostedZones {
			zones = append(zones, providers.Zone{
				ID:      strings.TrimPrefix(aws.ToString(z.Id), "/hostedzone/"),
				DNSName: normalizeName(aws.ToString(z.Name)),
			})
		}
	}
	return zones, nil
}

// Records implements providers.Provider: every record set of the zone except its SOA and alias sets
// (neither of which the engine writes), page by page.
func (p *Provider) Records(ctx context.Context, zone providers.Zone) (providers.View, error) {
	eps, err := p.records(ctx, zone)
	return providers.View{Endpoints: eps, State: &state{}}, err
}

func (p *Provider) records(ctx context.Context, zone providers.Zone) ([]*v1alpha1.Endpoint, error) {
	var eps []*v1alpha1.Endpoint
	pages := r53.NewListResourceRecordSetsPaginator(p.client, &r53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zone.ID)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, p.classify("ListResourceRecordSets", err)
		}
		for _, rs := range page.ResourceRecordSets {
			if rs.Type == types.RRTypeSoa || rs.AliasTarget != nil {
				continue
			}
			eps = append(eps, toEndpoint(rs))
		}
	}
	v1alpha1.SortEndpoints(eps)
	return eps, nil
}

// Apply implements providers.Provider.
func (p *Provider) Apply(ctx context.Context, zone providers.Zone, st providers.State, changes *providers.Changes) error {
	if changes.Empty() {
		return nil
	}
	if changes.Len() > MaxChangesPerBatch {
		return providers.Errorf(providers.Permanent, "batch of %d changes exceeds the limit of %d per batch", changes.Len(), MaxChangesPerBatch)
	}
	if len(changes.UpdateOld) != len(changes.UpdateNew) {
		return providers.Errorf(providers.Permanent, "batch has %d old and %d new values of updated record sets",
			len(changes.UpdateOld), len(changes.UpdateNew))
	}
	batch, err := changeBatch(changes)
	if err != nil {
		return err
	}
	if err := withinLimits(batch); err != nil {
		return err
	}

	track := &attempts{}
	out, err := p.client.ChangeResourceRecordSets(context.WithValue(ctx, attemptsKey{}, track), &r53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(zone.ID),
		ChangeBatch:  &types.ChangeBatch{Changes: batch},
	})
	if err != nil {
		return p.rejected(ctx, zone, changes, track, err)
	}
	if s, ok := st.(*state); ok && out.ChangeInfo.Status != types.ChangeStatusInsync {
		s.mu.Lock()
		s.pending = append(s.pending, aws.ToString(out.ChangeInfo.Id))
		s.mu.Unlock()
	}
	return nil
}

// AwaitPropagation implements providers.Provider: it waits until the changes applied with the view's
// state are INSYNC, newest first: the newest is waited for, and the older ones, normally INSYNC by
// then, cost one GetChange each. Changes found INSYNC are forgotten; on an error the rest stay
// pending for the next call.
func (p *Provider) AwaitPropagation(ctx context.Context, _ providers.Zone, st providers.State) error {
	s, ok := st.(*state)
	if !ok {
		return nil
	}
	for newest := true; ; newest = false {
		s.mu.Lock()
		ids := slices.Clone(s.pending)
		s.mu.Unlock()
		if len(ids) == 0 {
			return nil
		}
		id, status := ids[len(ids)-1], types.ChangeStatusPending
		if !newest {
			out, err := p.client.GetChange(ctx, &r53.GetChangeInput{Id: aws.String(id)})
			if err != nil {
				return p.classify("GetChange", err)
			}
			status = out.ChangeInfo.Status
		}
		if err := p.awaitInsync(ctx, id, status); err != nil {
			return err
		}
		s.mu.Lock()
		s.pending = slices.DeleteFunc(s.pending, func(x string) bool { return x == id })
		s.mu.Unlock()
	}
}

// rejected classifies a failed ChangeResourceRecordSets. An InvalidChangeBatch after an attempt
// whose outcome is unknown (no answer, or a 5xx) may be the retry of a batch that landed: when the
// zone holds exactly what the batch asked for, the batch is done. Otherwise the zone is compared with
// the batch to tell a stale view (someone else changed the zone) from a batch no zone could take.
func (p *Provider) rejected(ctx context.Context, zone providers.Zone, changes *providers.Changes, track *attempts, err error) error {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidChangeBatch" {
		return p.classify("ChangeResourceRecordSets", err)
	}
	records, readErr := p.records(ctx, zone)
	if readErr != nil {
		// Without the zone the rejection cannot be told from a stale view: retry later.
		return readErr
	}
	if track.wasAmbiguous() && landed(records, changes) {
		return nil
	}
	kind := providers.Permanent
	var local *providers.Error
	if _, localErr := providers.ApplyChanges(zone.DNSName, records, changes); errors.As(localErr, &local) {
		kind = local.Kind
	}
	return providers.Errorf(kind, "route53 rejected the change batch: %s", apiErr.ErrorMessage())
}

// landed reports whether the zone holds the outcome of the batch: nothing it deletes, and every set
// it writes with the values it writes.
func landed(records []*v1alpha1.Endpoint, changes *providers.Changes) bool {
	held := make(map[v1alpha1.EndpointKey]*v1alpha1.Endpoint, len(records))
	for _, ep := range records {
		held[ep.Key()] = ep
	}
	written := map[v1alpha1.EndpointKey]bool{}
	for _, ep := range append(append([]*v1alpha1.Endpoint{}, changes.Create...), changes.UpdateNew...) {
		written[ep.Key()] = true
		if got, ok := held[ep.Key()]; !ok || !got.SameValues(ep) {
			return false
		}
	}
	for _, ep := range changes.Delete {
		if _, ok := held[ep.Key()]; ok && !written[ep.Key()] {
			return false
		}
	}
	return true
}

// awaitInsync polls GetChange until the change is INSYNC, within InsyncTimeout.
func (p *Provider) awaitInsync(ctx context.Context, id string, status types.ChangeStatus) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.InsyncTimeout)
	defer cancel()
	wait := p.opts.InsyncPoll
	for status != types.ChangeStatusInsync {
		select {
		case <-ctx.Done():
			return providers.Errorf(providers.Transient, "route53 change was applied but not INSYNC within %s", p.opts.InsyncTimeout)
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
		out, err := p.client.GetChange(ctx, &r53.GetChangeInput{Id: aws.String(id)})
		if err != nil {
			if ctx.Err() != nil {
				return providers.Errorf(providers.Transient, "route53 change was applied but not INSYNC within %s", p.opts.InsyncTimeout)
			}
			return p.classify("GetChange", err)
		}
		status = out.ChangeInfo.Status
	}
	return nil
}
