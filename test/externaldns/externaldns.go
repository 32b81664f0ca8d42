// Package externaldns runs external-dns's own webhook provider server, over external-dns's in-memory
// provider, for the tests of providers/webhook: the server of the protocol as external-dns ships it,
// not one written here.
//
// The server is the command in webhookserver/, a Go module of its own (see its package comment for
// why), built with the go command on first use and cached under the user's cache directory; the go
// build cache makes later builds take a second. Tests using it carry the integration tag: they run a
// built binary.
package externaldns

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Version is the external-dns release the server is built from (webhookserver/go.mod).
const Version = "v0.22.0"

// Server is one running webhook provider server.
type Server struct {
	// URL is its base URL, on 127.0.0.1.
	URL string
}

// Options configure one server: the zones its in-memory provider holds, and the domain filter it
// answers `GET /` with (external-dns's --domain-filter, --exclude-domains, --regex-domain-filter).
type Options struct {
	Zones          []string
	DomainFilter   []string
	ExcludeDomains []string
	RegexFilter    string
}

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// build compiles the server once per test process.
func build() (string, error) {
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		src := filepath.Join(filepath.Dir(file), "webhookserver")
		cache, err := os.UserCacheDir()
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(cache, "dnspolicy-controller", "bin", "external-dns-webhookserver-"+Version)
		cmd := exec.Command("go", "build", "-o", binary, ".")
		cmd.Dir = src
		// The server's module has its own go.mod; nothing of the caller's module flags applies.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build %s: %w\n%s", src, err, out)
		}
	})
	return binary, buildErr
}

// Start builds (once) and starts a server for the test, stopped when the test ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-listen", "127.0.0.1:0",
		"-zones", strings.Join(opts.Zones, ","),
		"-domain-filter", strings.Join(opts.DomainFilter, ","),
		"-exclude-domains", strings.Join(opts.ExcludeDomains, ","),
		"-regex-domain-filter", opts.RegexFilter)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var logs strings.Builder
	var logsMu sync.Mutex
	cmd.Stderr = writerFunc(func(p []byte) (int, error) {
		logsMu.Lock()
		defer logsMu.Unlock()
		return logs.Write(p)
	})
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() {
			logsMu.Lock()
			t.Logf("external-dns webhook server log:\n%s", logs.String())
			logsMu.Unlock()
		}
	})
	// The server prints its address once it listens.
	addr := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		addr <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, r)
	}()
	select {
	case a := <-addr:
		if a == "" {
			t.Fatalf("the external-dns webhook server exited before listening")
		}
		return &Server{URL: "http://" + a}
	case <-time.After(time.Minute):
		t.Fatalf("the external-dns webhook server did not listen within a minute")
		return nil
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
