//go:build tenancy

package install_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// keysSecret is the name of the demo zone's keys' Secret (docs/dnssec.md), which the controller
// makes on first use in its own namespace.
const keysSecret = "dnssec-demo-example-com"

// sigCacheBound is the signature cache's bound the signed tenancy gives the controller
// (--dnssec-signature-cache-bytes): 1 MiB, some 2,600 names, so that a flood of a few thousand
// names must evict.
const sigCacheBound = 1 << 20

// The attacks on the signed zone: its keys, and the cache of signatures made for names a client
// chooses. Each by a team acting through edit, against the installed controller signing the demo
// zone.
func TestTenancySigned(t *testing.T) {
	e := startTenancy(t, "--dnssec-zones="+demoZone, "--dnssec-signature-cache-bytes="+strconv.Itoa(sigCacheBound))
	app := "app." + demoZone
	keys := e.zoneKeys(t)
	e.signedAnswer(t, keys, app, appAddr)

	// The keys' Secret is in the controller's namespace, out of every team's reach; a Secret of
	// that name a team writes in its own namespace (even the one granted the whole zone, even with
	// keys that would sign) changes nothing the server serves.
	t.Run("keys out of reach", func(t *testing.T) {
		ctx := context.Background()
		var held corev1.Secret
		if err := e.cp.c.Get(ctx, client.ObjectKey{Namespace: controllerNamespace, Name: keysSecret}, &held); err != nil {
			t.Fatal(err)
		}
		own := forgedKeys(t)
		for _, ns := range []string{"team-a", "team-c"} {
			c := e.teams[ns]
			theirs := &corev1.Secret{}
			forged := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: controllerNamespace, Name: keysSecret,
					Annotations: map[string]string{"dnspolicy.io/dnssec-zone": demoZone}},
				Type: dnssec.SecretType, Data: own,
			}
			replaced := held.DeepCopy()
			replaced.Data = own
			for what, err := range map[string]error{
				"get":    c.Get(ctx, client.ObjectKeyFromObject(&held), theirs),
				"list":   c.List(ctx, &corev1.SecretList{}, client.InNamespace(controllerNamespace)),
				"create": c.Create(ctx, forged.DeepCopy()),
				"update": c.Update(ctx, replaced),
				"delete": c.Delete(ctx, held.DeepCopy()),
			} {
				if !apierrors.IsForbidden(err) {
					t.Errorf("%s may %s the keys' Secret: %v, want Forbidden", ns, what, err)
				}
			}
			forged.Namespace = ns
			if err := c.Create(ctx, forged); err != nil {
				t.Fatal(err)
			}
		}
		// A zone pass after the forged Secrets exist (team-b's new name answered) reads the keys
		// again: still the controller's.
		www := "www.b." + demoZone
		rec := e.authoritative(t, "team-b", demoZone, www, v1alpha1.NewEndpoint(www, "A", 60, "192.0.2.20"))
		e.waitCondition(t, e.teams["team-b"], rec, "Served", "True")
		e.eventuallyAnswers(t, www, dns.TypeA, "NOERROR 192.0.2.20")
		if got := e.zoneKeys(t); !slices.Equal(keyTags(got), keyTags(keys)) {
			t.Errorf("DNSKEY set %v, was %v", keyTags(got), keyTags(keys))
		}
		var now corev1.Secret
		if err := e.cp.c.Get(ctx, client.ObjectKeyFromObject(&held), &now); err != nil {
			t.Fatal(err)
		}
		if !maps.EqualFunc(now.Data, held.Data, slices.Equal) {
			t.Errorf("the keys' Secret changed: %v, was %v", slices.Sorted(maps.Keys(now.Data)), slices.Sorted(maps.Keys(held.Data)))
		}
		e.signedAnswer(t, keys, app, appAddr)
	})

	// A flood of names a client chooses (names that do not exist, names a wildcard answers), each
	// answer signed for that name, over TCP (where rate limiting does not reach): the cache of those
	// signatures stays within its bound, evicting, while team-a's answer stays right and signed.
	t.Run("random names stay within the signature cache's bound", func(t *testing.T) {
		wild := "*.w.b." + demoZone
		rec := e.authoritative(t, "team-b", demoZone, wild, v1alpha1.NewEndpoint(wild, "A", 60, "192.0.2.21"))
		e.waitCondition(t, e.teams["team-b"], rec, "Served", "True")
		token := e.cp.metricsToken(t, "prometheus", true)
		var names []string
		for i := range 4000 {
			names = append(names, fmt.Sprintf("r%d.nx.%s", i, demoZone), fmt.Sprintf("r%d.w.b.%s", i, demoZone))
		}
		var most float64
		for part := range slices.Chunk(names, 1000) {
			e.floodWhileSigned(t, part, keys, app, appAddr)
			c := e.sigCache(t, token)
			t.Logf("after %d more names: %+v", len(part), c)
			if c.bytes > sigCacheBound {
				t.Errorf("the signature cache holds %.0f bytes, over its bound %d", c.bytes, sigCacheBound)
			}
			most = max(most, c.bytes)
		}
		c := e.sigCache(t, token)
		if c.evictions == 0 || c.entries == 0 {
			t.Errorf("after %d names the cache has %+v: want entries, and evictions to stay within %d bytes", len(names), c, sigCacheBound)
		}
		// Full, not merely bounded: the bound is what was reached (each of 16 shards evicts at
		// 1/16 of it, so the whole sits just under).
		if most < sigCacheBound*3/4 {
			t.Errorf("the cache held at most %.0f bytes: the flood did not fill it", most)
		}
	})
}

