package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// statusError is an HTTP answer outside 2xx.
type statusError struct{ code int }

func (e statusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.code, http.StatusText(e.code))
}

// retryable reports whether another attempt of the same request may succeed: the server failed
// (5xx), did not answer in time, or was not there yet (a sidecar starting). A 4xx or 3xx answer
// will be the same next time.
func retryable(err error) bool {
	var status statusError
	if errors.As(err, &status) {
		return status.code >= http.StatusInternalServerError
	}
	return errors.Is(err, errTimeout) || errors.Is(err, errRefused) || errors.Is(err, errUnreachable) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

var (
	errTimeout     = errors.New("timed out")
	errRefused     = errors.New("connection refused")
	errUnreachable = errors.New("cannot reach the webhook provider")
	errCanceled    = errors.New("canceled")
)

// transportError replaces an error of http.Client.Do, whose text holds the URL (user info and query
// may be credentials) and the local port (new on every call), by a stable one.
func transportError(ctx context.Context, err error) error {
	var netErr net.Error
	switch {
	case ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return errCanceled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return errTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return errRefused
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		// The connection closed before a whole answer: the server went away mid-request.
		return io.ErrUnexpectedEOF
	default:
		return errUnreachable
	}
}

// classify makes the error of a call (after its attempts) a provider error: Transient when retrying
// later may help, Permanent otherwise. The text holds the request and what went wrong, never the
// URL, a port, a time or a request ID, so it can stand in a status condition.
func (p *Provider) classify(op string, attempts int, err error) error {
	kind := providers.Permanent
	if retryable(err) || errors.Is(err, errCanceled) {
		kind = providers.Transient
	}
	msg := fmt.Sprintf("provider secret %s: webhook provider: %s: %v", p.opts.Secret, op, err)
	if attempts > 1 {
		msg += fmt.Sprintf(" (%d attempts)", attempts)
	}
	return providers.NewError(kind, errors.New(msg))
}
