package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// MediaType is the content type of every body of the protocol, and the version we speak: external-dns
// provider/webhook/api MediaTypeFormatAndVersion.
const MediaType = "application/external.dns.webhook+json;version=1"

// The protocol's paths, relative to the provider's URL.
const (
	pathNegotiate       = "/"
	pathRecords         = "/records"
	pathAdjustEndpoints = "/adjustendpoints"
)

// changes is the body of POST /records: external-dns's plan.Changes.
type changes struct {
	Create    []*v1alpha1.Endpoint `json:"create,omitempty"`
	UpdateOld []*v1alpha1.Endpoint `json:"updateOld,omitempty"`
	UpdateNew []*v1alpha1.Endpoint `json:"updateNew,omitempty"`
	Delete    []*v1alpha1.Endpoint `json:"delete,omitempty"`
}

// errContentType: the server answered with another content type than the protocol's; it is not a
// webhook provider of this version, and asking again will not change that.
var errContentType = errors.New("the answer is not of content type " + MediaType + " (is the URL that of an external-dns webhook provider?)")

// errBody: the answer is not the JSON the protocol defines.
var errBody = errors.New("the answer is not the protocol's JSON")

// negotiate asks the provider for its domain filter (GET /), as external-dns does at start.
func (p *Provider) negotiate(ctx context.Context) (DomainFilter, error) {
	var filter DomainFilter
	err := p.call(ctx, http.MethodGet, pathNegotiate, nil, &filter)
	return filter, err
}

// records reads every record the provider holds (GET /records): one list over all its zones.
func (p *Provider) records(ctx context.Context) ([]*v1alpha1.Endpoint, error) {
	var eps []*v1alpha1.Endpoint
	err := p.call(ctx, http.MethodGet, pathRecords, nil, &eps)
	return eps, err
}

// adjust asks the provider to rewrite endpoints into what it stores (POST /adjustendpoints).
func (p *Provider) adjust(ctx context.Context, eps []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error) {
	var out []*v1alpha1.Endpoint
	err := p.call(ctx, http.MethodPost, pathAdjustEndpoints, eps, &out)
	return out, err
}

// call makes one request of the protocol, with up to MaxAttempts attempts while the failure is
// retryable, and decodes the answer into out (nil: none expected). Its error is classified.
func (p *Provider) call(ctx context.Context, method, path string, in, out any) error {
	op := method + " " + path
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return p.classify(op, 1, fmt.Errorf("cannot encode the request: %w", err))
		}
	}
	return p.retry(ctx, op, func(ctx context.Context) error { return p.attempt(ctx, method, path, body, out) })
}

// retry runs fn up to MaxAttempts times while it fails retryably, backing off between attempts, and
// classifies the last error.
func (p *Provider) retry(ctx context.Context, op string, fn func(context.Context) error) error {
	wait := p.opts.Backoff
	var err error
	for attempt := 1; ; attempt++ {
		if err = fn(ctx); err == nil {
			return nil
		}
		var classified *providers.Error
		if errors.As(err, &classified) {
			// Decided by fn (a stale plan, a name outside the filter): final as it is.
			return err
		}
		if !retryable(err) || attempt >= p.opts.MaxAttempts {
			return p.classify(op, attempt, err)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return p.classify(op, attempt, err)
		case <-timer.C:
		}
		wait *= 2
	}
}

// attempt is one HTTP request, bounded by Timeout.
func (p *Provider) attempt(ctx context.Context, method, path string, body []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.opts.URL.JoinPath(path).String(), reader)
	if err != nil {
		// Only a method or URL Go cannot send fails here, and that will not change: no URL in the text.
		return errors.New("cannot build the request")
	}
	req.Header.Set("Accept", MediaType)
	if body != nil {
		req.Header.Set("Content-Type", MediaType)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return transportError(ctx, err)
	}
	defer func() {
		// Drain so the connection is reused; what is left is of no interest.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError{resp.StatusCode}
	}
	if out == nil {
		return nil
	}
	if !isMediaType(resp.Header.Get("Content-Type")) {
		return errContentType
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		if terr := transportError(ctx, err); errors.Is(terr, errTimeout) || errors.Is(terr, io.ErrUnexpectedEOF) {
			return terr
		}
		return errBody
	}
	return nil
}

// isMediaType compares content types as media types (parameters in any order and spacing), where
// external-dns compares the strings: a server that writes `; version=1` is still of the protocol.
func isMediaType(contentType string) bool {
	want, wantParams, _ := mime.ParseMediaType(MediaType)
	got, params, err := mime.ParseMediaType(contentType)
	return err == nil && got == want && params["version"] == wantParams["version"]
}
