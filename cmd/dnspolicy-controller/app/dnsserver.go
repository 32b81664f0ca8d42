package app

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/peers"
)

// DNSServerOptions are the embedded DNS server's tenancy, TSIG and resource settings
// (docs/embedded-dns.md lists each beside BIND's equivalent).
type DNSServerOptions struct {
	// ZoneNamespaces (--dns-zone-namespaces) grants, by zone, the zone to namespaces: shorthand
	// for --grant, added to Options.Grants.
	ZoneNamespaces map[string][]string
	// TSIGKeyFile is a file of BIND key statements (tsig-keygen's output), e.g. a mounted Secret.
	TSIGKeyFile string
	// TSIGSecret is namespace/name of a Secret whose values are BIND key statements, read at start.
	TSIGSecret string
	// TransferKeys names, by zone, the keys that may transfer it; the first signs its NOTIFYs.
	TransferKeys map[string][]string
	// GeoIPReloadInterval is how often the geo database file is checked for a change.
	GeoIPReloadInterval time.Duration
	MaxUDPSize          int
	MaxTCPConnections   int
	MaxTCPPerSource     int
	MaxTCPQueries       int
	TCPIdleTimeout      time.Duration
	TCPWriteTimeout     time.Duration
	RateLimit           dnsserver.RateLimit

	// Peers lists, by zone, the host:port of other clusters' servers whose exports are merged in
	// (docs/multicluster-dns.md).
	Peers map[string][]string
	// PeerKeys names, by zone, the TSIG key that signs pulls of its peers' exports (the first).
	PeerKeys map[string][]string
	// PeerAllowUnsigned lets a zone with peers and no key in PeerKeys pull unsigned; without it
	// such a zone is a start-up error, so that no pull is unsigned by omission.
	PeerAllowUnsigned bool
	// ExportKeys and ExportPrefixes say, by zone, who may pull this cluster's export: peers
	// signing with one of the keys, or unsigned from one of the prefixes.
	ExportKeys     map[string][]string
	ExportPrefixes map[string][]netip.Prefix
	// PeerPullInterval and PeerPullTimeout pace and bound the pulls of each peer.
	PeerPullInterval time.Duration
	PeerPullTimeout  time.Duration
	// PeerMaxBytes bounds one pull of a peer's export: a larger transfer is cut off and fails.
	PeerMaxBytes int64
	// PeerDiscovery lists, by zone, the servers (host:port) asked for the zone's NS set, whose
	// servers other than this cluster's are peers too; PeerPort is the port they serve on, and
	// PeerDiscoveryInterval how often the NS set is asked again.
	PeerDiscovery         map[string][]string
	PeerPort              int
	PeerDiscoveryInterval time.Duration
	// NameserverAddresses are the addresses of the nameserver names (--dns-nameservers) by name:
	// a zone whose nameserver is inside it answers that name and sends it as glue from here, so a
	// delegation to the server is not lame and no record can redirect the zone's resolvers.
	NameserverAddresses map[string][]netip.Addr
}

func defaultDNSServerOptions() DNSServerOptions {
	return DNSServerOptions{
		GeoIPReloadInterval:   dnsserver.DefaultGeoIPReloadInterval,
		MaxUDPSize:            1232,
		MaxTCPConnections:     dnsserver.DefaultMaxTCPConnections,
		MaxTCPPerSource:       dnsserver.DefaultMaxTCPConnectionsPerSource,
		MaxTCPQueries:         dnsserver.DefaultMaxTCPQueries,
		TCPIdleTimeout:        dnsserver.DefaultTCPIdleTimeout,
		TCPWriteTimeout:       dnsserver.DefaultTCPWriteTimeout,
		RateLimit:             dnsserver.RateLimit{Slip: 2, IPv4PrefixLength: 24, IPv6PrefixLength: 56},
		PeerPullInterval:      peers.DefaultInterval,
		PeerPullTimeout:       peers.DefaultTimeout,
		PeerMaxBytes:          peers.DefaultMaxBytes,
		PeerPort:              53,
		PeerDiscoveryInterval: peers.DefaultDiscoverInterval,
	}
}

