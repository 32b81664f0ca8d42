//go:build integration

package dnsserver_test

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	dnsservercontroller "github.com/dnspolicy/dnspolicy-controller/controllers/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
	"github.com/dnspolicy/dnspolicy-controller/test/resolver"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// Acceptance 4 of DNSSEC (issue 27): a rollover of each kind completes while a validating resolver
// answers the zone with AD throughout. Everything is real and runs on the wall clock, with TTLs of
// seconds: the controller steps the keys in their Secret, the embedded server signs with them, a
// parent BIND signs the test. zone and holds the child's DS, a "parent operator" loop copies the
// child's CDS set into the parent's DS set (RFC 8078's automation, as a registry scanning CDS
// does), the controller asks the parent for the DS, and a BIND validating resolver, trusting only
// the parent's key, is asked every 50 ms for the zone's answer through the whole rollover.
func TestDNSSECRolloversValidated(t *testing.T) {
	parent := startParent(t, "test.", "ksk.test.", "csk.test.")
	cases := []struct {
		zone, keys string
		rolls      []dnssec.Rollover
	}{
		{"ksk.test", "ksk-zsk", []dnssec.Rollover{dnssec.RollZSK, dnssec.RollKSK}},
		{"csk.test", "csk", []dnssec.Rollover{dnssec.RollKSK}},
	}
	for _, c := range cases {
		t.Run(c.keys, func(t *testing.T) {
			ns, keysNS := newNamespace(t), newNamespace(t)
			host := "www." + c.zone
			writeAuthoritative(t, ns, c.zone, host, []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(host, "A", 1, "192.0.2.1")})
			m := startManager(t, nil, func(o *app.Options) {
				// Every wait of a rollover is a TTL plus propagation; seconds here, hours in the field.
				o.MaxTTL = 2
				o.DNSSEC.Zones, o.DNSSEC.SecretNamespace, o.DNSSEC.Keys = []string{c.zone}, keysNS, c.keys
				o.DNSSEC.DNSKEYTTL, o.DNSSEC.DSTTL, o.DNSSEC.Propagation = 2*time.Second, time.Second, time.Second
				o.DNSSEC.DSCheckEvery, o.DNSSEC.Recheck = 300*time.Millisecond, 200*time.Millisecond
				o.DNSSEC.LookupDS = dnsservercontroller.ResolverDS(parent.addr.String(), time.Second)
			})
			server := netip.MustParseAddrPort(m.addr)
			validator := resolver.StartBIND(t, resolver.Config{Anchors: []dns.RR{parent.anchor}, Zones: []resolver.Zone{{Name: "test.", Server: parent.addr}, {Name: c.zone + ".", Server: server}}})
			// Signed but insecure while the parent holds no DS: the AD bit is the chain's.
			testenv.Eventually(t, 30*time.Second, func() string {
				if why := validated(validator, host); why != "no AD" {
					return "before the parent holds a DS: " + why
				}
				return ""
			})
			stopSync := parent.syncDS(t, c.zone, server)
			defer stopSync()
			// Secure once the parent holds the first key's DS.
			testenv.Eventually(t, 60*time.Second, func() string { return validated(validator, host) })
			w := watchValidation(validator, host)
			for _, roll := range c.rolls {
				before, _, err := keyring(t, keysNS, c.zone)
				if err != nil {
					t.Fatal(err)
				}
				role := map[dnssec.Rollover]dnssec.Role{dnssec.RollZSK: dnssec.ZSK, dnssec.RollKSK: dnssec.KSK}[roll]
				if c.keys == "csk" {
					role = dnssec.CSK
				}
				old := activeKey(before, role)
				annotate(t, keysNS, c.zone, dnsservercontroller.AnnotationRollover, string(roll))
				// Done when the old key is forgotten and another active in its place: every state
				// of the rollover has been served in between.
				testenv.Eventually(t, 90*time.Second, func() string {
					r, _, err := keyring(t, keysNS, c.zone)
					if err != nil {
						return err.Error()
					}
					if now := activeKey(r, role); now == "" || now == old || slices.ContainsFunc(r.Keys, func(k dnssec.Key) bool { return k.ID == old }) {
						return fmt.Sprintf("%s rollover of %s not done: %s", roll, old, r.Describe())
					}
					return ""
				})
			}
			ok, failures := w.stop()
			if len(failures) > 0 {
				t.Fatalf("the resolver did not validate %s throughout the rollovers: %d of %d answers failed, first: %s", host, len(failures), ok+len(failures), strings.Join(failures[:min(5, len(failures))], "; "))
			}
			if ok < 50 {
				t.Fatalf("only %d answers watched", ok)
			}
			t.Logf("%s: %d answers validated with AD through %v (%d queries timed out)", c.keys, ok, c.rolls, w.timeouts)

			// And a DS the zone's keys do not match makes the answer bogus: the resolver checks.
			stopSync()
			if err := parent.setDS(c.zone, &dns.DS{KeyTag: 1, Algorithm: dnssec.ECDSAP256SHA256, DigestType: dns.SHA256, Digest: strings.Repeat("ab", 32)}); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 30*time.Second, func() string {
				if why := validated(validator, host); why != "SERVFAIL" {
					return "with a DS of no key of the zone: " + why
				}
				return ""
			})
		})
	}
}

