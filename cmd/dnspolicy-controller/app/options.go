// Package app is the controller binary's wiring: options from flags and environment, then a manager.
// It is a package of its own so `make run` can start the same manager in-process beside a local
// control plane.
package app

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnshealthcheckprobe"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/prober"
)

// EnvPrefix prefixes the environment variable of every flag: --metrics-bind-address is also
// DNSPOLICY_METRICS_BIND_ADDRESS. A flag given on the command line wins over its variable.
const EnvPrefix = "DNSPOLICY_"

// KuadrantGroupEnv is Kuadrant's environment variable of --group; DNSPOLICY_GROUP and the command
// line win over it (kuadrantEnv).
const KuadrantGroupEnv = "GROUP"

// Options configure the binary.
type Options struct {
	Kubeconfig             string
	MetricsBindAddress     string
	MetricsSecure          bool
	HealthProbeBindAddress string
	// PprofBindAddress serves net/http/pprof ("" or "0": off), for profiling a live controller.
	PprofBindAddress          string
	LeaderElect               bool
	LeaderElectionID          string
	LeaderElectionNamespace   string
	LeaseDuration             time.Duration
	WatchNamespaces           []string
	LogLevel                  string
	LogFormat                 string
	Providers                 []string
	EnableRecordController    bool
	EnableDNSPolicyController bool
	// DNSServerAddress is where the embedded DNS server listens (UDP and TCP); empty runs no server.
	DNSServerAddress string
	// DNSGeoIPDatabase is the MaxMind-format database the server locates clients with.
	DNSGeoIPDatabase string
	// DNSSecondaries are host:port addresses to NOTIFY, by zone name.
	DNSSecondaries map[string][]string
	// DNSNameservers are the NS names of every served zone.
	DNSNameservers []string
	// NoProviderSecretWatch (--watch-provider-secrets=false) runs the record controller without its
	// watch of Secrets' metadata, which needs list and watch on Secrets wherever the controller
	// watches; a changed provider Secret is then used at the record's next pass. config/rbac/README.md
	// says when to turn the watch off.
	NoProviderSecretWatch bool
	// InsecureHealthChecks (--insecure-health-checks, Kuadrant's flag; default false, Kuadrant's is
	// true) makes the record controller create DNSHealthCheckProbes with allowInsecureCertificate,
	// so gateways with self-signed certificates can be probed. The probe controller itself only
	// follows each probe's field.
	InsecureHealthChecks bool
	// AllowProviderEndpointOverride (--allow-provider-endpoint-override) honours ENDPOINT_URL in
	// provider Secrets (providers.EndpointOverrideKeys); off, a Secret that sets it is refused.
	AllowProviderEndpointOverride bool
	// NoHealthProbeController (--enable-health-probe-controller=false) runs the record side without
	// the DNSHealthCheckProbe controller: nothing probes, and probes get no finalizer (for tests that
	// write probe results themselves, or another prober).
	NoHealthProbeController bool
	// MaxConcurrentHealthChecks bounds the health checks running at once (0: the probe
	// controller's default).
	MaxConcurrentHealthChecks int
	// HealthCheckAllowedCIDRs and HealthCheckDeniedCIDRs (--health-check-allowed-cidrs,
	// --health-check-denied-cidrs) are the administrator's target rules of health checks
	// (prober.TargetRules): allowed opens loopback, link-local or the cluster's own ranges to
	// checks; denied closes any range, and wins over allowed.
	HealthCheckAllowedCIDRs, HealthCheckDeniedCIDRs []netip.Prefix
	// OwnerLeases are the settings of this cluster's owner leases (package lease).
	OwnerLeases OwnerLeaseOptions
	// PrintVersion prints Version and exits.
	PrintVersion bool
	// DNSServer holds the server's tenancy, TSIG and resource settings.
	DNSServer DNSServerOptions
	// DNSSEC says which of the server's zones are signed, and how their keys are made and rolled.
	DNSSEC DNSSECOptions
	// MaxTTL caps the TTL of every record, the records validated by the record controller and the
	// authoritative records the embedded DNS server serves (--max-ttl).
	MaxTTL int64
	// Grants say which namespaces may publish which names (package grant).
	Grants GrantOptions
	// DelegationRole is the part this cluster plays in delegation (--delegation-role, Kuadrant's
	// flag and default): a secondary readies delegating records for a primary cluster to publish;
	// a primary publishes its own and, through kubeconfig Secrets, other clusters' (docs/delegation.md).
	DelegationRole dnsrecord.DelegationRole
	// ClusterSecretNamespace and ClusterSecretLabel select the kubeconfig Secrets through which a
	// primary reaches other clusters (--cluster-secret-namespace, --cluster-secret-label,
	// Kuadrant's flags, variables and defaults); an empty namespace reaches none.
	ClusterSecretNamespace, ClusterSecretLabel string
	// Group is the failover group of every record this controller reconciles (--group, Kuadrant's
	// flag; its environment variable GROUP is read too): "" is ungrouped (package groups).
	Group string
	// FailoverOrder turns automatic failover on (--group-failover-order, groups.Decide): the
	// groups in order of preference. FailoverAfter (--group-failover-after) and FailoverHoldDown
	// (--group-failover-hold-down) are its delays (docs/failover-groups.md).
	FailoverOrder                   []string
	FailoverAfter, FailoverHoldDown time.Duration
}

