package dnshealthcheckprobe

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// secretCache holds the headers read from each headers Secret, so that the probes naming one
// Secret (usually every probe of a policy) read it once per HeadersRefresh, not once each. It is
// filled by direct reads (no informer: the controller never holds Secrets it was not pointed at),
// holds only what the probes send, and never logs or reports a value: reasons name the Secret and
// its keys.
type secretCache struct {
	mu     sync.Mutex
	secret map[types.NamespacedName]*headersEntry
	// of is the Secret each probe uses, to drop an entry nobody uses.
	of map[types.NamespacedName]types.NamespacedName
}

type headersEntry struct {
	headers  http.Header
	unusable string
	// next is when the Secret is read again; retry is the backoff after a failed read.
	next  time.Time
	retry time.Duration
}

func newSecretCache() *secretCache {
	return &secretCache{secret: map[types.NamespacedName]*headersEntry{}, of: map[types.NamespacedName]types.NamespacedName{}}
}

// get returns the headers of Secret key for probe, reading the Secret when its entry is due.
func (c *secretCache) get(ctx context.Context, reader client.Reader, probe, key types.NamespacedName, refresh, retryMin time.Duration) headersEntry {
	c.mu.Lock()
	if old, ok := c.of[probe]; ok && old != key {
		c.releaseLocked(probe)
	}
	c.of[probe] = key
	e, ok := c.secret[key]
	if ok && time.Now().Before(e.next) {
		defer c.mu.Unlock()
		return *e
	}
	c.mu.Unlock()

	// Read outside the lock: a slow API server must not hold up every other probe's pass. Two
	// passes may read the same Secret at once; the last read wins.
	read := readHeaders(ctx, reader, key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if ok && read.unusable != "" {
		read.retry = min(max(2*e.retry, retryMin), refresh)
	} else if read.unusable != "" {
		read.retry = retryMin
	}
	read.next = time.Now().Add(refresh)
	if read.unusable != "" {
		read.next = time.Now().Add(read.retry)
	}
	c.secret[key] = &read
	return read
}

// release drops probe's use of its Secret.
func (c *secretCache) release(probe types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releaseLocked(probe)
}

func (c *secretCache) releaseLocked(probe types.NamespacedName) {
	key, ok := c.of[probe]
	if !ok {
		return
	}
	delete(c.of, probe)
	for _, other := range c.of {
		if other == key {
			return
		}
	}
	delete(c.secret, key)
}

// ReasonHeadersSecretNotAllowed starts the status reason of a probe whose headers Secret is not of
// type Opaque.
const ReasonHeadersSecretNotAllowed = "HeadersSecretNotAllowed"

// readHeaders reads a headers Secret: each key is a header name, its value the header's value.
//
// Only an Opaque Secret of the probe's own namespace is read for headers. A probe is a tenant's
// object, and the controller can read Secrets the tenant may not (a ServiceAccount's token, a
// provider's credentials, registry and TLS keys): sending one of those to an address of the tenant's
// choosing would hand it over. Typed Secrets exist for other consumers, so refusing them costs a
// legitimate user nothing; the probe is not sent without its headers.
func readHeaders(ctx context.Context, reader client.Reader, key types.NamespacedName) headersEntry {
	s := &corev1.Secret{}
	if err := reader.Get(ctx, key, s); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return headersEntry{unusable: fmt.Sprintf("Additional headers Secret %s not found", key)}
		case apierrors.IsForbidden(err):
			return headersEntry{unusable: fmt.Sprintf("Additional headers Secret %s cannot be read: forbidden", key)}
		default:
			// The reason, not the error's text, which may hold a URL or a request ID.
			reason := string(apierrors.ReasonForError(err))
			if reason == "" {
				reason = "the API server did not answer"
			}
			return headersEntry{unusable: fmt.Sprintf("Additional headers Secret %s cannot be read: %s", key, reason)}
		}
	}
	if s.Type != corev1.SecretTypeOpaque {
		return headersEntry{unusable: fmt.Sprintf("%s: Additional headers Secret %s is of type %s; only Opaque Secrets are read for headers",
			ReasonHeadersSecretNotAllowed, key, s.Type)}
	}
	names := make([]string, 0, len(s.Data))
	for k := range s.Data {
		names = append(names, k)
	}
	sort.Strings(names)
	h := http.Header{}
	for _, k := range names {
		name := strings.TrimSpace(k)
		if !httpguts.ValidHeaderFieldName(name) {
			return headersEntry{unusable: fmt.Sprintf("Additional headers Secret %s: key %q is not a valid header name", key, k)}
		}
		if v := string(s.Data[k]); !httpguts.ValidHeaderFieldValue(v) {
			return headersEntry{unusable: fmt.Sprintf("Additional headers Secret %s: the value of key %q is not a valid header value", key, k)}
		}
		h.Add(name, string(s.Data[k]))
	}
	return headersEntry{headers: h}
}
