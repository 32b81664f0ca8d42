// Package recordplane starts what every integration package but apis and probes needs: a control
// plane running the record controller. It puts the binary's controllers (app.AddControllers: the
// record controller, and the DNSPolicy controller and embedded DNS server when the options enable
// them) in a manager on one of testenv's control planes, so each package says only what differs
// for it (its backends, its re-check times, its flags) instead of wiring a manager of its own.
package recordplane

import (
	"net/http"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// Controller is what one running controller is made of.
type Controller struct {
	// App selects the controllers and their flags, as the binary's command line does. The record
	// controller runs when App.EnableRecordController is set.
	App app.Options
	// Factory holds the backends the record controller may build; nil: none.
	Factory *providers.Factory
	// Record is the record controller's own options: dnsrecord.DefaultOptions() with the test's
	// changes (shorter re-checks and backoffs, most often).
	Record dnsrecord.Options
	// Wrap, when set, wraps the manager's HTTP transport (a benchmark counts its requests).
	Wrap func(http.RoundTripper) http.RoundTripper
}

// Start runs c on env watching a fresh namespace named from prefix, until the test ends, and
// returns the namespace.
func Start(t testing.TB, env *testenv.Env, prefix string, c Controller) string {
	t.Helper()
	ns := testenv.NewNamespace(t, env, prefix)
	StartIn(t, env, ns, c)
	return ns
}

// StartIn runs c on env watching namespace ("" for all of them) and returns a function that stops
// it and waits until it has stopped, as a crash or a restart would; the test's end stops it too.
func StartIn(t testing.TB, env *testenv.Env, namespace string, c Controller) (stop func()) {
	t.Helper()
	factory := c.Factory
	if factory == nil {
		factory = providers.NewFactory()
	}
	return testenv.StartManagerWith(t, env, testenv.ManagerOptions{Namespace: namespace, Wrap: c.Wrap}, func(mgr ctrl.Manager) error {
		return app.AddControllers(mgr, c.App, factory, c.Record)
	})
}