func activeKey(r dnssec.Keyring, role dnssec.Role) string {
	for _, k := range r.Keys {
		if k.Role == role && k.State == dnssec.Active {
			return k.ID
		}
	}
	return ""
}

// validated asks the resolver for host's A with DO, and says why the answer is not a validated
// one ("" when it is).
func validated(resolver netip.AddrPort, host string) string {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(host), dns.TypeA)
	m.SetEdns0(1232, true)
	m.AuthenticatedData = true
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, resolver.String())
	switch {
	case err != nil:
		return err.Error()
	case r.Rcode != dns.RcodeSuccess:
		return dns.RcodeToString[r.Rcode]
	case !r.AuthenticatedData:
		return "no AD"
	case len(r.Answer) == 0:
		return "no answer"
	}
	return ""
}

// watcher asks the resolver for a name every 50 ms until stopped, keeping what failed.
type watcher struct {
	done         chan struct{}
	wg           sync.WaitGroup
	ok, timeouts int
	failures     []string
}

func watchValidation(resolver netip.AddrPort, host string) *watcher {
	w := &watcher{done: make(chan struct{})}
	start := time.Now()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for {
			select {
			case <-w.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			switch why := validated(resolver, host); {
			case why == "":
				w.ok++
			case strings.Contains(why, "timeout"):
				// No answer is not a wrong one (a loaded machine); a validation failure is SERVFAIL.
				w.timeouts++
			default:
				w.failures = append(w.failures, fmt.Sprintf("at %v: %s", time.Since(start).Round(time.Millisecond), why))
			}
		}
	}()
	return w
}

func (w *watcher) stop() (int, []string) {
	close(w.done)
	w.wg.Wait()
	return w.ok, w.failures
}

// parentZone is a parent BIND: the zone signed by BIND itself (dnssec-policy), updatable with a
// TSIG key, holding a delegation (NS, glue) of each child.
type parentZone struct {
	zone   string
	addr   netip.AddrPort
	key    string
	secret string
	anchor *dns.DNSKEY
}

