// Package freeport picks loopback addresses for servers a test starts in another process.
//
// A port the kernel hands out for ":0" comes from its ephemeral range and is free only until the
// next outgoing connection: a control plane starting meanwhile opens many, and any of them may
// take the port before the other process binds it. Ports below that range are never given to
// outgoing connections, so one found free there stays free unless another test picks it too.
package freeport

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// lowest is the bottom of the range picked from: above the well-known and most registered ports.
const lowest = 10000

// Pick returns a loopback address ("127.0.0.1:port") whose port is free right now for both TCP
// and UDP (a DNS server needs both) and lies below the kernel's ephemeral range.
func Pick() (string, error) {
	high := ephemeralLow()
	for range 1000 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(lowest+rand.IntN(high-lowest)))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		c, err := net.ListenPacket("udp", addr)
		_ = l.Close()
		if err != nil {
			continue
		}
		_ = c.Close()
		return addr, nil
	}
	return "", errors.New("freeport: no loopback port free for both TCP and UDP below the ephemeral range")
}

// Addr is Pick for tests: it fails t when no port is free.
func Addr(t testing.TB) string {
	t.Helper()
	addr, err := Pick()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// ephemeralLow is the first port of Linux's ephemeral range; elsewhere, or when the range leaves
// too little room below it, the IANA range's start.
func ephemeralLow() int {
	const iana = 49152
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return iana
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return iana
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < lowest+1000 {
		return iana
	}
	return n
}

// PickOn returns a port below the kernel's ephemeral range that is free for TCP on every one of
// the addresses (loopback addresses standing for several hosts, all serving on one port).
func PickOn(ips ...string) (int, error) {
	high := ephemeralLow()
	for range 1000 {
		port := lowest + rand.IntN(high-lowest)
		free := true
		for _, ip := range ips {
			l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
			if err != nil {
				free = false
				break
			}
			_ = l.Close()
		}
		if free {
			return port, nil
		}
	}
	return 0, errors.New("freeport: no port free on every one of " + strings.Join(ips, ", "))
}

// PortOn is PickOn for tests: it fails t when no port is free.
func PortOn(t testing.TB, ips ...string) int {
	t.Helper()
	port, err := PickOn(ips...)
	if err != nil {
		t.Fatal(err)
	}
	return port
}