// OwnerLeaseOptions set owner leases: each cluster renews a lease record in the zones where it shares
// a name with another cluster, and withdraws the owners of leases that stop changing.
type OwnerLeaseOptions struct {
	// Every is the renewal period (--owner-lease-renewal).
	Every time.Duration
	// Duration is how long others wait after this cluster's lease last changed before they withdraw
	// it (--owner-lease-duration; 0: never withdraw this cluster).
	Duration time.Duration
	// Expiry: withdraw other clusters' owners whose lease ran out (--owner-lease-expiry).
	Expiry bool
}

// Version is the release this binary was built from, set by the Makefile from the VERSION file
// (-ldflags -X); a plain `go build` reports "unknown".
var Version = "unknown"

// DefaultOptions are the options of a binary started with no flags.
func DefaultOptions() Options {
	return Options{
		MetricsBindAddress:        ":8080",
		HealthProbeBindAddress:    ":8081",
		LeaderElectionID:          "dnspolicy-controller.kuadrant.io",
		LeaseDuration:             15 * time.Second,
		LogLevel:                  "info",
		LogFormat:                 "json",
		Providers:                 DefaultBackendNames(),
		EnableRecordController:    true,
		EnableDNSPolicyController: true,
		MaxConcurrentHealthChecks: dnshealthcheckprobe.DefaultOptions().Workers,
		DNSServer:                 defaultDNSServerOptions(),
		DNSSEC:                    defaultDNSSECOptions(),
		OwnerLeases:               OwnerLeaseOptions{Every: lease.DefaultEvery, Duration: lease.DefaultDuration, Expiry: true},
		MaxTTL:                    v1alpha1.DefaultMaxTTL,
		Grants:                    GrantOptions{Scope: GrantsScopeEmbedded},
		DelegationRole:            dnsrecord.DelegationRolePrimary,
		ClusterSecretNamespace:    DefaultClusterSecretNamespace,
		ClusterSecretLabel:        DefaultClusterSecretLabel,
	}
}

