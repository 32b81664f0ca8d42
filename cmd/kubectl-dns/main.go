// Command kubectl-dns is a kubectl plugin (`kubectl dns ...`) that shows who publishes what in a
// zone shared by several clusters, why the zone holds what it holds, and withdraws a dead owner by
// hand; it makes the kubeconfig Secret through which a delegation primary reads another cluster. It
// reads and writes zones through the same provider Secrets and backends as the controller
// (package providers/builtin), and explains the zone with the controller's own planner and ownership
// gate (packages plan and registry), so what it says is what the controllers compute. docs/cli.md is
// its guide.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/builtin"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Run runs the plugin with args (without the program name), printing to stdout and stderr, and
// returns the exit code: 0, or 1 on any error.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return run(ctx, args, stdout, stderr, time.Now)
}

// cli is what every command shares: the kubeconfig flags, the clock (ages are estimates on it) and
// the output.
type cli struct {
	loading   *clientcmd.ClientConfigLoadingRules
	overrides *clientcmd.ConfigOverrides
	config    clientcmd.ClientConfig
	now       func() time.Time
	out       io.Writer
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, now func() time.Time) int {
	c := &cli{
		loading:   clientcmd.NewDefaultClientConfigLoadingRules(),
		overrides: &clientcmd.ConfigOverrides{},
		now:       now,
		out:       stdout,
	}
	root := &cobra.Command{
		Use:   "kubectl-dns",
		Short: "Show and repair the DNS zones dnspolicy-controller shares between clusters",
		Long: `kubectl-dns shows who publishes what in a zone shared by several clusters (owners), this
cluster's DNSRecords (records), why the zone holds what it holds (explain), and withdraws a dead
owner by hand (remove-owner), and deletes Kuadrant's legacy ownership TXTs once their owners wrote
version-1 claims (prune-legacy); it lists and changes the zone's active failover groups
(get-active-groups, add-active-group, remove-active-group); for the zones the embedded server signs,
it prints the DS for the parent, the keys' states, and asks for key rollovers (dnssec); it makes the
kubeconfig Secret through which a delegation primary reads another cluster (add-cluster-secret). It
reaches zones through the provider Secrets the controller uses.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	flags := root.PersistentFlags()
	flags.StringVar(&c.loading.ExplicitPath, "kubeconfig", "", "path to the kubeconfig file")
	clientcmd.BindOverrideFlags(c.overrides, flags, clientcmd.RecommendedConfigOverrideFlags(""))
	c.config = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(c.loading, c.overrides)

	root.AddCommand(c.ownersCommand(), c.recordsCommand(), c.explainCommand(), c.removeOwnerCommand(), c.pruneLegacyCommand(),
		c.addActiveGroupCommand(), c.removeActiveGroupCommand(), c.getActiveGroupsCommand(), c.dnssecCommand(), c.addClusterSecretCommand())
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
	return 0
}

// client is a client of the cluster the kubeconfig flags select.
func (c *cli) client() (client.Client, error) {
	cfg, err := c.config.ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.UserAgent = "kubectl-dns"
	return client.New(cfg, client.Options{Scheme: apis.Scheme()})
}

// namespace is the namespace the flags or the kubeconfig context select, and whether -n set it.
func (c *cli) namespace() (string, bool, error) {
	return c.config.Namespace()
}

// factory builds backends exactly as the controller does. The inmemory backend's zones live in the
// controller's process, so an inmemory Secret shows an empty zone here. A Secret's ENDPOINT_URL is
// honoured: the plugin runs where its user does, with the Secret's own credentials, so the override
// reaches nothing the user could not reach without it (the controller's flag guards what the
// controller can reach from inside the cluster).
func factory() *providers.Factory {
	f, err := builtin.NewFactory(builtin.Names(), inmemory.NewStore())
	if err != nil {
		panic(err) // builtin.Names lists only known backends
	}
	f.AllowEndpointOverride(true)
	return f
}
