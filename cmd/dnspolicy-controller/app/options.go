// Package app is the controller binary's wiring: options from flags and environment, then a manager.
// It is a package of its own so `make run` can start the same manager in-process beside a local
// control plane.
package app

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
)

// EnvPrefix prefixes the environment variable of every flag: --metrics-bind-address is also
// DNSPOLICY_METRICS_BIND_ADDRESS. A flag given on the command line wins over its variable.
const EnvPrefix = "DNSPOLICY_"

// Options configure the binary.
type Options struct {
	Kubeconfig                string
	MetricsBindAddress        string
	HealthProbeBindAddress    string
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
}

// DefaultOptions are the options of a binary started with no flags.
func DefaultOptions() Options {
	return Options{
		MetricsBindAddress:        ":8080",
		HealthProbeBindAddress:    ":8081",
		LeaderElectionID:          "dnspolicy-controller.kuadrant.io",
		LeaseDuration:             15 * time.Second,
		LogLevel:                  "info",
		LogFormat:                 "json",
		Providers:                 BackendNames(),
		EnableRecordController:    true,
		EnableDNSPolicyController: true,
	}
}

// Parse reads options from args (without the program name) and the environment.
func Parse(args []string, getenv func(string) (string, bool)) (Options, error) {
	o := DefaultOptions()
	fs := flag.NewFlagSet("dnspolicy-controller", flag.ContinueOnError)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Path to a kubeconfig. Empty: in-cluster config, then $KUBECONFIG, then ~/.kube/config.")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress, "Address of the Prometheus metrics endpoint; \"0\" disables it.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress, "Address of the /healthz and /readyz endpoints.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "Elect a leader so only one replica reconciles at a time.")
	fs.StringVar(&o.LeaderElectionID, "leader-election-id", o.LeaderElectionID, "Name of the leader election Lease.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", o.LeaderElectionNamespace, "Namespace of the leader election Lease; empty: the namespace the pod runs in.")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", o.LeaseDuration, "How long a non-leader waits before taking over a lease that was not renewed.")
	watch := fs.String("watch-namespaces", "", "Comma-separated namespaces to watch; empty: all namespaces.")
	fs.StringVar(&o.LogLevel, "log-level", o.LogLevel, "Log level: debug, info, warn, error, or a number (higher is more verbose).")
	fs.StringVar(&o.LogFormat, "log-format", o.LogFormat, "Log format: json or console.")
	enabled := fs.String("providers", strings.Join(o.Providers, ","), "Comma-separated backends to enable; records whose Secret selects another get a clear condition.")
	fs.BoolVar(&o.EnableRecordController, "enable-record-controller", o.EnableRecordController, "Run the DNSRecord controller (publishes records into zones).")
	fs.BoolVar(&o.EnableDNSPolicyController, "enable-policy-controller", o.EnableDNSPolicyController, "Run the DNSPolicy controller (turns Gateway listeners into DNSRecords).")

	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v, ok := getenv(EnvName(f.Name)); ok && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("environment variable %s: %w", EnvName(f.Name), err)
			}
		}
	})
	if envErr != nil {
		return o, envErr
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
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
			o.Providers = append(o.Providers, p)
		}
	}
	if _, err := o.zapLevel(); err != nil {
		return o, err
	}
	if o.LogFormat != "json" && o.LogFormat != "console" {
		return o, fmt.Errorf("--log-format must be json or console, not %q", o.LogFormat)
	}
	return o, nil
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
