package webhook

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

func mustURL(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		data    map[string]string
		wantErr string
		check   func(t *testing.T, o Options)
	}{
		{name: "url only", data: map[string]string{v1alpha1.WebhookProviderURLKey: " http://localhost:8888 "},
			check: func(t *testing.T, o Options) {
				if o.URL.String() != "http://localhost:8888" || o.Timeout != 0 || o.BatchSize != 0 || o.Zones != nil {
					t.Errorf("options = %+v", o)
				}
			}},
		{name: "every key", data: map[string]string{
			v1alpha1.WebhookProviderURLKey: "https://dns.example.net/hook", v1alpha1.WebhookZonesKey: "B.example.com., a.example.com,,b.example.com",
			v1alpha1.WebhookProviderTimeoutKey: "3s", v1alpha1.WebhookProviderBatchSizeKey: "100",
		}, check: func(t *testing.T, o Options) {
			if strings.Join(o.Zones, ",") != "b.example.com,a.example.com" || o.Timeout != 3*time.Second || o.BatchSize != 100 {
				t.Errorf("options = %+v", o)
			}
		}},
		{name: "missing url", data: map[string]string{}, wantErr: v1alpha1.WebhookProviderURLKey},
		{name: "not http", data: map[string]string{v1alpha1.WebhookProviderURLKey: "ftp://secret@host/"}, wantErr: v1alpha1.WebhookProviderURLKey},
		{name: "no host", data: map[string]string{v1alpha1.WebhookProviderURLKey: "http:///records?token=secret"}, wantErr: v1alpha1.WebhookProviderURLKey},
		{name: "bad zone", data: map[string]string{v1alpha1.WebhookProviderURLKey: "http://h", v1alpha1.WebhookZonesKey: "a.example.com,not a zone"}, wantErr: v1alpha1.WebhookZonesKey},
		{name: "bad timeout", data: map[string]string{v1alpha1.WebhookProviderURLKey: "http://h", v1alpha1.WebhookProviderTimeoutKey: "-1s"}, wantErr: v1alpha1.WebhookProviderTimeoutKey},
		{name: "bad batch", data: map[string]string{v1alpha1.WebhookProviderURLKey: "http://h", v1alpha1.WebhookProviderBatchSizeKey: "many"}, wantErr: v1alpha1.WebhookProviderBatchSizeKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := ParseOptions(webhookSecretData(tc.data))
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("ParseOptions succeeded, want an error naming %s", tc.wantErr)
				}
				msg := err.Error()
				if !strings.Contains(msg, "ns/webhook") || !strings.Contains(msg, tc.wantErr) || strings.Contains(msg, "secret@") ||
					strings.Contains(msg, "token") || strings.Contains(msg, "not a zone") {
					t.Errorf("error %q must name the Secret and the key, and no value", msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseOptions: %v", err)
			}
			tc.check(t, opts)
		})
	}
}

func TestDomainFilter(t *testing.T) {
	decode := func(t *testing.T, s string) DomainFilter {
		t.Helper()
		var f DomainFilter
		if err := json.Unmarshal([]byte(s), &f); err != nil {
			t.Fatalf("decode %s: %v", s, err)
		}
		return f
	}
	domains := decode(t, `{"include":["Example.com.",".sub.example.org","bücher.example"],"exclude":["x.example.com"]}`)
	for name, want := range map[string]bool{
		"example.com": true, "www.example.com": true, "x.example.com": false, "a.x.example.com": false,
		"sub.example.org": false, "a.sub.example.org": true, "example.org": false, "notexample.com": false,
		"xn--bcher-kva.example": true, "WWW.Example.COM.": true,
	} {
		if got := domains.Match(name); got != want {
			t.Errorf("Match(%s) = %v, want %v", name, got, want)
		}
	}
	if got := strings.Join(domains.Domains(), ","); got != "example.com,sub.example.org,xn--bcher-kva.example" {
		t.Errorf("Domains() = %s", got)
	}
	regex := decode(t, `{"regexInclude":"example\\.com$","regexExclude":"^x\\."}`)
	if !regex.Match("a.example.com") || regex.Match("x.example.com") || regex.Match("example.net") || len(regex.Domains()) != 0 {
		t.Errorf("regex filter matches wrongly")
	}
	if !decode(t, `{}`).Match("anything.example") {
		t.Errorf("an empty filter must match every name")
	}
	var f DomainFilter
	for _, bad := range []string{`{"include":["a"],"regexInclude":"b"}`, `{"regexInclude":"("}`} {
		if err := json.Unmarshal([]byte(bad), &f); err == nil {
			t.Errorf("decode %s succeeded, want an error", bad)
		}
	}

	// Zones: the filter's domains minus those excluded whole; ZONES only inside the filter.
	z, err := zones(decode(t, `{"include":["a.example.com","b.example.com"],"exclude":["b.example.com"]}`), nil, "ns/w")
	if err != nil || strings.Join(z, ",") != "a.example.com" {
		t.Errorf("zones = %v, %v", z, err)
	}
	if _, err := zones(decode(t, `{}`), nil, "ns/w"); err == nil || !strings.Contains(err.Error(), v1alpha1.WebhookZonesKey) {
		t.Errorf("zones of an empty filter = %v, want an error naming %s", err, v1alpha1.WebhookZonesKey)
	}
	if z, err := zones(decode(t, `{"include":[".example.com"]}`), []string{"example.com"}, "ns/w"); err != nil || len(z) != 1 {
		t.Errorf("zones with ZONES under a dot entry = %v, %v", z, err)
	}
	if _, err := zones(decode(t, `{"include":["a.example.com"]}`), []string{"example.com"}, "ns/w"); err == nil {
		t.Errorf("a ZONES entry above the filter must be refused")
	}
}

