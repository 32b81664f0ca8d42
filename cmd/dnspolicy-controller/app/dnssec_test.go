package app

import (
	"strings"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
)

// The DNSSEC flags, from the command line and the environment, make the rollovers' policy; the
// zone's largest TTL is --max-ttl's.
func TestParseDNSSECFlags(t *testing.T) {
	o, err := Parse([]string{"--dnssec-zones=Example.COM., b.example.org", "--dnssec-keys=ksk-zsk", "--dnssec-zsk-lifetime=720h",
		"--dnssec-ds-resolver=127.0.0.1:5353", "--max-ttl=600", "--dnssec-signature-cache-bytes=1048576"}, env(map[string]string{
		"DNSPOLICY_DNSSEC_ALGORITHM":        "15",
		"DNSPOLICY_DNSSEC_SECRET_NAMESPACE": "keys",
		"DNSPOLICY_DNSSEC_DS_TTL":           "2h",
	}))
	if err != nil {
		t.Fatal(err)
	}
	d := o.DNSSEC
	if strings.Join(d.Zones, ",") != "example.com,b.example.org" || d.DSResolver != "127.0.0.1:5353" {
		t.Fatalf("options %+v", d)
	}
	if got := o.dnsServerOptions(nil).DNSSECCacheBytes; got != 1<<20 {
		t.Fatalf("the server's signature cache bound is %d, want the flag's 1048576", got)
	}
	p, err := d.policy(o.MaxTTL)
	if err != nil {
		t.Fatal(err)
	}
	want := dnssec.Policy{Algorithm: dnssec.ED25519, Split: true, ZSKLifetime: 720 * time.Hour, DNSKEYTTL: time.Hour,
		MaxZoneTTL: 600 * time.Second, DSTTL: 2 * time.Hour, Propagation: 5 * time.Minute, DSCheckEvery: 10 * time.Minute}
	if p != want {
		t.Fatalf("policy %+v, want %+v", p, want)
	}
	if ns, err := o.secretNamespace(); err != nil || ns != "keys" {
		t.Fatalf("namespace %q, %v", ns, err)
	}
	o.DNSSEC.SecretNamespace, o.LeaderElectionNamespace = "", "dnspolicy-system"
	if ns, err := o.secretNamespace(); err != nil || ns != "dnspolicy-system" {
		t.Fatalf("namespace %q, %v: the leader election's is the controller's", ns, err)
	}

	o, err = Parse(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := o.DNSSEC.policy(o.MaxTTL); err != nil || p.Algorithm != dnssec.ECDSAP256SHA256 || p.Split || p.ZSKLifetime != 0 || len(o.DNSSEC.Zones) != 0 {
		t.Fatalf("defaults %+v, %v", p, err)
	}
	if got := o.dnsServerOptions(nil).DNSSECCacheBytes; got != dnsserver.DefaultDNSSECCacheBytes {
		t.Fatalf("the server's signature cache bound is %d by default, want %d", got, dnsserver.DefaultDNSSECCacheBytes)
	}
}

func TestParseDNSSECRejectsBadValues(t *testing.T) {
	for flag, want := range map[string]string{
		"--dnssec-algorithm=8":             "--dnssec-algorithm: 8",
		"--dnssec-keys=zsk":                `--dnssec-keys: "zsk"`,
		"--dnssec-zsk-lifetime=720h":       "a ZSK lifetime needs a KSK and a ZSK",
		"--dnssec-ds-resolver=1.2.3.4":     "--dnssec-ds-resolver",
		"--dnssec-dnskey-ttl=0s":           "must be positive",
		"--dnssec-propagation=-1s":         "cannot be negative",
		"--dnssec-signature-cache-bytes=0": "--dnssec-signature-cache-bytes: 0 must be positive",
	} {
		if _, err := Parse([]string{flag}, env(nil)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", flag, err, want)
		}
	}
}
