// Command clouddns runs the Google Cloud DNS API emulator on a loopback port, so the google backend
// can be tried locally and several local control planes can share one emulated zone:
//
//	go run ./test/emulators/clouddns/cmd --listen 127.0.0.1:8054 --project p --zone example.com
//
// Point a kuadrant.io/gcp Secret at it: PROJECT_ID=p and ENDPOINT_URL=http://127.0.0.1:8054/ (no
// GOOGLE key is needed: the backend sends no credentials to an endpoint override).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/dnspolicy/dnspolicy-controller/test/emulators/clouddns"
	"github.com/dnspolicy/dnspolicy-controller/test/emulators/serve"
)

func main() {
	var zones serve.Zones
	listen := flag.String("listen", "127.0.0.1:8054", "loopback address to serve the API on")
	project := flag.String("project", "p", "the project ID the emulator serves")
	flag.Var(&zones, "zone", "managed zone (DNS name) to create (repeatable, or comma-separated)")
	rps := flag.Float64("rps", 20, "requests per second of the token bucket; negative disables the limit")
	burst := flag.Int("burst", 50, "token bucket size")
	flag.Parse()

	emu := clouddns.New(clouddns.Options{Project: *project, Zones: zones, RequestsPerSecond: *rps, Burst: *burst})
	srv, url, err := emu.Listen(*listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("Cloud DNS emulator on %s, project %s, zones: %s\n", url, *project, zones.String())

	serve.UntilInterrupted(srv, emu.Calls)
}