// faultServer answers every request with handler and counts them.
func faultServer(t *testing.T, handler http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// faulty builds the backend through its constructor, with a short timeout, at a URL whose user info
// and query stand for credentials that must never reach an error.
func faulty(t *testing.T, base string) *Provider {
	t.Helper()
	u := mustURL(t, base)
	u.User = url.UserPassword("user", "hunter2")
	u.RawQuery = "token=hunter2"
	backend, err := New(t.Context(), webhookSecretData(map[string]string{
		v1alpha1.WebhookProviderURLKey: u.String(), v1alpha1.WebhookProviderTimeoutKey: "300ms",
	}), providers.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return backend.Zones.(*Provider)
}

// A server that fails, hangs, is not there, refuses the request or is not a webhook provider gives
// an error of the right kind after a bounded number of attempts and a bounded time, with the same
// message every time and without the URL.
func TestFaults(t *testing.T) {
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	closed := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		return "http://" + addr
	}
	for _, tc := range []struct {
		name     string
		handler  http.HandlerFunc
		url      string
		kind     providers.ErrorKind
		attempts int32
		says     string
	}{
		{name: "500", handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) },
			kind: providers.Transient, attempts: 3, says: "GET /: HTTP 500 Internal Server Error (3 attempts)"},
		{name: "503", handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) },
			kind: providers.Transient, attempts: 3, says: "HTTP 503 Service Unavailable (3 attempts)"},
		{name: "hangs", handler: func(_ http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-hang:
			}
		}, kind: providers.Transient, attempts: 3, says: "GET /: timed out (3 attempts)"},
		{name: "connection refused", url: closed(), kind: providers.Transient, says: "GET /: connection refused (3 attempts)"},
		{name: "404", handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) },
			kind: providers.Permanent, attempts: 1, says: "GET /: HTTP 404 Not Found"},
		{name: "redirect", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://192.0.2.1/elsewhere", http.StatusFound)
		}, kind: providers.Permanent, attempts: 1, says: "HTTP 302 Found"},
		{name: "not the protocol", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>login</html>"))
		}, kind: providers.Permanent, attempts: 1, says: "not of content type " + MediaType},
		{name: "not JSON", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", MediaType)
			_, _ = w.Write([]byte("{include"))
		}, kind: providers.Permanent, attempts: 1, says: "not the protocol's JSON"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := tc.url
			var count *atomic.Int32
			if tc.handler != nil {
				var srv *httptest.Server
				srv, count = faultServer(t, tc.handler)
				base = srv.URL
			}
			p := faulty(t, base)
			var messages []string
			for range 2 {
				start := time.Now()
				_, err := p.Zones(t.Context())
				if took := time.Since(start); took > 10*time.Second {
					t.Errorf("Zones took %v, want it bounded by the attempts' timeouts and backoff", took)
				}
				if err == nil {
					t.Fatal("Zones succeeded, want an error")
				}
				if kind := providers.KindOf(err); kind != tc.kind {
					t.Errorf("kind = %v, want %v (%v)", kind, tc.kind, err)
				}
				messages = append(messages, err.Error())
			}
			msg := messages[0]
			if messages[1] != msg {
				t.Errorf("messages differ between calls:\n%s\n%s", messages[0], messages[1])
			}
			if !strings.Contains(msg, tc.says) || !strings.Contains(msg, "ns/webhook") {
				t.Errorf("message %q, want it to say %q and name the Secret", msg, tc.says)
			}
			host := mustURL(t, base).Host
			_, port, _ := net.SplitHostPort(host)
			if strings.Contains(msg, "hunter2") || strings.Contains(msg, host) || strings.Contains(msg, port) || strings.Contains(msg, "192.0.2.1") {
				t.Errorf("message %q holds the URL, a port or a credential", msg)
			}
			if count != nil && count.Load() != 2*tc.attempts {
				t.Errorf("the server saw %d requests for two calls, want %d attempts each", count.Load(), tc.attempts)
			}
		})
	}
}

