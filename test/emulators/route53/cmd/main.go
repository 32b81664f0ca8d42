// Command route53 runs the Route 53 API emulator on a loopback port, so the aws backend can be tried
// locally and several local control planes can share one emulated zone:
//
//	go run ./test/emulators/route53/cmd --listen 127.0.0.1:8053 --zone example.com --zone example.org
//
// Point a kuadrant.io/aws Secret's ENDPOINT_URL at http://127.0.0.1:8053; any access key works.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/test/emulators/route53"
)

type zoneList []string

func (z *zoneList) String() string { return strings.Join(*z, ",") }

func (z *zoneList) Set(v string) error {
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			*z = append(*z, name)
		}
	}
	return nil
}

func main() {
	var zones zoneList
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

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	fmt.Println("calls:", emu.Calls())
}
