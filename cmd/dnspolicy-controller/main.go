// Command dnspolicy-controller publishes Gateway listener hostnames into DNS zones for DNSPolicies,
// and DNSRecords into DNS providers.
package main

import (
	"fmt"
	"os"

	"github.com/KimMachineGun/automemlimit/memlimit"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
)

func main() {
	opts, err := app.Parse(os.Args[1:], app.OSEnv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if opts.PrintVersion {
		fmt.Println(app.Version)
		return
	}
	log := opts.Logger()
	ctrl.SetLogger(log)
	app.SetMemoryLimit(log, memlimit.FromCgroup)
	cfg, err := opts.RESTConfig()
	if err != nil {
		log.Error(err, "loading cluster connection")
		os.Exit(1)
	}
	if err := app.Run(ctrl.SetupSignalHandler(), cfg, opts); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}
