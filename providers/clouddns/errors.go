package clouddns

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"google.golang.org/api/googleapi"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// callError keeps what a failed call was doing, for a message that names it without quoting the
// request.
type callError struct {
	what, project string
	err           error
}

func (e *callError) Error() string { return e.err.Error() }

func (e *callError) Unwrap() error { return e.err }

// rateReasons are the 403 reasons Cloud DNS gives for rate limits and quotas: retried, unlike other
// 403s.
var rateReasons = []string{"rateLimitExceeded", "userRateLimitExceeded", "quotaExceeded"}

// apiError is the Google API error in err, if any, and its first reason.
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

// retryable reports whether a failed call may succeed when sent again: no answer, 429, 5xx, or a
// rate limit.
func retryable(err error) bool {
	gerr, reason := apiError(err)
	if gerr == nil {
		// Timeouts, resets and dropped connections.
		return true
	}
	return gerr.Code == http.StatusTooManyRequests || gerr.Code >= 500 ||
		(gerr.Code == http.StatusForbidden && slices.Contains(rateReasons, reason))
}

// staleView reports whether a Change failed because the zone is not as the view read it.
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