// dnsServerFlags registers the flags and returns a function that parses the list-valued ones once
// the flag set has been parsed.
func (d *DNSServerOptions) dnsServerFlags(fs *flag.FlagSet) func() error {
	zoneNamespaces := fs.String("dns-zone-namespaces", "", "Comma-separated zone=namespace pairs (a zone may repeat): shorthand for --grant namespace=zone, a grant of the zone and every name below it.")
	fs.StringVar(&d.TSIGKeyFile, "dns-tsig-key-file", d.TSIGKeyFile, "File of BIND key statements (tsig-keygen output; hmac-sha256/384/512), e.g. a mounted Secret.")
	fs.StringVar(&d.TSIGSecret, "dns-tsig-secret", d.TSIGSecret, "namespace/name of a Secret whose values are BIND key statements, read at start.")
	transferKeys := fs.String("dns-transfer-keys", "", "Comma-separated zone=keyname pairs (a zone may repeat): the TSIG keys allowed to transfer a zone; the first also signs its NOTIFYs. A zone not listed cannot be transferred.")
	fs.DurationVar(&d.GeoIPReloadInterval, "dns-geoip-reload-interval", d.GeoIPReloadInterval, "How often the geo database file is checked and reloaded when it changed; 0 or negative: never.")
	fs.IntVar(&d.MaxUDPSize, "dns-max-udp-size", d.MaxUDPSize, "Largest UDP answer; larger ones are truncated so the client retries over TCP.")
	fs.IntVar(&d.MaxTCPConnections, "dns-max-tcp-connections", d.MaxTCPConnections, "Open TCP connections at most; more are closed at accept. Negative: no limit.")
	fs.IntVar(&d.MaxTCPPerSource, "dns-max-tcp-connections-per-source", d.MaxTCPPerSource, "Open TCP connections from one client address at most. Negative: no limit.")
	fs.IntVar(&d.MaxTCPQueries, "dns-max-tcp-queries", d.MaxTCPQueries, "Queries one TCP connection may send before it is closed. Negative: no limit.")
	fs.DurationVar(&d.TCPIdleTimeout, "dns-tcp-idle-timeout", d.TCPIdleTimeout, "How long a TCP connection may wait for its next query.")
	fs.DurationVar(&d.TCPWriteTimeout, "dns-tcp-write-timeout", d.TCPWriteTimeout, "Time to write one message, each zone transfer message included, before the connection is closed.")
	fs.IntVar(&d.RateLimit.ResponsesPerSecond, "dns-rrl-responses-per-second", d.RateLimit.ResponsesPerSecond, "Response rate limiting over UDP: answers per second per client prefix; 0: off.")
	fs.IntVar(&d.RateLimit.Slip, "dns-rrl-slip", d.RateLimit.Slip, "Every Nth rate-limited answer is sent truncated (the client retries over TCP), the others dropped; 0: drop all.")
	fs.IntVar(&d.RateLimit.IPv4PrefixLength, "dns-rrl-ipv4-prefix-length", d.RateLimit.IPv4PrefixLength, "IPv4 prefix length that groups clients for rate limiting.")
	fs.IntVar(&d.RateLimit.IPv6PrefixLength, "dns-rrl-ipv6-prefix-length", d.RateLimit.IPv6PrefixLength, "IPv6 prefix length that groups clients for rate limiting.")
	peerList := fs.String("dns-peers", "", "Comma-separated zone=host:port pairs (a zone may repeat): other clusters' DNS servers serving the zone, whose exports are pulled and merged with this cluster's records (docs/multicluster-dns.md).")
	peerKeys := fs.String("dns-peer-keys", "", "Comma-separated zone=keyname pairs: the TSIG key that signs pulls of the zone's peers' exports. A zone with peers must have one unless --dns-peer-allow-unsigned is set.")
	fs.BoolVar(&d.PeerAllowUnsigned, "dns-peer-allow-unsigned", d.PeerAllowUnsigned, "Let zones with peers and no --dns-peer-keys key pull their exports unsigned (the peers must then allow our source address, --dns-export-prefixes); without it such a zone is a start-up error.")
	exportKeys := fs.String("dns-export-keys", "", "Comma-separated zone=keyname pairs (a zone may repeat): the TSIG keys with which other clusters may pull this cluster's export of the zone.")
	exportPrefixes := fs.String("dns-export-prefixes", "", "Comma-separated zone=prefix pairs (a zone may repeat): source prefixes (CIDR) from which other clusters may pull this cluster's export of the zone unsigned.")
	fs.DurationVar(&d.PeerPullInterval, "dns-peer-pull-interval", d.PeerPullInterval, "How often each peer's export is pulled.")
	fs.DurationVar(&d.PeerPullTimeout, "dns-peer-pull-timeout", d.PeerPullTimeout, "Time one pull of a peer's export may take, dial included.")
	fs.Int64Var(&d.PeerMaxBytes, "dns-peer-max-bytes", d.PeerMaxBytes, "Bytes one pull of a peer's export may transfer: a larger one is cut off and fails, and the peer's last good export is kept (16 MiB holds some 100,000 endpoints).")
	discovery := fs.String("dns-peer-discovery", "", "Comma-separated zone=host:port pairs (a zone may repeat): servers asked, in turn, for the zone's NS set (the parent zone's servers, or a resolver); the servers it names are peers too, all but this cluster's own, which its export names.")
	nsAddrs := fs.String("dns-nameserver-addresses", "", "Comma-separated name=IP pairs (a name may repeat): the addresses of the --dns-nameservers names, answered and sent as glue by the zones the names are inside of (records at those names are refused).")
	fs.IntVar(&d.PeerPort, "dns-peer-port", d.PeerPort, "Port the servers of a zone's NS set serve on (--dns-peer-discovery).")
	fs.DurationVar(&d.PeerDiscoveryInterval, "dns-peer-discovery-interval", d.PeerDiscoveryInterval, "How often a zone's NS set is asked for its peers again; a failed lookup keeps the peers found before.")
	return func() error {
		var err error
		if d.ZoneNamespaces, err = zoneList("--dns-zone-namespaces", *zoneNamespaces); err != nil {
			return err
		}
		if d.NameserverAddresses, err = addressList("--dns-nameserver-addresses", *nsAddrs); err != nil {
			return err
		}
		if d.Peers, err = serverList("--dns-peers", *peerList); err != nil {
			return err
		}
		if d.PeerDiscovery, err = serverList("--dns-peer-discovery", *discovery); err != nil {
			return err
		}
		if d.PeerPort < 1 || d.PeerPort > 65535 {
			return fmt.Errorf("--dns-peer-port: %d is not a port", d.PeerPort)
		}
		if d.PeerDiscoveryInterval <= 0 {
			return fmt.Errorf("--dns-peer-discovery-interval must be positive")
		}
		if d.PeerKeys, err = zoneList("--dns-peer-keys", *peerKeys); err != nil {
			return err
		}
		if d.ExportKeys, err = zoneList("--dns-export-keys", *exportKeys); err != nil {
			return err
		}
		prefixes, err := zoneList("--dns-export-prefixes", *exportPrefixes)
		if err != nil {
			return err
		}
		for zone, list := range prefixes {
			for _, text := range list {
				p, err := netip.ParsePrefix(text)
				if err != nil {
					return fmt.Errorf("--dns-export-prefixes: %q of zone %s: %w", text, zone, err)
				}
				if d.ExportPrefixes == nil {
					d.ExportPrefixes = map[string][]netip.Prefix{}
				}
				d.ExportPrefixes[zone] = append(d.ExportPrefixes[zone], p)
			}
		}
		if err := d.signedPulls(); err != nil {
			return err
		}
		if (len(d.PeerKeys) > 0 || len(d.ExportKeys) > 0) && d.TSIGKeyFile == "" && d.TSIGSecret == "" {
			return fmt.Errorf("--dns-peer-keys and --dns-export-keys need the keys: --dns-tsig-key-file or --dns-tsig-secret")
		}
		if d.PeerPullInterval <= 0 || d.PeerPullTimeout <= 0 {
			return fmt.Errorf("--dns-peer-pull-interval and --dns-peer-pull-timeout must be positive")
		}
		if d.PeerMaxBytes <= 0 {
			return fmt.Errorf("--dns-peer-max-bytes must be positive")
		}
		if d.TransferKeys, err = zoneList("--dns-transfer-keys", *transferKeys); err != nil {
			return err
		}
		if d.TSIGSecret != "" {
			if ns, name, ok := strings.Cut(d.TSIGSecret, "/"); !ok || ns == "" || name == "" {
				return fmt.Errorf("--dns-tsig-secret: %q is not namespace/name", d.TSIGSecret)
			}
		}
		if len(d.TransferKeys) > 0 && d.TSIGKeyFile == "" && d.TSIGSecret == "" {
			return fmt.Errorf("--dns-transfer-keys needs the keys: --dns-tsig-key-file or --dns-tsig-secret")
		}
		return nil
	}
}