// zoneKeys returns the DNSKEY set the server answers for the zone, once it answers one, checking
// that it is the set of the keys' Secret in the controller's namespace.
func (e *tenancy) zoneKeys(t *testing.T) []*dns.DNSKEY {
	t.Helper()
	var keys []*dns.DNSKEY
	testenv.Eventually(t, 60*time.Second, func() string {
		r, err := e.query(t, demoZone, dns.TypeDNSKEY, true)
		if err != nil {
			return err.Error()
		}
		keys = keys[:0]
		for _, rr := range r.Answer {
			if k, ok := rr.(*dns.DNSKEY); ok {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			return fmt.Sprintf("no DNSKEY for %s: %v", demoZone, r)
		}
		return ""
	})
	var s corev1.Secret
	if err := e.cp.c.Get(context.Background(), client.ObjectKey{Namespace: controllerNamespace, Name: keysSecret}, &s); err != nil {
		t.Fatal(err)
	}
	ring, err := dnssec.Parse(demoZone, s.Data)
	if err != nil {
		t.Fatal(err)
	}
	var held []uint16
	for _, k := range ring.KeySet().Published() {
		held = append(held, k.KeyTag())
	}
	slices.Sort(held)
	if got := keyTags(keys); !slices.Equal(got, held) {
		t.Fatalf("the server answers DNSKEYs %v, the Secret %s/%s holds %v", got, controllerNamespace, keysSecret, held)
	}
	return keys
}

func keyTags(keys []*dns.DNSKEY) []uint16 {
	var tags []uint16
	for _, k := range keys {
		tags = append(tags, k.KeyTag())
	}
	slices.Sort(tags)
	return tags
}

// forgedKeys is the data of a keys' Secret for the demo zone holding a CSK made here, active: keys
// the controller would sign with were it to read them.
func forgedKeys(t *testing.T) map[string][]byte {
	t.Helper()
	k, err := dnssec.Generate(demoZone, dnssec.ECDSAP256SHA256, dnssec.CSK)
	if err != nil {
		t.Fatal(err)
	}
	k.State = dnssec.Active
	data, err := dnssec.Marshal(dnssec.Keyring{Zone: dns.Fqdn(demoZone), Keys: []dnssec.Key{k}})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// signedAnswer checks the name's A answer with DO set: the address, and an RRSIG over it that one
// of the zone's keys verifies.
func (e *tenancy) signedAnswer(t *testing.T, keys []*dns.DNSKEY, name, addr string) {
	t.Helper()
	if err := e.checkSigned(keys, name, addr); err != nil {
		t.Fatal(err)
	}
}

func (e *tenancy) checkSigned(keys []*dns.DNSKEY, name, addr string) error {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	m.SetEdns0(1232, true)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second}).Exchange(m, e.dns)
	if err != nil {
		return err
	}
	var set []dns.RR
	var sigs []*dns.RRSIG
	for _, rr := range r.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			set = append(set, rr)
		case *dns.RRSIG:
			sigs = append(sigs, rr)
		}
	}
	if len(set) != 1 || set[0].(*dns.A).A.String() != addr {
		return fmt.Errorf("%s A: %v, want %s", name, set, addr)
	}
	for _, sig := range sigs {
		for _, k := range keys {
			if k.KeyTag() == sig.KeyTag && sig.Verify(k, set) == nil && sig.ValidityPeriod(time.Now()) {
				return nil
			}
		}
	}
	return fmt.Errorf("%s A: no RRSIG a key of the zone (%v) verifies among %v", name, keyTags(keys), sigs)
}

