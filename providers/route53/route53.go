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
	"net/http"
	"regexp"
	"slices"
	"strconv"
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
	"github.com/dnspolicy/dnspolicy-controller/pkg/geo"
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

// AdjustEndpoints implements providers.Provider. Names are lower-cased, a missing TTL becomes 300,
// TXT values are quoted as Route 53 stores them, a value given twice is kept once, and only the
// routing keys Route 53 expresses are kept. An unknown geo code or one Route 53 does not route by, a weight outside 0..255, or a set identifier without exactly one of
// weight and geo-code is a Permanent error.
func (p *Provider) AdjustEndpoints(endpoints []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error) {
	out := make([]*v1alpha1.Endpoint, 0, len(endpoints))
	for _, in := range endpoints {
		ep := in.DeepCopy()
		ep.DNSName = normalizeName(ep.DNSName)
		if ep.RecordTTL == 0 {
			ep.RecordTTL = defaultTTL
		}
		if ep.RecordType == v1alpha1.RecordTypeTXT {
			for i, t := range ep.Targets {
				ep.Targets[i] = quoteTXT(t)
			}
		}
		// A record set is a set: Route 53 refuses a value given twice ("Duplicate Resource Record").
		ep.Targets = uniqueTargets(ep.Targets)
		weight, hasWeight := in.GetProviderSpecific(v1alpha1.ProviderSpecificWeight)
		code, hasGeo := in.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
		ep.ProviderSpecific = nil
		if hasWeight {
			if err := geo.ValidateWeight(weight); err != nil {
				return nil, providers.NewError(providers.Permanent, err)
			}
			if w, _ := strconv.ParseUint(weight, 10, 64); w > 255 {
				return nil, providers.Errorf(providers.Permanent, "weight %s of %s is above 255, the largest Route 53 weight", weight, in)
			}
			ep.SetProviderSpecific(v1alpha1.ProviderSpecificWeight, weight)
		}
		if hasGeo {
			if err := geo.ValidateCode(code); err != nil {
				return nil, providers.NewError(providers.Permanent, err)
			}
			if slices.Contains(unroutedCountries, code) {
				return nil, providers.Errorf(providers.Permanent, "geo code %s of %s is a country Route 53 does not route by", code, in)
			}
			ep.SetProviderSpecific(v1alpha1.ProviderSpecificGeoCode, code)
		}
		switch {
		case hasWeight && hasGeo:
			return nil, providers.Errorf(providers.Permanent, "%s has both a weight and a geo-code; a Route 53 record set has one routing policy", in)
		case (hasWeight || hasGeo) && ep.SetIdentifier == "":
			return nil, providers.Errorf(providers.Permanent, "%s has a routing property but no set identifier", in)
		case ep.SetIdentifier != "" && !hasWeight && !hasGeo:
			return nil, providers.Errorf(providers.Permanent, "%s has a set identifier but neither weight nor geo-code", in)
		case ep.RecordType == v1alpha1.RecordTypeCNAME && len(ep.Targets) > 1:
			return nil, providers.Errorf(providers.Permanent, "%s: a Route 53 CNAME holds one target", in)
		}
		out = append(out, ep)
	}
	return out, nil
}

// unroutedCountries are the ISO 3166 countries Route 53 geolocation does not support (Route 53
// Developer Guide, "Geolocation": Bouvet Island, Christmas Island, Western Sahara, Heard Island and
// McDonald Islands).
var unroutedCountries = []string{"BV", "CX", "EH", "HM"}

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