// A POST /records that fails is retried, each time after reading the zone again, and ends as a
// Transient error; a batch that the read shows to be stale is never posted.
func TestApplyRetriesAndChecksFirst(t *testing.T) {
	held := []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1")}
	var posts, reads atomic.Int32
	srv, _ := faultServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", MediaType)
		switch {
		case r.Method == http.MethodGet && r.URL.Path == pathNegotiate:
			_, _ = w.Write([]byte(`{"include":["example.com"]}`))
		case r.Method == http.MethodGet && r.URL.Path == pathRecords:
			reads.Add(1)
			_ = json.NewEncoder(w).Encode(held)
		case r.Method == http.MethodPost && r.URL.Path == pathRecords:
			posts.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
	p := faulty(t, srv.URL)
	z := providers.Zone{ID: "example.com", DNSName: "example.com"}

	err := p.Apply(t.Context(), z, nil, &providers.Changes{Create: []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("new.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.2")}})
	if providers.KindOf(err) != providers.Transient || err == nil || !strings.Contains(err.Error(), "POST /records: HTTP 500 Internal Server Error (3 attempts)") {
		t.Errorf("Apply = %v, want a Transient error after 3 attempts", err)
	}
	if posts.Load() != 3 || reads.Load() != 3 {
		t.Errorf("posts = %d, reads = %d, want 3 of each (a read before every post)", posts.Load(), reads.Load())
	}

	stale := v1alpha1.NewEndpoint("www.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.9")
	err = p.Apply(t.Context(), z, nil, &providers.Changes{Delete: []*v1alpha1.Endpoint{stale}})
	if providers.KindOf(err) != providers.StaleView || err == nil {
		t.Errorf("Apply(stale delete) = %v, want StaleView", err)
	}
	if posts.Load() != 3 {
		t.Errorf("a stale batch was posted")
	}
}

func webhookSecretData(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "webhook"},
		Type:       v1alpha1.SecretTypeExternalDNSWebhook,
		Data:       map[string][]byte{},
	}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

// A set deleted and created again in one batch goes to the provider as an update, the old value as
// the provider holds it: external-dns's providers never see one key twice in a batch.
func TestRecreatedSetIsSentAsAnUpdate(t *testing.T) {
	// A literal, since NewEndpoint would sort the targets.
	held := []*v1alpha1.Endpoint{{DNSName: "WWW.example.com", RecordType: v1alpha1.RecordTypeA, RecordTTL: 60, Targets: v1alpha1.Targets{"192.0.2.2", "192.0.2.1"}}}
	var posted changes
	srv, _ := faultServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", MediaType)
		switch {
		case r.URL.Path == pathNegotiate:
			_, _ = w.Write([]byte(`{"include":["example.com"]}`))
		case r.Method == http.MethodGet:
			_ = json.NewEncoder(w).Encode(held)
		default:
			if err := json.NewDecoder(r.Body).Decode(&posted); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		}
	})
	p := faulty(t, srv.URL)
	again := v1alpha1.NewEndpoint("www.example.com", v1alpha1.RecordTypeA, 300, "192.0.2.3")
	other := v1alpha1.NewEndpoint("new.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.4")
	err := p.Apply(t.Context(), providers.Zone{ID: "example.com", DNSName: "example.com"}, nil, &providers.Changes{
		Delete: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www.example.com", v1alpha1.RecordTypeA, 60, "192.0.2.1", "192.0.2.2")},
		Create: []*v1alpha1.Endpoint{again, other},
	})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(posted.Delete) != 0 || len(posted.Create) != 1 || posted.Create[0].DNSName != other.DNSName ||
		len(posted.UpdateOld) != 1 || len(posted.UpdateNew) != 1 {
		t.Fatalf("posted %+v, want one update and one creation", posted)
	}
	if got := posted.UpdateOld[0]; got.DNSName != "WWW.example.com" || strings.Join(got.Targets, ",") != "192.0.2.2,192.0.2.1" {
		t.Errorf("old value %v, want it as the provider holds it", got)
	}
	if got := posted.UpdateNew[0]; got.DNSName != "WWW.example.com" || got.RecordTTL != 300 || strings.Join(got.Targets, ",") != "192.0.2.3" {
		t.Errorf("new value %v, want the created set under the provider's name", got)
	}
}
