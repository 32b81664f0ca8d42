//go:build integration

package dnsserver_test

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	dnsservercontroller "github.com/dnspolicy/dnspolicy-controller/controllers/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// lab is the clock and the parent the key controller sees: a clock that the test moves on, and a
// parent zone whose DS set the test sets.
type lab struct {
	mu     sync.Mutex
	offset time.Duration
	ds     []*dns.DS
	asked  int
}

func (l *lab) now() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Now().Add(l.offset)
}

func (l *lab) advance(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.offset += d
}

func (l *lab) lookup(_ context.Context, _ string) (dnssec.ParentDS, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked++
	return dnssec.ParentDS{Asked: true, DS: slices.Clone(l.ds)}, nil
}

func (l *lab) askedTimes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.asked
}

func (l *lab) publish(ds ...*dns.DS) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ds = ds
}

// signedManager runs the DNS server signing zone with keys in keysNS, on the lab's clock and parent.
func signedManager(t *testing.T, zone, keysNS, keys string, l *lab) *manager {
	return startManager(t, nil, func(o *app.Options) {
		o.DNSSEC.Zones = []string{zone}
		o.DNSSEC.SecretNamespace = keysNS
		o.DNSSEC.Keys = keys
		o.DNSSEC.Recheck = 100 * time.Millisecond
		o.DNSSEC.Now, o.DNSSEC.LookupDS = l.now, l.lookup
	})
}

// keyring reads the zone's keys from their Secret.
func keyring(t *testing.T, keysNS, zone string) (dnssec.Keyring, *corev1.Secret, error) {
	t.Helper()
	var s corev1.Secret
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: keysNS, Name: dnsservercontroller.SecretName(zone)}, &s); err != nil {
		return dnssec.Keyring{}, nil, err
	}
	r, err := dnssec.Parse(zone, s.Data)
	return r, &s, err
}

// keysAre waits until the Secret's keys read want (role/state, space-separated).
func keysAre(t *testing.T, keysNS, zone, want string) dnssec.Keyring {
	t.Helper()
	var ring dnssec.Keyring
	testenv.Eventually(t, 30*time.Second, func() string {
		r, _, err := keyring(t, keysNS, zone)
		if err != nil {
			return err.Error()
		}
		var parts []string
		for _, k := range r.Keys {
			parts = append(parts, string(k.Role)+"/"+string(k.State))
		}
		if got := strings.Join(parts, " "); got != want {
			return fmt.Sprintf("keys %q, want %q", got, want)
		}
		ring = r
		return ""
	})
	return ring
}

// signedCondition waits until the record's Signed condition has reason and contains every part.
func signedCondition(t *testing.T, rec *v1alpha1.DNSRecord, reason string, parts ...string) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, func() string {
		var got v1alpha1.DNSRecord
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(rec), &got); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(got.Status.Conditions, dnsservercontroller.ConditionSigned)
		if c == nil {
			return "no Signed condition"
		}
		if c.Reason != reason {
			return fmt.Sprintf("Signed %s: %s", c.Reason, c.Message)
		}
		for _, p := range parts {
			if !strings.Contains(c.Message, p) {
				return fmt.Sprintf("Signed %s: %q lacks %q", c.Reason, c.Message, p)
			}
		}
		return ""
	})
}

// servedKeys waits until the server's DNSKEY set is exactly the published keys of ring, and its
// CDS set the DS of the keys wanting one; then checks that an answer's RRSIG verifies with an
// active key, with a real client.
func servedKeys(t *testing.T, addr, zone, host string, ring dnssec.Keyring) {
	t.Helper()
	var want, wantCDS []string
	ks := ring.KeySet()
	for _, k := range ks.Published() {
		want = append(want, k.DNSKEY.PublicKey)
	}
	for _, k := range ks.WantDS() {
		wantCDS = append(wantCDS, k.DS().Digest)
	}
	slices.Sort(want)
	slices.Sort(wantCDS)
	testenv.Eventually(t, 30*time.Second, func() string {
		got, err := rdata(addr, zone, dns.TypeDNSKEY, func(rr dns.RR) string { return rr.(*dns.DNSKEY).PublicKey })
		if err != nil {
			return err.Error()
		}
		cds, err := rdata(addr, zone, dns.TypeCDS, func(rr dns.RR) string { return strings.ToLower(rr.(*dns.CDS).Digest) })
		if err != nil {
			return err.Error()
		}
		if !slices.Equal(got, want) || !slices.Equal(cds, wantCDS) {
			return fmt.Sprintf("DNSKEY %v CDS %v, want %v and %v", got, cds, want, wantCDS)
		}
		return ""
	})
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(host), dns.TypeA)
	m.SetEdns0(1232, true)
	r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatal(err)
	}
	var set []dns.RR
	var sig *dns.RRSIG
	for _, rr := range r.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			set = append(set, rr)
		case *dns.RRSIG:
			sig = rr
		}
	}
	if sig == nil || len(set) == 0 {
		t.Fatalf("no signed A answer: %s", r)
	}
	for _, k := range ks.ZoneSigners() {
		if k.KeyTag() == sig.KeyTag {
			if err := sig.Verify(k.DNSKEY, set); err != nil {
				t.Fatalf("the RRSIG of %s does not verify with %s: %v", host, k.ID, err)
			}
			return
		}
	}
	t.Fatalf("the RRSIG of %s is by tag %d, not by an active key of %s", host, sig.KeyTag, ring.Describe())
}