// changeBatch turns a batch into Route 53 changes: deletions, the old values of updates and the
// required sets as DELETE, then the required sets again, the new values of updates and creations as
// CREATE.
func changeBatch(changes *providers.Changes) ([]types.Change, error) {
	var batch []types.Change
	add := func(action types.ChangeAction, eps []*v1alpha1.Endpoint) error {
		for _, ep := range eps {
			if ep == nil {
				return providers.Errorf(providers.Permanent, "batch holds an empty record set")
			}
			rs, err := toRecordSet(ep)
			if err != nil {
				return err
			}
			batch = append(batch, types.Change{Action: action, ResourceRecordSet: rs})
		}
		return nil
	}
	for _, step := range []struct {
		action types.ChangeAction
		eps    []*v1alpha1.Endpoint
	}{
		{types.ChangeActionDelete, changes.Delete},
		{types.ChangeActionDelete, changes.UpdateOld},
		{types.ChangeActionDelete, changes.Require},
		{types.ChangeActionCreate, changes.Require},
		{types.ChangeActionCreate, changes.UpdateNew},
		{types.ChangeActionCreate, changes.Create},
	} {
		if err := add(step.action, step.eps); err != nil {
			return nil, err
		}
	}
	return batch, nil
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

// withinLimits refuses a call Route 53 would refuse for its size.
func withinLimits(batch []types.Change) error {
	records, chars := 0, 0
	for _, c := range batch {
		for _, r := range c.ResourceRecordSet.ResourceRecords {
			records++
			chars += len(aws.ToString(r.Value))
		}
	}
	if records > maxRecordsPerCall {
		return providers.Errorf(providers.Permanent, "batch holds %d resource records; Route 53 takes %d per call", records, maxRecordsPerCall)
	}
	if chars > maxValueCharsPerCall {
		return providers.Errorf(providers.Permanent, "batch holds %d characters of values; Route 53 takes %d per call", chars, maxValueCharsPerCall)
	}
	return nil
}

// Error codes of credentials Route 53 does not accept, by the Secret key to look at; retrying
// cannot help.
var (
	// unknownKeyCodes: the access key ID is not known (deleted, mistyped, another partition).
	unknownKeyCodes = map[string]bool{"InvalidClientTokenId": true, "UnrecognizedClientException": true}
	// signatureCodes: the secret access key does not belong to the access key ID.
	signatureCodes = map[string]bool{"SignatureDoesNotMatch": true, "InvalidSignatureException": true, "IncompleteSignature": true}
	// deniedCodes: the credentials are valid but expired or not allowed to make the call.
	deniedCodes = map[string]bool{
		"AccessDenied": true, "AccessDeniedException": true, "ExpiredToken": true, "ExpiredTokenException": true,
		"MissingAuthenticationToken": true, "NotAuthorizedException": true,
	}
)

func authCode(code string) bool {
	return unknownKeyCodes[code] || signatureCodes[code] || deniedCodes[code]
}

// classify is classify, with refused credentials blamed on the Secret key to fix: the status
// condition then says which Secret and which key, never their values.
func (p *Provider) classify(op string, err error) error {
	classified := classify(op, err)
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return classified
	}
	var why string
	code := apiErr.ErrorCode()
	switch {
	case unknownKeyCodes[code]:
		why = "key " + v1alpha1.AWSAccessKeyIDKey + " is not an access key ID Route 53 accepts"
	case signatureCodes[code]:
		why = "key " + v1alpha1.AWSSecretAccessKeyKey + " is not the secret of the access key ID in key " + v1alpha1.AWSAccessKeyIDKey
	case deniedCodes[code]:
		why = "the credentials in keys " + v1alpha1.AWSAccessKeyIDKey + " and " + v1alpha1.AWSSecretAccessKeyKey +
			" are expired or not allowed to call " + op + " (the IAM policy needs route53:ListHostedZones, " +
			"route53:ListResourceRecordSets, route53:ChangeResourceRecordSets and route53:GetChange)"
	default:
		return classified
	}
	secret := "provider secret"
	if p.opts.Secret != "" {
		secret += " " + p.opts.Secret
	}
	return providers.Errorf(providers.KindOf(classified), "%s: %s (%v)", secret, why, classified)
}

// classify turns an SDK error into a provider error whose text holds the operation, Route 53's
// error code and message, and nothing that changes per call: no request ID, no host or port.
func classify(op string, err error) error {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code := apiErr.ErrorCode()
		kind := providers.Transient
		switch {
		case authCode(code):
			kind = providers.Permanent
		case code == "NoSuchHostedZone", code == "InvalidInput", code == "InvalidChangeBatch":
			kind = providers.Permanent
		}
		var respErr *awshttp.ResponseError
		if errors.As(err, &respErr) && respErr.HTTPStatusCode() == http.StatusForbidden {
			kind = providers.Permanent
		}
		return providers.Errorf(kind, "route53 %s: %s: %s", op, code, apiErr.ErrorMessage())
	}
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		return providers.Errorf(providers.Transient, "route53 %s: HTTP status %d", op, respErr.HTTPStatusCode())
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return providers.Errorf(providers.Transient, "route53 %s: the call was cancelled or ran out of time", op)
	}
	return providers.Errorf(providers.Transient, "route53 %s: no answer from the API (%s)", op, transportProblem(err))
}

// transportProblem names a failure without an answer in words that do not change per call (the
// SDK's text carries the URL and attempt counts).
func transportProblem(err error) string {
	var timeout interface{ Timeout() bool }
	msg := err.Error()
	switch {
	case errors.As(err, &timeout) && timeout.Timeout():
		return "timed out"
	case strings.Contains(msg, "connection refused"):
		return "connection refused"
	case strings.Contains(msg, "connection reset"), strings.Contains(msg, "EOF"):
		return "connection closed"
	}
	return "connection failed"
}

// attempts records, through the request context, whether any HTTP attempt of one call ended
// without a clear answer: no response, or a 5xx. Such an attempt may have been applied.
type attempts struct {
	mu        sync.Mutex
	ambiguous bool
}

type attemptsKey struct{}

func (a *attempts) wasAmbiguous() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ambiguous
}

// attemptRecorder is the SDK's HTTP client, noting ambiguous attempts for the call that asked.
type attemptRecorder struct {
	inner http.RoundTripper
}

func (c attemptRecorder) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.inner.RoundTrip(req)
	if a, ok := req.Context().Value(attemptsKey{}).(*attempts); ok && (err != nil || resp.StatusCode >= 500) {
		a.mu.Lock()
		a.ambiguous = true
		a.mu.Unlock()
	}
	return resp, err
}

