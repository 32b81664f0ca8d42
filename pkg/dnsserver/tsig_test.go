package dnsserver

import (
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Keys as tsig-keygen prints them, one per algorithm, with the comments a named.conf include has.
const keyFile = `# made with tsig-keygen
key "xfr-256" {
	algorithm hmac-sha256;
	secret "c2VjcmV0LXNoYXJlZC13aXRoLXRoZS1zZWNvbmRhcnk=";
};
// SHA-384
key "xfr-384" { algorithm hmac-sha384; secret "Mzg0LWJpdC1rZXktbWF0ZXJpYWwtZm9yLXRoZS10ZXN0cw=="; };
/* SHA-512 */ key xfr-512 { algorithm hmac-sha512; secret "NTEyLWJpdC1rZXktbWF0ZXJpYWwtZm9yLXRoZS10ZXN0cy4uLi4uLi4uLi4uLi4uLg=="; };
`

func TestParseTSIGKeys(t *testing.T) {
	keys, err := ParseTSIGKeys(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || keys[1].Name != "xfr-384" || keys[1].Algorithm != "hmac-sha384" || keys[2].Name != "xfr-512" {
		t.Fatalf("parsed %+v", keys)
	}
	for name, text := range map[string]string{
		"no secret":       `key "a" { algorithm hmac-sha256; };`,
		"not base64":      `key "a" { secret "***"; };`,
		"short secret":    `key "a" { secret "YQ=="; };`,
		"sha1":            `key "a" { algorithm hmac-sha1; secret "c2VjcmV0LXNoYXJlZC13aXRoLXRoZS1zZWNvbmRhcnk="; };`,
		"unknown field":   `key "a" { colour blue; };`,
		"missing brace":   `key "a" secret "x";`,
		"twice":           `key "a" { secret "c2VjcmV0LXNoYXJlZC13aXRoLXRoZS1zZWNvbmRhcnk="; }; key "A." { secret "c2VjcmV0LXNoYXJlZC13aXRoLXRoZS1zZWNvbmRhcnk="; };`,
		"unterminated":    `key "a { secret`,
		"comment runs on": `/* key`,
	} {
		if _, err := ParseTSIGKeys(text); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), "c2VjcmV0") {
			t.Errorf("%s: the error shows the secret: %v", name, err)
		}
	}
}

// signedTransfer runs an AXFR signed with a key of any algorithm.
func signedTransfer(t *testing.T, s *Server, zone string, key TSIGKey) (int, error) {
	t.Helper()
	m := new(dns.Msg).SetAxfr(zone)
	m.SetTsig(dns.Fqdn(key.Name), dns.Fqdn(key.Algorithm), 300, time.Now().Unix())
	tr := &dns.Transfer{TsigSecret: map[string]string{dns.Fqdn(key.Name): key.Secret}}
	ch, err := tr.In(m, s.Addr().String())
	if err != nil {
		return 0, err
	}
	n := 0
	for env := range ch {
		if env.Error != nil {
			return n, env.Error
		}
		n += len(env.RR)
	}
	return n, nil
}

// Keys are per zone: a key allowed for zone a may not transfer zone b; SHA-384 and SHA-512 keys
// work like SHA-256 ones.
func TestTransferKeysPerZone(t *testing.T) {
	keys, err := ParseTSIGKeys(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, Options{TSIGKeys: keys, TransferKeys: map[string][]string{
		"a.example": {"xfr-256", "xfr-384"}, "b.example": {"xfr-512"},
	}})
	for _, z := range []string{"a.example", "b.example"} {
		setZone(t, s, z, ZoneData{Endpoints: []*v1alpha1.Endpoint{ep("www."+z, "A", 60, "192.0.2.1")}})
	}
	for _, c := range []struct {
		zone string
		key  TSIGKey
		ok   bool
	}{
		{"a.example.", keys[0], true},
		{"a.example.", keys[1], true},
		{"b.example.", keys[2], true},
		{"b.example.", keys[0], false},
		{"a.example.", keys[2], false},
	} {
		n, err := signedTransfer(t, s, c.zone, c.key)
		if c.ok && (err != nil || n != 4) {
			t.Errorf("%s with %s: %d records, %v", c.zone, c.key.Name, n, err)
		}
		if !c.ok && (err == nil || n != 0) {
			t.Errorf("%s with %s (not allowed): %d records, %v", c.zone, c.key.Name, n, err)
		}
	}
	if v := metricValue(t, s, "dnspolicy_dnsserver_refused_total", `reason="transfer not allowed"`); v != 2 {
		t.Errorf("refused transfers %v", v)
	}
}

// A signed request is accepted within min(its fudge, 300 s) of the server's clock: a request
// claiming a fudge of an hour, signed ten minutes ago (a capture being replayed), is BADTIME, though
// its own fudge would cover it.
func TestFudgeIsCapped(t *testing.T) {
	s := startServer(t, Options{TSIGKeys: testKeys, TransferKeys: testTransferKeys})
	simpleZone(t, s)
	query := func(age time.Duration, fudge uint16) *dns.Msg {
		m := new(dns.Msg).SetQuestion("www.example.com.", dns.TypeA)
		m.SetTsig(testKey, dns.HmacSHA256, fudge, time.Now().Add(-age).Unix())
		c := &dns.Client{TsigSecret: map[string]string{testKey: testSecret}}
		resp, _, _ := c.Exchange(m, s.Addr().String())
		if resp == nil {
			t.Fatalf("no answer (age %s, fudge %d)", age, fudge)
		}
		return resp
	}
	if r := query(10*time.Minute, 3600); r.Rcode != dns.RcodeNotAuth || r.IsTsig() == nil || r.IsTsig().Error != dns.RcodeBadTime {
		t.Errorf("replayed within its own fudge: %v", r)
	}
	if r := query(4*time.Minute, 3600); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Errorf("within 300 s: %v", r)
	}
	if r := query(2*time.Minute, 60); r.Rcode != dns.RcodeNotAuth || r.IsTsig().Error != dns.RcodeBadTime {
		t.Errorf("outside a fudge smaller than the cap: %v", r)
	}
}

// A captured signed transfer request, replayed once the server's clock has moved past the fudge,
// is refused with BADTIME; the same bytes were accepted when fresh.
func TestReplayedRequestIsRefused(t *testing.T) {
	var offset atomic.Int64
	s := startServer(t, Options{TSIGKeys: testKeys, TransferKeys: testTransferKeys,
		Now: func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }})
	simpleZone(t, s)
	m := new(dns.Msg).SetQuestion("example.com.", dns.TypeSOA)
	m.SetTsig(testKey, dns.HmacSHA256, 300, time.Now().Unix())
	captured, _, err := dns.TsigGenerate(m, testSecret, "", false)
	if err != nil {
		t.Fatal(err)
	}
	send := func() *dns.Msg {
		conn, err := net.Dial("udp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := conn.Write(captured); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4096)
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		resp := new(dns.Msg)
		if err := resp.Unpack(buf[:n]); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	if r := send(); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Fatalf("fresh: %v", r)
	}
	offset.Store(int64(301 * time.Second))
	if r := send(); r.Rcode != dns.RcodeNotAuth || r.IsTsig() == nil || r.IsTsig().Error != dns.RcodeBadTime {
		t.Fatalf("replayed after 301 s: %v", r)
	}
}
