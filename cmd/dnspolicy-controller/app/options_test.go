package app

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// Every flag can be set by its environment variable; the command line wins.
func TestParseFlagsAndEnvironment(t *testing.T) {
	o, err := Parse([]string{"--log-level=debug", "--watch-namespaces=a, b"}, env(map[string]string{
		"DNSPOLICY_LOG_LEVEL":            "error",
		"DNSPOLICY_METRICS_BIND_ADDRESS": "127.0.0.1:9090",
		"DNSPOLICY_LEADER_ELECT":         "true",
		"DNSPOLICY_LOG_FORMAT":           "console",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if o.LogLevel != "debug" {
		t.Errorf("command line must win over the environment: log level %q", o.LogLevel)
	}
	if o.MetricsBindAddress != "127.0.0.1:9090" || !o.LeaderElect || o.LogFormat != "console" {
		t.Errorf("environment not applied: %+v", o)
	}
	if !reflect.DeepEqual(o.WatchNamespaces, []string{"a", "b"}) {
		t.Errorf("watch namespaces %v", o.WatchNamespaces)
	}
	if EnvName("health-probe-bind-address") != "DNSPOLICY_HEALTH_PROBE_BIND_ADDRESS" {
		t.Errorf("EnvName = %s", EnvName("health-probe-bind-address"))
	}
}

func TestParseRejectsBadValues(t *testing.T) {
	for name, args := range map[string][]string{
		"log format":      {"--log-format=xml"},
		"log level":       {"--log-level=loud"},
		"unknown flag":    {"--no-such-flag"},
		"stray argument":  {"extra"},
		"unknown backend": {"--providers=inmemory,carrier-pigeon"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(args, env(nil)); err == nil {
				t.Errorf("Parse(%v) accepted", args)
			}
		})
	}
	if _, err := Parse(nil, env(map[string]string{"DNSPOLICY_LEADER_ELECT": "maybe"})); err == nil {
		t.Error("a bad environment value was accepted")
	}
}

// --watch-provider-secrets defaults to on (the record controller watches Secrets' metadata) and
// --version only asks for the version.
func TestParseSecretWatchAndVersion(t *testing.T) {
	o, err := Parse(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if o.NoProviderSecretWatch || o.PrintVersion {
		t.Errorf("defaults: %+v", o)
	}
	if o, err = Parse([]string{"--watch-provider-secrets=false", "--version"}, env(nil)); err != nil {
		t.Fatal(err)
	}
	if !o.NoProviderSecretWatch || !o.PrintVersion {
		t.Errorf("flags not applied: %+v", o)
	}
	if o, err = Parse(nil, env(map[string]string{"DNSPOLICY_WATCH_PROVIDER_SECRETS": "false"})); err != nil || !o.NoProviderSecretWatch {
		t.Errorf("environment not applied: %v %+v", err, o)
	}
}

// --insecure-health-checks defaults to false (Kuadrant's default is true: ours verifies
// certificates unless told otherwise).
func TestParseHealthCheckFlags(t *testing.T) {
	o, err := Parse(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if o.InsecureHealthChecks || o.MaxConcurrentHealthChecks <= 0 || o.NoHealthProbeController {
		t.Errorf("defaults: insecure %v, max concurrent %d, no probe controller %v", o.InsecureHealthChecks, o.MaxConcurrentHealthChecks, o.NoHealthProbeController)
	}
	if o.AllowProviderEndpointOverride {
		t.Error("provider Secrets' ENDPOINT_URL is honoured by default")
	}
	if o, err = Parse([]string{"--allow-provider-endpoint-override"}, env(nil)); err != nil || !o.AllowProviderEndpointOverride {
		t.Errorf("--allow-provider-endpoint-override not applied: %v", err)
	}
	if o, err = Parse([]string{"--insecure-health-checks", "--max-concurrent-health-checks=8", "--enable-health-probe-controller=false"}, env(nil)); err != nil {
		t.Fatal(err)
	}
	if !o.InsecureHealthChecks || o.MaxConcurrentHealthChecks != 8 || !o.NoHealthProbeController {
		t.Errorf("flags not applied: %+v", o)
	}
	if o, err = Parse(nil, env(map[string]string{"DNSPOLICY_INSECURE_HEALTH_CHECKS": "true"})); err != nil || !o.InsecureHealthChecks {
		t.Errorf("environment not applied: %v %+v", err, o)
	}
}

// The health-check target rules: none by default (the prober's defaults refuse loopback and the
// rest), CIDR lists from flags or the environment, a bad item refused naming the flag.
func TestParseHealthCheckCIDRFlags(t *testing.T) {
	o, err := Parse(nil, env(nil))
	if err != nil || o.HealthCheckAllowedCIDRs != nil || o.HealthCheckDeniedCIDRs != nil {
		t.Fatalf("defaults: %v %v %v", err, o.HealthCheckAllowedCIDRs, o.HealthCheckDeniedCIDRs)
	}
	o, err = Parse([]string{"--health-check-allowed-cidrs=127.0.0.0/8, ::1"}, env(map[string]string{"DNSPOLICY_HEALTH_CHECK_DENIED_CIDRS": "10.0.0.0/8"}))
	if err != nil || fmt.Sprint(o.HealthCheckAllowedCIDRs) != "[127.0.0.0/8 ::1/128]" || fmt.Sprint(o.HealthCheckDeniedCIDRs) != "[10.0.0.0/8]" {
		t.Errorf("%v: allowed %v denied %v", err, o.HealthCheckAllowedCIDRs, o.HealthCheckDeniedCIDRs)
	}
	for _, flag := range []string{"--health-check-allowed-cidrs=10.0.0.0/33", "--health-check-denied-cidrs=gateway"} {
		if _, err := Parse([]string{flag}, env(nil)); err == nil || !strings.Contains(err.Error(), strings.Split(flag, "=")[0]) {
			t.Errorf("%s: %v", flag, err)
		}
	}
}

// The multi-cluster flags: peers and who signs their pulls, who may pull our export, and the pace.
func TestParsePeerFlags(t *testing.T) {
	o, err := Parse([]string{"--dns-tsig-key-file=/keys/tsig.conf",
		"--dns-peers=gslb.example.com=ns2.example.com:53,GSLB.example.com.=192.0.2.3:5353",
		"--dns-peer-keys=gslb.example.com=peer", "--dns-export-keys=gslb.example.com=peer",
		"--dns-export-prefixes=gslb.example.com=198.51.100.0/24,gslb.example.com=2001:db8::/32",
		"--dns-peer-pull-interval=3s", "--dns-peer-max-bytes=1048576"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	d := o.DNSServer
	if !reflect.DeepEqual(d.Peers, map[string][]string{"gslb.example.com": {"ns2.example.com:53", "192.0.2.3:5353"}}) ||
		!reflect.DeepEqual(d.PeerKeys, map[string][]string{"gslb.example.com": {"peer"}}) ||
		d.PeerPullInterval.String() != "3s" || d.PeerPullTimeout.String() != "5s" || d.PeerMaxBytes != 1<<20 {
		t.Errorf("parsed %+v", d)
	}
	access := d.exports()["gslb.example.com"]
	if !reflect.DeepEqual(access.Keys, []string{"peer"}) || len(access.Prefixes) != 2 || access.Prefixes[1].String() != "2001:db8::/32" {
		t.Errorf("export access %+v", access)
	}
	if got := d.exportedZones(); !reflect.DeepEqual(got, []string{"gslb.example.com"}) {
		t.Errorf("exported zones %v", got)
	}
	if !d.hasPeers() || d.PeerDiscovery != nil || d.PeerPort != 53 || d.PeerDiscoveryInterval.String() != "1m0s" {
		t.Errorf("peer discovery defaults %+v", d)
	}

	// Peers found in the NS set: the servers asked, the port, the pace; the pool has the zone.
	// Pulled unsigned, which must be asked for.
	o, err = Parse([]string{"--dns-peer-discovery=gslb.example.com=192.0.2.53:53,gslb.example.com=[2001:db8::53]:53",
		"--dns-peer-port=5353", "--dns-peer-discovery-interval=30s", "--dns-peer-allow-unsigned"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	d = o.DNSServer
	if !reflect.DeepEqual(d.PeerDiscovery, map[string][]string{"gslb.example.com": {"192.0.2.53:53", "[2001:db8::53]:53"}}) ||
		d.PeerPort != 5353 || d.PeerDiscoveryInterval.String() != "30s" || !d.hasPeers() || d.PeerMaxBytes != 16<<20 {
		t.Errorf("parsed %+v", d)
	}
	pool, err := d.peerPool(nil, "127.0.0.2:53", time.Minute, nil, logr.Discard())
	if err != nil || pool == nil || !pool.HasPeers("gslb.example.com") {
		t.Errorf("pool %v, %v: want one with peers of gslb.example.com", pool, err)
	}

	// Without it, a zone with peers and no key is a start-up error that names the zone.
	for _, unsigned := range [][]string{
		{"--dns-peers=gslb.example.com=192.0.2.3:53"},
		{"--dns-peer-discovery=gslb.example.com=192.0.2.53:53"},
		{"--dns-tsig-key-file=/keys/tsig.conf", "--dns-peer-keys=other.example.com=peer", "--dns-peers=gslb.example.com=192.0.2.3:53,other.example.com=192.0.2.4:53"},
	} {
		if _, err := Parse(unsigned, env(nil)); err == nil || err.Error() != "peer pulls of zone gslb.example.com are unsigned; give --dns-peer-keys or --dns-peer-allow-unsigned" {
			t.Errorf("Parse(%v): %v", unsigned, err)
		}
	}
	for _, bad := range [][]string{
		{"--dns-peer-discovery=gslb.example.com=no-port", "--dns-peer-allow-unsigned"},
		{"--dns-peer-port=0"},
		{"--dns-peer-discovery-interval=0s"},
		{"--dns-peers=gslb.example.com=no-port", "--dns-peer-allow-unsigned"},
		{"--dns-peers=192.0.2.3:53", "--dns-peer-allow-unsigned"},
		{"--dns-export-prefixes=gslb.example.com=300.0.0.0/8"},
		{"--dns-peer-keys=gslb.example.com=peer"}, // no key file or Secret
		{"--dns-peer-pull-timeout=0s"},
		{"--dns-peer-max-bytes=0"},
	} {
		if _, err := Parse(bad, env(nil)); err == nil {
			t.Errorf("Parse(%v) accepted", bad)
		}
	}
}

// Metrics are plain HTTP by default (make run), and with --metrics-secure served over HTTPS behind
// the API server's authentication and authorization.
func TestMetricsSecure(t *testing.T) {
	o, err := Parse(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if m := o.metricsOptions(); o.MetricsSecure || m.SecureServing || m.FilterProvider != nil {
		t.Errorf("defaults: secure %v, serving %v, filter %v; want plain HTTP", o.MetricsSecure, m.SecureServing, m.FilterProvider != nil)
	}
	if o, err = Parse([]string{"--metrics-secure", "--metrics-bind-address=:8443"}, env(nil)); err != nil {
		t.Fatal(err)
	}
	if m := o.metricsOptions(); !m.SecureServing || m.FilterProvider == nil || m.BindAddress != ":8443" {
		t.Errorf("--metrics-secure: serving %v, filter %v, address %q", m.SecureServing, m.FilterProvider != nil, m.BindAddress)
	}
}

// The nameserver names' addresses reach the server's options, by canonical name; a value that is
// not an address is refused at start.
func TestNameserverAddresses(t *testing.T) {
	o, err := Parse([]string{"--dns-nameserver-addresses=NS1.demo.example.com.=192.0.2.1,ns1.demo.example.com=2001:db8::1,ns2.demo.example.com=::ffff:192.0.2.2"}, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]netip.Addr{
		"ns1.demo.example.com": {netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")},
		"ns2.demo.example.com": {netip.MustParseAddr("192.0.2.2")},
	}
	if got := o.dnsServerOptions(nil).NameserverAddresses; !reflect.DeepEqual(got, want) {
		t.Errorf("nameserver addresses %v, want %v", got, want)
	}
	for _, bad := range []string{"ns1.demo.example.com=ns2.demo.example.com", "192.0.2.1", "ns1.demo.example.com=fe80::1%eth0"} {
		if _, err := Parse([]string{"--dns-nameserver-addresses=" + bad}, env(nil)); err == nil {
			t.Errorf("--dns-nameserver-addresses=%s accepted", bad)
		}
	}
}

// --max-ttl caps every record's TTL: a day by default, raised up to DNS's largest TTL, and handed
// to the record controller and the embedded server.
func TestParseMaxTTL(t *testing.T) {
	o, err := Parse(nil, env(nil))
	if err != nil || o.MaxTTL != 86400 || o.dnsServerOptions(nil).MaxTTL != 86400 {
		t.Errorf("default: %v, %d", err, o.MaxTTL)
	}
	if o, err = Parse([]string{"--max-ttl=2147483647"}, env(nil)); err != nil || o.MaxTTL != 2147483647 || o.dnsServerOptions(nil).MaxTTL != 2147483647 {
		t.Errorf("raised: %v, %d", err, o.MaxTTL)
	}
	for _, bad := range []string{"--max-ttl=0", "--max-ttl=2147483648"} {
		if _, err := Parse([]string{bad}, env(nil)); err == nil || !strings.Contains(err.Error(), "--max-ttl must be from 1 to 2147483647") {
			t.Errorf("Parse(%s): %v", bad, err)
		}
	}
}