// Parse reads options from args (without the program name) and the environment.
func Parse(args []string, getenv func(string) (string, bool)) (Options, error) {
	o := DefaultOptions()
	fs := flag.NewFlagSet("dnspolicy-controller", flag.ContinueOnError)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig. Empty: in-cluster config, then $KUBECONFIG, then ~/.kube/config.")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address of the Prometheus metrics endpoint; \"0\" disables it.")
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure, "Serve metrics over HTTPS, only to callers whose bearer token the API server authenticates and authorizes for get on /metrics (tokenreviews, subjectaccessreviews). Off: plain HTTP, for make run; the chart, kustomize and the bundle turn it on.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of the /healthz and /readyz endpoints.")
	fs.StringVar(&o.PprofBindAddress, "pprof-bind-address", o.PprofBindAddress, "Address of Go's /debug/pprof endpoints, for profiling (empty or 0: off). They show the process's memory: bind them to loopback.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader so only one replica reconciles at a time.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader election Lease.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader election Lease; empty: the namespace the pod runs in.")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration, "How long a non-leader waits before taking over a lease that was not renewed.")
	watch := fs.String("watch-namespaces", "", "Comma-separated namespaces to watch; empty: all namespaces.")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "Log level: debug, info, warn, error, or a number (higher is more verbose).")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "Log format: json or console.")
	enabled := fs.String("providers", strings.Join(o.Providers, ","), "Comma-separated backends to enable; records whose Secret selects another get a clear condition. The default leaves out rfc2136 and webhook: their Secrets name the server the controller connects to, so whoever may write a Secret could aim it at any address it reaches.")
	fs.BoolVar(&o.EnableRecordController, "enable-record-controller", o.EnableRecordController, "Run the DNSRecord controller (publishes records into zones).")
	fs.BoolVar(&o.EnableDNSPolicyController, "enable-policy-controller", o.EnableDNSPolicyController, "Run the DNSPolicy controller (turns Gateway listeners into DNSRecords).")
	fs.StringVar(&o.DNSServerAddress, "dns-server-address", o.DNSServerAddress, "host:port the embedded authoritative DNS server listens on (UDP and TCP), e.g. 127.0.0.1:1053; empty: no DNS server.")
	fs.StringVar(&o.DNSGeoIPDatabase, "dns-geoip-database", o.DNSGeoIPDatabase, "MaxMind-format (country or city) database the DNS server locates clients with; empty: every client gets the default geo.")
	secondaries := fs.String("dns-secondaries", "", "Comma-separated zone=host:port secondaries sent a NOTIFY when their zone changes.")
	watchSecrets := fs.Bool("watch-provider-secrets", !o.NoProviderSecretWatch, "Watch Secrets' metadata so a changed provider Secret is used at once; needs list and watch on Secrets in every watched namespace. Off: a changed Secret is used at the record's next pass.")
	fs.BoolVar(&o.InsecureHealthChecks, "insecure-health-checks", o.InsecureHealthChecks, "Create health probes that accept any TLS certificate (allowInsecureCertificate), for gateways with self-signed certificates. Kuadrant defaults this to true; here it is off: certificates are verified.")
	fs.BoolVar(&o.AllowProviderEndpointOverride, "allow-provider-endpoint-override", o.AllowProviderEndpointOverride, "Honour ENDPOINT_URL in cloud provider Secrets (an emulator or private endpoint). Off: a Secret that sets it is refused, since anyone who may write a Secret could point the controller at any URL with it.")
	probes := fs.Bool("enable-health-probe-controller", !o.NoHealthProbeController, "Run the DNSHealthCheckProbe controller with the record side (checks the probes the record controller creates and writes their status).")
	fs.IntVar(&o.MaxConcurrentHealthChecks, "max-concurrent-health-checks", o.MaxConcurrentHealthChecks, "Health checks run at once at most; probes due beyond it wait for a free slot.")
	allowedCIDRs := fs.String("health-check-allowed-cidrs", "", "Comma-separated CIDRs health checks may connect to although they are refused by default (loopback, link-local, the cluster's service, pod and node addresses); a denied CIDR still wins.")
	deniedCIDRs := fs.String("health-check-denied-cidrs", "", "Comma-separated CIDRs health checks never connect to, besides the defaults; wins over --health-check-allowed-cidrs.")
	fs.DurationVar(&o.OwnerLeases.Every, "owner-lease-renewal", o.OwnerLeases.Every, "How often this cluster renews its lease in each zone where it shares a name with another cluster (one provider change per zone each time).")
	fs.DurationVar(&o.OwnerLeases.Duration, "owner-lease-duration", o.OwnerLeases.Duration, "How long other clusters wait after this cluster's lease last changed before they withdraw its records; 0: never.")
	fs.BoolVar(&o.OwnerLeases.Expiry, "owner-lease-expiry", o.OwnerLeases.Expiry, "Withdraw other clusters' records once their lease has not changed for its duration (never the last targets of a name).")
	fs.BoolVar(&o.PrintVersion, "version", false, "Print the version and exit.")
	nameservers := fs.String("dns-nameservers", "", "Comma-separated NS names of every served zone (the first is the SOA's primary); empty: ns1.<zone>.")
	fs.Int64Var(&o.MaxTTL, "max-ttl", o.MaxTTL, "Largest TTL, in seconds, of any record: a record with a larger one is refused (ValidationError; RecordsRefused on the embedded server). Up to 2147483647.")
	fs.Var(&o.DelegationRole, "delegation-role", "The part this cluster plays in delegation: primary (the default, as Kuadrant's) or secondary, whose delegating records (delegate: true) a primary cluster publishes. Kuadrant's variable DELEGATION_ROLE sets it too.")
	fs.StringVar(&o.ClusterSecretNamespace, "cluster-secret-namespace", o.ClusterSecretNamespace, "Namespace of the kubeconfig Secrets through which a primary reads other clusters' delegating records (Kuadrant's flag; its variable CLUSTER_SECRET_NAMESPACE sets it too). Empty: no other cluster is read.")
	fs.StringVar(&o.ClusterSecretLabel, "cluster-secret-label", o.ClusterSecretLabel, "Label, set to \"true\", of those Secrets; their key kubeconfig holds the kubeconfig (Kuadrant's flag; CLUSTER_SECRET_LABEL sets it too).")
	finishGroup := o.groupFlag(fs)
	finishDNSServer := o.DNSServer.dnsServerFlags(fs)
	finishDNSSEC := o.DNSSEC.dnssecFlags(fs)
	finishGrants := o.Grants.flags(fs)

	if err := setFromEnv(fs, getenv); err != nil {
		return o, err
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.NoProviderSecretWatch = !*watchSecrets
	o.NoHealthProbeController = !*probes
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	for _, ns := range strings.Split(*watch, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			o.WatchNamespaces = append(o.WatchNamespaces, ns)
		}
	}
	o.Providers = nil
	for _, p := range strings.Split(*enabled, ",") {
		if p = strings.TrimSpace(p); p != "" {
			if !slices.Contains(BackendNames(), p) {
				return o, fmt.Errorf("--providers: unknown provider %q (known: %s)", p, strings.Join(BackendNames(), ", "))
			}
			o.Providers = append(o.Providers, p)
		}
	}
	if err := finishGroup(); err != nil {
		return o, err
	}
	if errs := validation.IsQualifiedName(o.ClusterSecretLabel); o.ClusterSecretNamespace != "" && len(errs) > 0 {
		return o, fmt.Errorf("--cluster-secret-label %q: %s", o.ClusterSecretLabel, strings.Join(errs, "; "))
	}
	if err := finishDNSServer(); err != nil {
		return o, err
	}
	if err := finishDNSSEC(); err != nil {
		return o, err
	}
	if err := finishGrants(o.DNSServer.ZoneNamespaces); err != nil {
		return o, err
	}
	var err error
	if o.DNSSecondaries, err = parseSecondaries(*secondaries); err != nil {
		return o, err
	}
	o.DNSNameservers = splitList(*nameservers)
	if o.HealthCheckAllowedCIDRs, err = prober.ParsePrefixes(*allowedCIDRs); err != nil {
		return o, fmt.Errorf("--health-check-allowed-cidrs: %w", err)
	}
	if o.HealthCheckDeniedCIDRs, err = prober.ParsePrefixes(*deniedCIDRs); err != nil {
		return o, fmt.Errorf("--health-check-denied-cidrs: %w", err)
	}
	if l := o.OwnerLeases; l.Every < lease.MinEvery {
		return o, fmt.Errorf("--owner-lease-renewal must be at least %v (each renewal is a provider change), not %v", lease.MinEvery, l.Every)
	} else if l.Duration != 0 && l.Duration < 2*l.Every {
		// Readers see a lease through views up to seconds old, and a renewal period late.
		return o, fmt.Errorf("--owner-lease-duration must be 0 or at least twice --owner-lease-renewal (%v), not %v", 2*l.Every, l.Duration)
	}
	if o.MaxTTL < 1 || o.MaxTTL > v1alpha1.MaxTTL {
		return o, fmt.Errorf("--max-ttl must be from 1 to %d, not %d", v1alpha1.MaxTTL, o.MaxTTL)
	}
	if _, err := o.zapLevel(); err != nil {
		return o, err
	}
	if o.LogFormat != "json" && o.LogFormat != "console" {
		return o, fmt.Errorf("--log-format must be json or console, not %q", o.LogFormat)
	}
	return o, nil
}