// addressList is zoneList for values that are IP addresses, by name.
func addressList(flagName, s string) (map[string][]netip.Addr, error) {
	list, err := zoneList(flagName, s)
	if err != nil {
		return nil, err
	}
	var out map[string][]netip.Addr
	for name, texts := range list {
		for _, text := range texts {
			a, err := netip.ParseAddr(text)
			if err != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%s: %q of %s is not an IP address", flagName, text, name)
			}
			if out == nil {
				out = map[string][]netip.Addr{}
			}
			out[name] = append(out[name], a.Unmap())
		}
	}
	return out, nil
}

// signedPulls refuses a zone with peers whose pulls no key signs, unless unsigned pulls are
// allowed: an unsigned transfer can be answered by anyone on the path, and what it answers is
// merged into the zone.
func (d DNSServerOptions) signedPulls() error {
	if d.PeerAllowUnsigned {
		return nil
	}
	zones := slices.Concat(slices.Collect(maps.Keys(d.Peers)), slices.Collect(maps.Keys(d.PeerDiscovery)))
	slices.Sort(zones)
	for _, zone := range slices.Compact(zones) {
		if len(d.PeerKeys[zone]) == 0 {
			return fmt.Errorf("peer pulls of zone %s are unsigned; give --dns-peer-keys or --dns-peer-allow-unsigned", zone)
		}
	}
	return nil
}

