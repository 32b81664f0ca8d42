package app

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	dnsservercontroller "github.com/dnspolicy/dnspolicy-controller/controllers/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
)

// DNSSECOptions say which zones of the embedded server are signed and how their keys are made and
// rolled (docs/dnssec.md).
type DNSSECOptions struct {
	// Zones are the zones to sign (--dnssec-zones).
	Zones []string
	// Algorithm of new keys, 13 or 15 (--dnssec-algorithm).
	Algorithm int
	// Keys is "csk" (one combined key) or "ksk-zsk" (--dnssec-keys).
	Keys string
	// ZSKLifetime rolls the ZSK after this long; 0: by command only (--dnssec-zsk-lifetime).
	ZSKLifetime time.Duration
	// SecretNamespace holds the keys' Secrets (--dnssec-secret-namespace); empty: the
	// controller's own namespace.
	SecretNamespace string
	// DSResolver (host:port) is asked for the parent's DS set; empty: the system resolver.
	DSResolver string
	// SignatureCacheBytes bounds, per signed zone, the server's cache of signatures that depend on
	// the query name (--dnssec-signature-cache-bytes): what a flood of random names can hold.
	SignatureCacheBytes int
	// DNSKEYTTL, DSTTL and Propagation are the rollovers' waits (package dnssec, Policy).
	DNSKEYTTL, DSTTL, Propagation time.Duration
	// DSCheckEvery is how often the parent is asked while a key waits for its DS; Recheck how often
	// a signed zone's Secret is read again (a rollover asked for is started within it).
	DSCheckEvery, Recheck time.Duration

	// Now and LookupDS replace the clock and the parent in tests; nil: time.Now and DSResolver.
	Now      func() time.Time
	LookupDS func(ctx context.Context, zone string) (dnssec.ParentDS, error)
}

func defaultDNSSECOptions() DNSSECOptions {
	return DNSSECOptions{Algorithm: int(dnssec.ECDSAP256SHA256), Keys: "csk", DNSKEYTTL: time.Hour, DSTTL: 24 * time.Hour,
		Propagation: 5 * time.Minute, DSCheckEvery: 10 * time.Minute, Recheck: time.Minute, SignatureCacheBytes: dnsserver.DefaultDNSSECCacheBytes}
}

// dnssecFlags registers the flags and returns the check run once they are parsed.
func (d *DNSSECOptions) dnssecFlags(fs *flag.FlagSet) func() error {
	zones := fs.String("dnssec-zones", "", "Comma-separated zones of the embedded DNS server to sign (DNSSEC); their keys are made on first use in a Secret each (docs/dnssec.md).")
	fs.IntVar(&d.Algorithm, "dnssec-algorithm", d.Algorithm, "Algorithm of new DNSSEC keys: 13 (ECDSA P-256 with SHA-256) or 15 (Ed25519).")
	fs.StringVar(&d.Keys, "dnssec-keys", d.Keys, "DNSSEC keys: csk (one combined signing key) or ksk-zsk (a key-signing and a zone-signing key).")
	fs.DurationVar(&d.ZSKLifetime, "dnssec-zsk-lifetime", d.ZSKLifetime, "Roll the ZSK after it has been active this long (ksk-zsk keys only); 0: only by command (kubectl dns dnssec rollover).")
	fs.StringVar(&d.SecretNamespace, "dnssec-secret-namespace", d.SecretNamespace, "Namespace of the DNSSEC keys' Secrets; empty: the namespace the controller runs in.")
	fs.StringVar(&d.DSResolver, "dnssec-ds-resolver", d.DSResolver, "host:port of the resolver asked whether the parent holds a new key's DS during a KSK or CSK rollover; empty: the system resolver.")
	fs.DurationVar(&d.DNSKEYTTL, "dnssec-dnskey-ttl", d.DNSKEYTTL, "TTL of the DNSKEY, CDS and CDNSKEY sets; rollovers wait for it.")
	fs.DurationVar(&d.DSTTL, "dnssec-ds-ttl", d.DSTTL, "TTL of the DS set at the parent; a KSK or CSK rollover waits for it once the new DS is seen.")
	fs.DurationVar(&d.Propagation, "dnssec-propagation", d.Propagation, "Time a change takes to reach every server of the zone and of the parent; added to every rollover wait.")
	fs.IntVar(&d.SignatureCacheBytes, "dnssec-signature-cache-bytes", d.SignatureCacheBytes, "Bytes, per signed zone, of the cache of signatures that depend on the query name (denials of names that do not exist, wildcard answers); when full, random entries are evicted.")
	return func() error {
		d.Zones = nil
		for _, z := range splitList(*zones) {
			d.Zones = append(d.Zones, strings.ToLower(strings.TrimSuffix(z, ".")))
		}
		if d.DSResolver != "" {
			if _, _, err := net.SplitHostPort(d.DSResolver); err != nil {
				return fmt.Errorf("--dnssec-ds-resolver: %q is not host:port", d.DSResolver)
			}
		}
		if d.SignatureCacheBytes <= 0 {
			return fmt.Errorf("--dnssec-signature-cache-bytes: %d must be positive", d.SignatureCacheBytes)
		}
		if _, err := d.policy(1); err != nil {
			return err
		}
		return nil
	}
}