// rdata asks addr for a set and returns its records through text, sorted.
func rdata(addr, name string, qtype uint16, text func(dns.RR) string) ([]string, error) {
	r, err := query(addr, name, qtype, netip.Addr{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rr := range r.Answer {
		if rr.Header().Rrtype == qtype {
			out = append(out, text(rr))
		}
	}
	slices.Sort(out)
	return out, nil
}

func annotate(t *testing.T, keysNS, zone, key, value string) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		_, s, err := keyring(t, keysNS, zone)
		if s == nil {
			return err
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[key] = value
		return env.Client.Update(context.Background(), s)
	}); err != nil {
		t.Fatal(err)
	}
}

// A signed zone's keys are made on first use in their Secret and served (DNSKEY and CDS as the
// Secret holds them, answers signed by them); a restarted manager signs with the same keys (same
// DS); an invalid Secret is reported on the records and the zone is still answered; a CSK rollover
// asked for with the Secret's annotation waits for the parent's DS, says so, and completes on the
// lab's clock once the parent holds it.
func TestDNSSECKeysAndCSKRollover(t *testing.T) {
	const zone = "sec.example.com"
	ns, keysNS := newNamespace(t), newNamespace(t)
	rec := writeAuthoritative(t, ns, zone, "www."+zone, []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www."+zone, "A", 60, "192.0.2.1")})
	l := &lab{}
	m := signedManager(t, zone, keysNS, "csk", l)

	first := keysAre(t, keysNS, zone, "csk/active")
	_, secret, _ := keyring(t, keysNS, zone)
	if secret.Type != dnssec.SecretType {
		t.Fatalf("Secret type %q", secret.Type)
	}
	servedKeys(t, m.addr, zone, "www."+zone, first)
	ds := first.DSRecords()
	signedCondition(t, rec, dnsservercontroller.ReasonSigned, ds[0], first.Keys[0].ID)

	// A restart reads the keys back: the same DNSKEY and DS, the Secret not written again.
	m.stop()
	version := secret.ResourceVersion
	m = signedManager(t, zone, keysNS, "csk", l)
	servedKeys(t, m.addr, zone, "www."+zone, first)
	if _, again, _ := keyring(t, keysNS, zone); again.ResourceVersion != version {
		t.Fatalf("the Secret was written on restart (resourceVersion %s, was %s)", again.ResourceVersion, version)
	}

	// A Secret whose active key lost its private half: the records say so, the zone is still
	// answered, signed with the keys read before.
	broken := secret.DeepCopy()
	delete(broken.Data, first.Keys[0].ID+".private")
	broken.ResourceVersion = ""
	if err := env.Client.Update(context.Background(), mergeVersion(t, broken)); err != nil {
		t.Fatal(err)
	}
	signedCondition(t, rec, dnsservercontroller.ReasonKeysInvalid, "key "+first.Keys[0].ID+": no private key")
	eventually(t, 10*time.Second, m.addr, "www."+zone, dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.1")
	servedKeys(t, m.addr, zone, "www."+zone, first)
	restored := secret.DeepCopy()
	if err := env.Client.Update(context.Background(), mergeVersion(t, restored)); err != nil {
		t.Fatal(err)
	}
	signedCondition(t, rec, dnsservercontroller.ReasonSigned, ds[0])

	// The rollover, asked for as the CLI asks: a new CSK published, both DS wanted (CDS lists both).
	annotate(t, keysNS, zone, dnsservercontroller.AnnotationRollover, "ksk")
	rolling := keysAre(t, keysNS, zone, "csk/active csk/published")
	newDS := rolling.DSRecords()
	if len(newDS) != 2 {
		t.Fatalf("DS wanted during the rollover: %v", newDS)
	}
	servedKeys(t, m.addr, zone, "www."+zone, rolling)
	signedCondition(t, rec, dnsservercontroller.ReasonRolloverWaitingForDS, "waits for the parent to hold its DS ("+newDS[1]+")")
	if _, s, _ := keyring(t, keysNS, zone); s.Annotations[dnsservercontroller.AnnotationRollover] != "" {
		t.Fatal("the rollover request was not taken away")
	}

	// A parent that never publishes: a day on, still waiting.
	l.advance(24 * time.Hour)
	keysAre(t, keysNS, zone, "csk/active csk/published")
	signedCondition(t, rec, dnsservercontroller.ReasonRolloverWaitingForDS, newDS[1])

	// The parent holds both DS: once the DS TTL has passed, the new key signs and the old retires,
	// then goes once no cache can hold its signatures, and is forgotten.
	// Asked again only once the DS check interval (10 minutes) has passed.
	l.publish(rolling.Keys[0].DS(), rolling.Keys[1].DS())
	asked := l.askedTimes()
	l.advance(11 * time.Minute)
	keysAre(t, keysNS, zone, "csk/active csk/published")
	signedCondition(t, rec, dnsservercontroller.ReasonRolloverInProgress, "old DS set to leave caches")
	if n := l.askedTimes() - asked; n != 1 {
		t.Fatalf("the parent was asked %d times in the DS check interval, want once", n)
	}
	l.advance(24*time.Hour + 6*time.Minute)
	retired := keysAre(t, keysNS, zone, "csk/retired csk/active")
	servedKeys(t, m.addr, zone, "www."+zone, retired)
	l.advance(24*time.Hour + 6*time.Minute)
	keysAre(t, keysNS, zone, "csk/removed csk/active")
	l.advance(time.Hour + 6*time.Minute)
	done := keysAre(t, keysNS, zone, "csk/active")
	if done.Keys[0].ID != rolling.Keys[1].ID {
		t.Fatalf("the key left is %s, not the new %s", done.Keys[0].ID, rolling.Keys[1].ID)
	}
	servedKeys(t, m.addr, zone, "www."+zone, done)
	signedCondition(t, rec, dnsservercontroller.ReasonSigned, newDS[1])
}

// mergeVersion sets s's resourceVersion to the stored one, so an update replaces what is stored.
func mergeVersion(t *testing.T, s *corev1.Secret) *corev1.Secret {
	t.Helper()
	var cur corev1.Secret
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(s), &cur); err != nil {
		t.Fatal(err)
	}
	s.ResourceVersion = cur.ResourceVersion
	return s
}

// Split keys: a ZSK rollover by command pre-publishes the new ZSK, which signs once the DNSKEY TTL
// passed; the old one leaves after the zone's largest TTL. The KSK and its DS stay.
func TestDNSSECZSKRollover(t *testing.T) {
	const zone = "zsk.example.com"
	ns, keysNS := newNamespace(t), newNamespace(t)
	rec := writeAuthoritative(t, ns, zone, "www."+zone, []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www."+zone, "A", 60, "192.0.2.2")})
	l := &lab{}
	m := signedManager(t, zone, keysNS, "ksk-zsk", l)
	first := keysAre(t, keysNS, zone, "ksk/active zsk/active")
	servedKeys(t, m.addr, zone, "www."+zone, first)
	ds := first.DSRecords()
	signedCondition(t, rec, dnsservercontroller.ReasonSigned, ds[0])

	annotate(t, keysNS, zone, dnsservercontroller.AnnotationRollover, "zsk")
	pre := keysAre(t, keysNS, zone, "ksk/active zsk/active zsk/published")
	servedKeys(t, m.addr, zone, "www."+zone, pre)
	signedCondition(t, rec, dnsservercontroller.ReasonRolloverInProgress, "for its DNSKEY to reach caches")
	l.advance(time.Hour + 6*time.Minute)
	swapped := keysAre(t, keysNS, zone, "ksk/active zsk/retired zsk/active")
	servedKeys(t, m.addr, zone, "www."+zone, swapped)
	l.advance(24*time.Hour + 6*time.Minute)
	keysAre(t, keysNS, zone, "ksk/active zsk/removed zsk/active")
	l.advance(time.Hour + 6*time.Minute)
	done := keysAre(t, keysNS, zone, "ksk/active zsk/active")
	servedKeys(t, m.addr, zone, "www."+zone, done)
	signedCondition(t, rec, dnsservercontroller.ReasonSigned, ds[0])
	if n := l.askedTimes(); n != 0 {
		t.Fatalf("a ZSK rollover asked the parent %d times", n)
	}
}

// Two replicas start together on a zone without keys: one creates the Secret, the other reads it,
// and both sign with its keys; a rollover one of them writes is served by both.
func TestDNSSECReplicasShareTheSecret(t *testing.T) {
	const zone = "replicas.example.com"
	ns, keysNS := newNamespace(t), newNamespace(t)
	writeAuthoritative(t, ns, zone, "www."+zone, []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www."+zone, "A", 60, "192.0.2.3")})
	l := &lab{}
	var ms [2]*manager
	var wg sync.WaitGroup
	for i := range ms {
		wg.Go(func() { ms[i] = signedManager(t, zone, keysNS, "csk", l) })
	}
	wg.Wait()
	first := keysAre(t, keysNS, zone, "csk/active")
	for _, m := range ms {
		servedKeys(t, m.addr, zone, "www."+zone, first)
	}
	annotate(t, keysNS, zone, dnsservercontroller.AnnotationRollover, "ksk")
	rolling := keysAre(t, keysNS, zone, "csk/active csk/published")
	for _, m := range ms {
		servedKeys(t, m.addr, zone, "www."+zone, rolling)
	}
}