// groupFlag defines --group (Kuadrant's GROUP sets it too, through kuadrantEnv); the function it
// returns, called once the command line is parsed, validates it.
func (o *Options) groupFlag(fs *flag.FlagSet) func() error {
	order := fs.String("group-failover-order", "", "Comma-separated failover groups in order of preference: turns automatic failover on (needs --group). When the active group has had no live member for --group-failover-after, the next live group of the order is made active; an earlier one takes over again after --group-failover-hold-down. Empty: off.")
	fs.DurationVar(&o.FailoverAfter, "group-failover-after", time.Minute, "How long the active failover group must have no live member (lease and health checks) before the next group of --group-failover-order is made active; also how long an earlier group must be alive before it takes over again.")
	fs.DurationVar(&o.FailoverHoldDown, "group-failover-hold-down", 10*time.Minute, "Least time after a switch of the active failover groups before a group earlier in --group-failover-order takes over again.")
	fs.StringVar(&o.Group, "group", o.Group, fmt.Sprintf("Failover group of every record this controller reconciles (at most %d characters, none of ;&,\"' or space): its records are published only while the zone's kuadrant-active-groups TXT lists it. Empty: ungrouped, always published. Kuadrant's variable %s is read too.", groups.MaxNameLength, KuadrantGroupEnv))
	return func() error {
		if err := groups.Validate(o.Group); err != nil {
			return fmt.Errorf("--group: %w", err)
		}
		o.FailoverOrder = nil
		for g := range strings.SplitSeq(*order, ",") {
			if g = strings.TrimSpace(g); g == "" {
				continue
			}
			if err := groups.Validate(g); err != nil {
				return fmt.Errorf("--group-failover-order: %q: %w", g, err)
			}
			if slices.Contains(o.FailoverOrder, g) {
				return fmt.Errorf("--group-failover-order: %q is listed twice", g)
			}
			o.FailoverOrder = append(o.FailoverOrder, g)
		}
		switch {
		case len(o.FailoverOrder) == 0:
		case o.Group == "":
			return errors.New("--group-failover-order needs --group: an ungrouped controller is in no group to fail over")
		case !slices.Contains(o.FailoverOrder, o.Group):
			return fmt.Errorf("--group-failover-order %s does not list this controller's --group %s", strings.Join(o.FailoverOrder, ","), o.Group)
		case o.FailoverAfter <= 0 || o.FailoverHoldDown < 0:
			return errors.New("--group-failover-after must be positive and --group-failover-hold-down not negative")
		}
		return nil
	}
}