// serverList is zoneList for values that are servers' host:port.
func serverList(flagName, s string) (map[string][]string, error) {
	list, err := zoneList(flagName, s)
	if err != nil {
		return nil, err
	}
	for zone, addrs := range list {
		for _, a := range addrs {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return nil, fmt.Errorf("%s: server %q of zone %s is not host:port", flagName, a, zone)
			}
		}
	}
	return list, nil
}

// zoneList reads comma-separated zone=value pairs into values by zone; a zone may repeat.
func zoneList(flagName, s string) (map[string][]string, error) {
	var out map[string][]string
	for _, item := range splitList(s) {
		zone, value, ok := strings.Cut(item, "=")
		zone, value = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(zone), ".")), strings.TrimSpace(value)
		if !ok || zone == "" || value == "" {
			return nil, fmt.Errorf("%s: %q is not of the form zone=value", flagName, item)
		}
		if out == nil {
			out = map[string][]string{}
		}
		if !slices.Contains(out[zone], value) {
			out[zone] = append(out[zone], value)
		}
	}
	return out, nil
}

// tsigKeys reads the server's TSIG keys from the key file and the Secret, if given. Secret values
// are never logged; errors name the file or Secret only.
func (d DNSServerOptions) tsigKeys(ctx context.Context, reader client.Reader) ([]dnsserver.TSIGKey, error) {
	var keys []dnsserver.TSIGKey
	if d.TSIGKeyFile != "" {
		b, err := os.ReadFile(d.TSIGKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--dns-tsig-key-file: %w", err)
		}
		k, err := dnsserver.ParseTSIGKeys(string(b))
		if err != nil {
			return nil, fmt.Errorf("--dns-tsig-key-file %s: %w", d.TSIGKeyFile, err)
		}
		keys = append(keys, k...)
	}
	if d.TSIGSecret != "" {
		ns, name, _ := strings.Cut(d.TSIGSecret, "/")
		var secret corev1.Secret
		if err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &secret); err != nil {
			return nil, fmt.Errorf("--dns-tsig-secret %s: %w", d.TSIGSecret, err)
		}
		names := make([]string, 0, len(secret.Data))
		for k := range secret.Data {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			parsed, err := dnsserver.ParseTSIGKeys(string(secret.Data[k]))
			if err != nil {
				return nil, fmt.Errorf("--dns-tsig-secret %s, key %s: %w", d.TSIGSecret, k, err)
			}
			keys = append(keys, parsed...)
		}
	}
	return keys, nil
}