// floodWhileSigned runs the flood of names while asking for the name's signed answer, one after
// another, until the flood ends: the answers must stay right and signed throughout.
func (e *tenancy) floodWhileSigned(t *testing.T, names []string, keys []*dns.DNSKEY, name, addr string) {
	t.Helper()
	done := make(chan struct{})
	checked := make(chan error, 1)
	go func() {
		n := 0
		for {
			select {
			case <-done:
				if n == 0 {
					checked <- fmt.Errorf("%s was never asked during the flood", name)
				}
				close(checked)
				return
			default:
			}
			if err := e.checkSigned(keys, name, addr); err != nil {
				checked <- fmt.Errorf("during the flood: %w", err)
				close(checked)
				return
			}
			n++
		}
	}()
	err := e.flood(names)
	close(done)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-checked; err != nil {
		t.Fatal(err)
	}
}

// flood asks each name with DO set over TCP, on 4 connections at once, new ones before the
// server's per-connection query limit; every answer must carry an RRSIG (it was signed for the name).
func (e *tenancy) flood(names []string) error {
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var conn *dns.Conn
			defer func() {
				if conn != nil {
					_ = conn.Close()
				}
			}()
			for i := w; i < len(names); i += len(errs) {
				if i%400 < len(errs) {
					if conn != nil {
						_ = conn.Close()
					}
					c, err := net.DialTimeout("tcp", e.dns, 5*time.Second)
					if err != nil {
						errs[w] = err
						return
					}
					conn = &dns.Conn{Conn: c}
				}
				if errs[w] = floodQuery(conn, names[i]); errs[w] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func floodQuery(conn *dns.Conn, name string) error {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	m.SetEdns0(1232, true)
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	if err := conn.WriteMsg(m); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	r, err := conn.ReadMsg()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	for _, rr := range append(r.Answer, r.Ns...) {
		if _, ok := rr.(*dns.RRSIG); ok {
			return nil
		}
	}
	return fmt.Errorf("%s: an answer without an RRSIG: %v", name, r)
}

// sigCacheUse is what the controller's metrics say of the demo zone's signature cache.
type sigCacheUse struct{ entries, bytes, evictions float64 }

// sigCache reads the demo zone's signature cache's metrics from the controller's metrics endpoint.
func (e *tenancy) sigCache(t *testing.T, token string) sigCacheUse {
	t.Helper()
	var body string
	testenv.Eventually(t, 30*time.Second, func() string {
		code, b, err := getMetrics(e.metrics, token)
		if err != nil || code != 200 {
			return fmt.Sprintf("metrics: HTTP %d, %v", code, err)
		}
		body = b
		return ""
	})
	value := func(name string) float64 {
		for _, line := range strings.Split(body, "\n") {
			f := strings.Fields(line)
			if len(f) == 2 && strings.HasPrefix(f[0], name+"{") && strings.Contains(f[0], `zone="`+demoZone) {
				v, err := strconv.ParseFloat(f[1], 64)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
		}
		t.Fatalf("the metrics have no %s for zone %s", name, demoZone)
		return 0
	}
	return sigCacheUse{entries: value("dnspolicy_dnsserver_dnssec_cache_entries"), bytes: value("dnspolicy_dnsserver_dnssec_cache_bytes"),
		evictions: value("dnspolicy_dnsserver_dnssec_cache_evictions_total")}
}
