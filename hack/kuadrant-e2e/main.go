// Command kuadrant-e2e is the Go half of hack/kuadrant-e2e.sh, which runs Kuadrant's dns-operator
// e2e suite, unchanged, against our controller on a local control plane:
//
//	kuadrant-e2e port                       print a loopback host:port free for TCP and UDP
//	kuadrant-e2e gc -kubeconfig FILE        stand in for the garbage collector until SIGTERM
//	kuadrant-e2e report NAME=FILE...        print the counts of Ginkgo JSON reports as a table
//
// The script does the rest (building, starting, Secrets) with the tools a user has.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "port":
		var addr string
		if addr, err = freeport.Pick(); err == nil {
			fmt.Println(addr)
		}
	case "gc":
		err = runGC(os.Args[2:])
	case "report":
		var failed bool
		if failed, err = runReport(os.Stdout, os.Args[2:]); err == nil && failed {
			os.Exit(1)
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kuadrant-e2e:", err)
		os.Exit(2)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: kuadrant-e2e port | gc -kubeconfig FILE | report NAME=FILE...")
	os.Exit(2)
}

func runGC(args []string) error {
	fs := flag.NewFlagSet("gc", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the control plane")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kubeconfig == "" {
		return fmt.Errorf("gc: -kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := newCollector(cfg, os.Stdout)
	if err != nil {
		return err
	}
	return c.run(ctx)
}