// toRecordSet translates an adjusted endpoint into a Route 53 record set.
func toRecordSet(ep *v1alpha1.Endpoint) (*types.ResourceRecordSet, error) {
	rs := &types.ResourceRecordSet{
		Name: aws.String(ep.DNSName),
		Type: types.RRType(ep.RecordType),
		TTL:  aws.Int64(int64(ep.RecordTTL)),
	}
	for _, t := range ep.Targets {
		rs.ResourceRecords = append(rs.ResourceRecords, types.ResourceRecord{Value: aws.String(t)})
	}
	if ep.SetIdentifier != "" {
		rs.SetIdentifier = aws.String(ep.SetIdentifier)
	}
	if w, ok := ep.GetProviderSpecific(v1alpha1.ProviderSpecificWeight); ok {
		n, err := strconv.ParseInt(w, 10, 64)
		if err != nil {
			return nil, providers.NewError(providers.Permanent, geo.ErrWeight)
		}
		rs.Weight = aws.Int64(n)
	}
	if code, ok := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode); ok {
		if err := geo.ValidateCode(code); err != nil {
			return nil, providers.NewError(providers.Permanent, err)
		}
		rs.GeoLocation = geoLocation(code)
	}
	return rs, nil
}

// geoLocation maps a validated geo code: GEO-XX is a continent, "*" the default location, and any
// other code an ISO 3166 country.
func geoLocation(code string) *types.GeoLocation {
	if continent, ok := strings.CutPrefix(code, geo.ContinentPrefix); ok {
		return &types.GeoLocation{ContinentCode: aws.String(continent)}
	}
	return &types.GeoLocation{CountryCode: aws.String(code)}
}

// toEndpoint translates a Route 53 record set as read into an endpoint.
func toEndpoint(rs types.ResourceRecordSet) *v1alpha1.Endpoint {
	targets := make([]string, len(rs.ResourceRecords))
	for i, r := range rs.ResourceRecords {
		targets[i] = aws.ToString(r.Value)
	}
	ep := v1alpha1.NewEndpoint(normalizeName(aws.ToString(rs.Name)), string(rs.Type), v1alpha1.TTL(aws.ToInt64(rs.TTL)), targets...)
	ep.SetIdentifier = aws.ToString(rs.SetIdentifier)
	if rs.Weight != nil {
		ep.SetProviderSpecific(v1alpha1.ProviderSpecificWeight, strconv.FormatInt(*rs.Weight, 10))
	}
	if g := rs.GeoLocation; g != nil {
		code := aws.ToString(g.CountryCode)
		if g.ContinentCode != nil {
			code = geo.ContinentPrefix + aws.ToString(g.ContinentCode)
		} else if g.SubdivisionCode != nil {
			code += "-" + aws.ToString(g.SubdivisionCode)
		}
		ep.SetProviderSpecific(v1alpha1.ProviderSpecificGeoCode, code)
	}
	return ep
}

// octalEscape is how Route 53 returns characters other than letters, digits, "-" and "_" in names
// ("*" reads back as \052).
var octalEscape = regexp.MustCompile(`\\[0-7]{3}`)

// normalizeName lower-cases a name, drops the trailing dot and undoes Route 53's octal escapes.
func normalizeName(name string) string {
	name = octalEscape.ReplaceAllStringFunc(name, func(esc string) string {
		n, _ := strconv.ParseUint(esc[1:], 8, 8)
		return string(rune(n))
	})
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), "."))
}

// quoteTXT returns a TXT value as Route 53 stores it: one or more quoted character strings. A value
// that already is one (Kuadrant's ownership records are written quoted) is kept as it is, so records
// written by either controller compare equal; any other text is quoted, escaping quotes and
// backslashes, and split into strings of at most 255 characters.
func quoteTXT(v string) string {
	if quotedStrings(v) {
		return v
	}
	var parts []string
	var cur strings.Builder
	n := 0
	flush := func() {
		parts = append(parts, `"`+cur.String()+`"`)
		cur.Reset()
		n = 0
	}
	for _, r := range v {
		if n == 255 {
			flush()
		}
		if r == '"' || r == '\\' {
			cur.WriteByte('\\')
		}
		cur.WriteRune(r)
		n++
	}
	flush()
	return strings.Join(parts, " ")
}

// quotedStrings reports whether v is a sequence of quoted strings of at most 255 characters each,
// separated by single spaces.
func quotedStrings(v string) bool {
	i, count := 0, 0
	for i < len(v) {
		if count > 0 {
			if v[i] != ' ' {
				return false
			}
			i++
		}
		if i >= len(v) || v[i] != '"' {
			return false
		}
		i++
		length := 0
		for ; i < len(v) && v[i] != '"'; i++ {
			if v[i] == '\\' {
				i++
			}
			length++
		}
		if i >= len(v) || length > 255 {
			return false
		}
		i++
		count++
	}
	return count > 0
}
