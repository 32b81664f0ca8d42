package route53

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

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