// dnsServerOptions turns the flags into the server's options.
func (o Options) dnsServerOptions(keys []dnsserver.TSIGKey) dnsserver.Options {
	d := o.DNSServer
	reload := d.GeoIPReloadInterval
	if reload <= 0 {
		reload = -1
	}
	return dnsserver.Options{
		Addr:                       o.DNSServerAddress,
		GeoIPDatabase:              o.DNSGeoIPDatabase,
		GeoIPReloadInterval:        reload,
		TSIGKeys:                   keys,
		TransferKeys:               d.TransferKeys,
		MaxUDPSize:                 d.MaxUDPSize,
		MaxTCPConnections:          d.MaxTCPConnections,
		MaxTCPConnectionsPerSource: d.MaxTCPPerSource,
		MaxTCPQueries:              d.MaxTCPQueries,
		TCPIdleTimeout:             d.TCPIdleTimeout,
		TCPWriteTimeout:            d.TCPWriteTimeout,
		RateLimit:                  d.RateLimit,
		Exports:                    d.exports(),
		NameserverAddresses:        d.NameserverAddresses,
		MaxTTL:                     o.MaxTTL,
		DNSSECCacheBytes:           o.DNSSEC.SignatureCacheBytes,
	}
}

// exports is, by zone, who may pull this cluster's export.
func (d DNSServerOptions) exports() map[string]dnsserver.ExportAccess {
	out := map[string]dnsserver.ExportAccess{}
	for zone, keys := range d.ExportKeys {
		a := out[zone]
		a.Keys = keys
		out[zone] = a
	}
	for zone, prefixes := range d.ExportPrefixes {
		a := out[zone]
		a.Prefixes = prefixes
		out[zone] = a
	}
	return out
}

// exportedZones are the zones whose export is offered.
func (d DNSServerOptions) exportedZones() []string {
	return slices.Sorted(maps.Keys(d.exports()))
}

// peerPool makes the pool pulling the peers' exports, nil without peers. The key signing a zone's
// pulls must be one of keys; own is the address this cluster's server listens on.
func (d DNSServerOptions) peerPool(keys []dnsserver.TSIGKey, own string, leaseDuration time.Duration, changed func(zone string), log logr.Logger) (*peers.Pool, error) {
	if !d.hasPeers() {
		return nil, nil
	}
	var list []peers.Peer
	var discover []peers.Discovery
	zones := slices.Concat(slices.Collect(maps.Keys(d.Peers)), slices.Collect(maps.Keys(d.PeerDiscovery)))
	slices.Sort(zones)
	for _, zone := range slices.Compact(zones) {
		var key *dnsserver.TSIGKey
		if names := d.PeerKeys[zone]; len(names) > 0 {
			for i := range keys {
				if dns.CanonicalName(keys[i].Name) == dns.CanonicalName(names[0]) {
					key = &keys[i]
				}
			}
			if key == nil {
				return nil, fmt.Errorf("--dns-peer-keys: key %q of zone %s is not one of the TSIG keys", names[0], zone)
			}
		}
		for _, addr := range d.Peers[zone] {
			list = append(list, peers.Peer{Zone: zone, Addr: addr, Key: key})
		}
		if servers := d.PeerDiscovery[zone]; len(servers) > 0 {
			discover = append(discover, peers.Discovery{Zone: zone, Servers: servers, Port: d.PeerPort, Key: key})
		}
	}
	return peers.New(peers.Options{Peers: list, Discover: discover, DiscoverInterval: d.PeerDiscoveryInterval, Own: []string{own},
		Interval: d.PeerPullInterval, Timeout: d.PeerPullTimeout, MaxBytes: d.PeerMaxBytes, Duration: leaseDuration, Changed: changed, Log: log}), nil
}

// hasPeers says whether any zone has peers, configured or to be discovered.
func (d DNSServerOptions) hasPeers() bool { return len(d.Peers) > 0 || len(d.PeerDiscovery) > 0 }
