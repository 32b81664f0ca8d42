package resolve

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNameservers(t *testing.T) {
	got := Nameservers(" 10.0.0.1, 10.0.0.2:5353,,coredns.kube-system.svc , ::1")
	want := []string{"10.0.0.1:53", "10.0.0.2:5353", "coredns.kube-system.svc:53", "[::1]:53"}
	if !slices.Equal(got, want) {
		t.Errorf("Nameservers = %q, want %q", got, want)
	}
	if got := Nameservers(""); got != nil {
		t.Errorf("Nameservers(\"\") = %q", got)
	}
}

// silent is a loopback UDP socket that reads questions and never answers.
func silent(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	return pc.LocalAddr().String()
}

// systemAt is a system resolver that asks addr only.
func systemAt(addr string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
}

func TestLookupTXTTimesOut(t *testing.T) {
	addr := silent(t)
	r := &Resolver{Timeout: 200 * time.Millisecond, System: systemAt(silent(t))}
	start := time.Now()
	values, err := r.LookupTXT(t.Context(), "kuadrant-active-groups.example.test", []string{addr})
	if err == nil {
		t.Fatalf("LookupTXT answered %q from servers that never answer", values)
	}
	if !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "system resolver") {
		t.Errorf("error does not say which servers failed: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("LookupTXT took %s with a 200ms timeout", took)
	}
}
