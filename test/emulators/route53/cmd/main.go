// Command route53 runs the Route 53 API emulator on a loopback port, so the aws backend can be tried
// locally and several local control planes can share one emulated zone:
//
//	go run ./test/emulators/route53/cmd --listen 127.0.0.1:8053 --zone example.com --zone example.org
//
// Point a kuadrant.io/aws Secret's ENDPOINT_URL at http://127.0.0.1:8053; any access key works.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/test/emulators/route53"
	"github.com/dnspolicy/dnspolicy-controller/test/emulators/serve"
)

func main() {
	var zones serve.Zones
	listen := flag.String("listen", "127.0.0.1:8053", "loopback address to serve the API on")
	flag.Var(&zones, "zone", "hosted zone to create (repeatable, or comma-separated)")
	rps := flag.Float64("rps", 10, "requests per second of the token bucket; negative disables throttling")
	burst := flag.Int("burst", 50, "token bucket size")
	insync := flag.Duration("insync-after", 100*time.Millisecond, "how long a change stays PENDING")
	flag.Parse()

	emu := route53.New(route53.Options{Zones: zones, RequestsPerSecond: *rps, Burst: *burst, InsyncAfter: *insync})
	srv, url, err := emu.Listen(*listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("Route 53 emulator on %s, zones: %s\n", url, zones.String())

	serve.UntilInterrupted(srv, emu.Calls)
}