// policy is the rollovers' policy; maxTTL (--max-ttl) bounds every TTL of a zone, and so how
// long a signature may be cached.
func (d DNSSECOptions) policy(maxTTL int64) (dnssec.Policy, error) {
	if d.Keys != "csk" && d.Keys != "ksk-zsk" {
		return dnssec.Policy{}, fmt.Errorf("--dnssec-keys: %q is not csk or ksk-zsk", d.Keys)
	}
	if d.Algorithm != int(dnssec.ECDSAP256SHA256) && d.Algorithm != int(dnssec.ED25519) {
		return dnssec.Policy{}, fmt.Errorf("--dnssec-algorithm: %d is not 13 (ECDSAP256SHA256) or 15 (ED25519)", d.Algorithm)
	}
	p := dnssec.Policy{Algorithm: uint8(d.Algorithm), Split: d.Keys == "ksk-zsk", ZSKLifetime: d.ZSKLifetime, DNSKEYTTL: d.DNSKEYTTL,
		MaxZoneTTL: time.Duration(maxTTL) * time.Second, DSTTL: d.DSTTL, Propagation: d.Propagation, DSCheckEvery: d.DSCheckEvery}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("--dnssec-*: %w", err)
	}
	return p, nil
}

// serviceAccountNamespace is where the namespace a pod runs in is mounted, the one
// controller-runtime's leader election defaults to.
const serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// secretNamespace is the keys' namespace: the flag's, else the leader election's, else the pod's.
func (o Options) secretNamespace() (string, error) {
	if ns := o.DNSSEC.SecretNamespace; ns != "" {
		return ns, nil
	}
	if ns := o.LeaderElectionNamespace; ns != "" {
		return ns, nil
	}
	b, err := os.ReadFile(serviceAccountNamespace)
	if err != nil || strings.TrimSpace(string(b)) == "" {
		return "", fmt.Errorf("--dnssec-zones: the keys' namespace is not known outside a pod; give --dnssec-secret-namespace")
	}
	return strings.TrimSpace(string(b)), nil
}

// signing is the DNS feed's DNSSEC side, nil when no zone is signed.
func (o Options) signing(mgr ctrl.Manager) (*dnsservercontroller.Signing, error) {
	d := o.DNSSEC
	if len(d.Zones) == 0 {
		return nil, nil
	}
	policy, err := d.policy(o.MaxTTL)
	if err != nil {
		return nil, err
	}
	ns, err := o.secretNamespace()
	if err != nil {
		return nil, err
	}
	lookup := d.LookupDS
	if lookup == nil {
		lookup = dnsservercontroller.ResolverDS(d.DSResolver, 5*time.Second)
	}
	return &dnsservercontroller.Signing{Zones: d.Zones, Policy: policy, Namespace: ns, Reader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("dnsserver-dnssec"), LookupDS: lookup, Now: d.Now, Recheck: d.Recheck}, nil
}