func startParent(t *testing.T, zone string, children ...string) *parentZone {
	t.Helper()
	p := &parentZone{zone: zone, addr: netip.MustParseAddrPort(freeport.Addr(t)), key: "parent-update."}
	p.secret = bind.TSIGKey(t, "parent-update")
	dir := t.TempDir()
	var db strings.Builder
	fmt.Fprintf(&db, "$TTL 1\n@ SOA ns1.%[1]s hostmaster.%[1]s 1 3600 600 86400 1\n@ NS ns1.%[1]s\nns1.%[1]s A 127.0.0.1\n", zone)
	for _, c := range children {
		fmt.Fprintf(&db, "%[1]s NS ns1.%[1]s\nns1.%[1]s A 127.0.0.1\n", c)
	}
	conf := bind.Options(dir, p.addr.Port()) + fmt.Sprintf(`key "parent-update" { algorithm hmac-sha256; secret %[2]q; };
dnssec-policy "lab" { keys { csk lifetime unlimited algorithm ecdsap256sha256; }; dnskey-ttl 1; max-zone-ttl 60; };
zone %[3]q { type primary; file "%[1]s/zone.db"; dnssec-policy "lab"; update-policy { grant "parent-update" subdomain %[3]s; }; };
`, dir, p.secret, zone)
	if err := os.WriteFile(filepath.Join(dir, "zone.db"), []byte(db.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	log := bind.Run(t, bind.Tool(t, "named"), dir, conf)
	// Signed once its DNSKEY set comes with a signature; the key with SEP is the resolver's anchor.
	testenv.Eventually(t, 30*time.Second, func() string {
		r, err := ask(p.addr, zone, dns.TypeDNSKEY)
		if err != nil {
			return err.Error() + "\n" + log.String()
		}
		signed := slices.ContainsFunc(r.Answer, func(rr dns.RR) bool { return rr.Header().Rrtype == dns.TypeRRSIG })
		for _, rr := range r.Answer {
			if k, ok := rr.(*dns.DNSKEY); ok && k.Flags&dns.SEP != 0 && signed {
				p.anchor = k
				return ""
			}
		}
		return "parent not signed yet: " + r.String()
	})
	return p
}

// syncDS is the parent's operator following the child's CDS set (RFC 8078): every 100 ms the
// child's server is asked for its CDS set, and the parent's DS set of the child made the same.
func (p *parentZone) syncDS(t *testing.T, child string, server netip.AddrPort) (stop func()) {
	done := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if err := p.copyCDS(child, server); err != nil {
				t.Logf("parent operator: %v", err)
			}
		}
	}()
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

func (p *parentZone) copyCDS(child string, server netip.AddrPort) error {
	child = dns.Fqdn(child)
	cds, err := ask(server, child, dns.TypeCDS)
	if err != nil {
		return err
	}
	var want []string
	var set []dns.RR
	for _, rr := range cds.Answer {
		if c, ok := rr.(*dns.CDS); ok {
			ds := c.DS
			ds.Hdr = dns.RR_Header{Name: child, Rrtype: dns.TypeDS, Class: dns.ClassINET, Ttl: 1}
			set = append(set, &ds)
			want = append(want, strings.ToLower(ds.Digest))
		}
	}
	have, err := ask(p.addr, child, dns.TypeDS)
	if err != nil {
		return err
	}
	var got []string
	for _, rr := range have.Answer {
		if ds, ok := rr.(*dns.DS); ok {
			got = append(got, strings.ToLower(ds.Digest))
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(set) == 0 || slices.Equal(want, got) {
		return nil
	}
	return p.setDS(child, set...)
}

// setDS makes the parent's DS set of child set, by a TSIG-signed update.
func (p *parentZone) setDS(child string, set ...dns.RR) error {
	child = dns.Fqdn(child)
	for _, rr := range set {
		*rr.Header() = dns.RR_Header{Name: child, Rrtype: dns.TypeDS, Class: dns.ClassINET, Ttl: 1}
	}
	m := new(dns.Msg)
	m.SetUpdate(p.zone)
	m.RemoveRRset([]dns.RR{&dns.DS{Hdr: dns.RR_Header{Name: child, Rrtype: dns.TypeDS, Class: dns.ClassINET}}})
	m.Insert(set)
	m.SetTsig(p.key, dns.HmacSHA256, 300, time.Now().Unix())
	r, _, err := (&dns.Client{Timeout: 2 * time.Second, TsigSecret: map[string]string{p.key: p.secret}}).Exchange(m, p.addr.String())
	if err != nil {
		return fmt.Errorf("updating the DS of %s: %w", child, err)
	}
	if r.Rcode != dns.RcodeSuccess {
		return fmt.Errorf("updating the DS of %s: %s", child, dns.RcodeToString[r.Rcode])
	}
	return nil
}

func ask(server netip.AddrPort, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	m.RecursionDesired = false
	m.SetEdns0(1232, true)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(m, server.String())
	if err != nil {
		return nil, fmt.Errorf("asking %s for %s %s: %w", server, name, dns.TypeToString[qtype], err)
	}
	return r, nil
}

// A secondary of a signed zone signs it itself, with the same keys (docs/dnssec.md): the private
// halves in the keys' Secret, PKCS#8 PEM, are taken as they are by Knot DNS's keymgr import-pem, which
// then publishes the very DNSKEY the Secret holds.
func TestDNSSECKeysImportIntoKnot(t *testing.T) {
	p := dnssec.Policy{Algorithm: dnssec.ECDSAP256SHA256, DNSKEYTTL: time.Hour, MaxZoneTTL: time.Hour, DSTTL: time.Hour, DSCheckEvery: time.Minute}
	for _, alg := range []uint8{dnssec.ECDSAP256SHA256, dnssec.ED25519} {
		p.Algorithm = alg
		st, err := dnssec.StepKeys(dnssec.Keyring{Zone: "example.com"}, p, time.Now(), "", dnssec.ParentDS{})
		if err != nil {
			t.Fatal(err)
		}
		key := st.Keys.Keys[0]
		data, err := dnssec.Marshal(st.Keys)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "db"), 0o700); err != nil {
			t.Fatal(err)
		}
		pem := filepath.Join(dir, "key.pem")
		if err := os.WriteFile(pem, data[key.ID+".private"], 0o600); err != nil {
			t.Fatal(err)
		}
		conf := filepath.Join(dir, "knot.conf")
		text := fmt.Sprintf("server:\n    rundir: %[1]s\ndatabase:\n    storage: %[1]s/db\nzone:\n  - domain: example.com.\n    storage: %[1]s\n", dir)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		keymgr := bind.Tool(t, "keymgr")
		if out, err := exec.Command(keymgr, "-c", conf, "example.com.", "import-pem", pem, fmt.Sprintf("algorithm=%d", alg), "ksk=yes", "zsk=yes").CombinedOutput(); err != nil {
			t.Fatalf("keymgr import-pem: %v\n%s", err, out)
		}
		out, err := exec.Command(keymgr, "-c", conf, "example.com.", "dnskey").CombinedOutput()
		if err != nil {
			t.Fatalf("keymgr dnskey: %v\n%s", err, out)
		}
		want := fmt.Sprintf("example.com. DNSKEY 257 3 %d %s", alg, key.DNSKEY.PublicKey)
		if strings.TrimSpace(string(out)) != want {
			t.Fatalf("algorithm %d: Knot publishes %q, the Secret holds %q", alg, out, want)
		}
	}
}
