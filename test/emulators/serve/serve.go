// Package serve holds what the standalone emulators share: listening on loopback only, the --zone
// flag, and running until interrupted.
package serve

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// Loopback serves h on addr, which must be a loopback IP address ("127.0.0.1:0" picks a port),
// until the returned server is closed, and returns the address it listens on. Emulators accept any
// well-formed credentials, so they must not be reachable from other hosts.
func Loopback(addr string, h http.Handler) (*http.Server, net.Addr, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, nil, fmt.Errorf("listen address %s: the emulator listens on a loopback IP address only", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, l.Addr(), nil
}

// Zones is a repeatable, comma-separated flag of zone names.
type Zones []string

func (z *Zones) String() string { return strings.Join(*z, ",") }

// Set implements flag.Value.
func (z *Zones) Set(v string) error {
	for _, name := range strings.Split(v, ",") {
		if name = strings.TrimSpace(name); name != "" {
			*z = append(*z, name)
		}
	}
	return nil
}

// UntilInterrupted waits for SIGINT or SIGTERM, shuts srv down and prints the calls the emulator
// counted.
func UntilInterrupted(srv *http.Server, calls func() map[string]int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	fmt.Println("calls:", calls())
}