// setFromEnv sets each flag from its environment variables, before the command line is parsed (so
// the command line wins): Kuadrant's variable first, then ours, so ours wins when both are set.
func setFromEnv(fs *flag.FlagSet, getenv func(string) (string, bool)) error {
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		for _, name := range []string{kuadrantEnv[f.Name], EnvName(f.Name)} {
			if v, ok := getenv(name); ok && name != "" && envErr == nil {
				if err := f.Value.Set(v); err != nil {
					envErr = fmt.Errorf("environment variable %s: %w", name, err)
				}
			}
		}
	})
	return envErr
}

// parseSecondaries reads --dns-secondaries (zone=host:port,...). A zone may have several
// secondaries, so the list is not a map of unique keys.
func parseSecondaries(list string) (map[string][]string, error) {
	var out map[string][]string
	for _, item := range splitList(list) {
		zone, addr, ok := strings.Cut(item, "=")
		if !ok || zone == "" {
			return nil, fmt.Errorf("--dns-secondaries: %q is not of the form zone=host:port", item)
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("--dns-secondaries: %q is not host:port", addr)
		}
		if out == nil {
			out = map[string][]string{}
		}
		zone = strings.ToLower(strings.TrimSuffix(zone, "."))
		out[zone] = append(out[zone], addr)
	}
	return out, nil
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// kuadrantEnv are the environment variables of Kuadrant's dns-operator that set the flag of the same
// meaning here, so its deployment's settings carry over. DNSPOLICY_ + the flag wins over them.
var kuadrantEnv = map[string]string{
	"delegation-role":          "DELEGATION_ROLE",
	"group":                    KuadrantGroupEnv,
	"cluster-secret-namespace": "CLUSTER_SECRET_NAMESPACE",
	"cluster-secret-label":     "CLUSTER_SECRET_LABEL",
}

// EnvName is the environment variable of a flag.
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// OSEnv reads the process environment.
func OSEnv(name string) (string, bool) { return os.LookupEnv(name) }

// zapLevel accepts zap's names and logr verbosity numbers (V(2) is zap level -2).
func (o Options) zapLevel() (zapcore.Level, error) {
	if n, err := strconv.Atoi(o.LogLevel); err == nil {
		return zapcore.Level(-n), nil
	}
	l, err := zapcore.ParseLevel(o.LogLevel)
	if err != nil {
		return l, fmt.Errorf("--log-level %q: %w", o.LogLevel, err)
	}
	return l, nil
}
