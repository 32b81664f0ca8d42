package main

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
)

var keysPolicy = dnssec.Policy{Algorithm: dnssec.ECDSAP256SHA256, DNSKEYTTL: time.Hour, MaxZoneTTL: time.Hour,
	DSTTL: time.Hour, Propagation: time.Minute, DSCheckEvery: time.Minute}

// servedZone serves example.com from the embedded server, signed with ring's keys, and returns the
// server's address.
func servedZone(t *testing.T, ring dnssec.Keyring) string {
	t.Helper()
	// Port 0: the server takes one free port for UDP and TCP alike, so no other test can take it
	// between a pick and the bind.
	s, err := dnsserver.New(dnsserver.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	data := dnsserver.ZoneData{
		Sources: []dnsserver.Source{{Name: "ns/web", Endpoints: []*v1alpha1.Endpoint{
			{DNSName: "www.example.com", RecordType: "A", RecordTTL: 60, Targets: v1alpha1.Targets{"192.0.2.1"}},
		}}},
		Nameservers: []string{"ns1.example.net"},
		Signing:     ring.KeySet(),
	}
	if _, err := s.SetZone("example.com", data); err != nil {
		t.Fatal(err)
	}
	return s.Addr().String()
}

func runPlugin(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), args, &stdout, &stderr, time.Now); code != 0 {
		return stdout.String(), &exitError{stderr.String()}
	}
	return stdout.String(), nil
}

type exitError struct{ msg string }

func (e *exitError) Error() string { return e.msg }

// `dnssec ds --server` prints the DS records of the zone's CDS set as served by the embedded
// server: the keys' own DS records, both of them in the middle of a KSK rollover, the ZSK's never.
func TestDNSSECDSFromServer(t *testing.T) {
	split := keysPolicy
	split.Split = true
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	first, err := dnssec.StepKeys(dnssec.Keyring{Zone: "example.com"}, split, now, "", dnssec.ParentDS{})
	if err != nil {
		t.Fatal(err)
	}
	rolling, err := dnssec.StepKeys(first.Keys, split, now.Add(time.Hour), dnssec.RollKSK, dnssec.ParentDS{})
	if err != nil {
		t.Fatal(err)
	}
	for name, ring := range map[string]dnssec.Keyring{"KSK and ZSK": first.Keys, "KSK rollover": rolling.Keys} {
		t.Run(name, func(t *testing.T) {
			addr := servedZone(t, ring)
			out, err := runPlugin(t, "dnssec", "ds", "example.com", "--server", addr)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSpace(out), "\n")
			want := ring.DSRecords()
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) || len(want) != len(ring.KeySet().WantDS()) {
				t.Fatalf("ds --server printed\n%s\nwant\n%s", out, strings.Join(want, "\n"))
			}
			// Each line is a DS record a parent can load.
			for _, line := range got {
				rr, err := dns.NewRR(line)
				if err != nil || rr.Header().Rrtype != dns.TypeDS {
					t.Fatalf("%q is not a DS record: %v", line, err)
				}
			}
		})
	}

	// A zone the server does not serve is an error, not an empty list.
	addr := servedZone(t, first.Keys)
	if _, err := runPlugin(t, "dnssec", "ds", "example.org", "--server", addr); err == nil || !strings.Contains(err.Error(), "asking "+addr+" for the CDS set of example.org.: REFUSED") {
		t.Fatalf("ds of a zone not served: %v", err)
	}
}

func TestDNSSECRolloverFlags(t *testing.T) {
	for _, args := range [][]string{{"dnssec", "rollover", "example.com"}, {"dnssec", "rollover", "example.com", "--zsk", "--ksk"}} {
		if _, err := runPlugin(t, args...); err == nil || !strings.Contains(err.Error(), "give one of --zsk and --ksk") {
			t.Fatalf("%v: %v", args, err)
		}
	}
}

// Given the servers of several clusters, `dnssec ds` compares their DNSKEY sets: servers sharing the
// keys' Secret agree and print the DS once; a server with keys of its own (a cluster started before
// the Secret was copied to it) is named with the keys it lacks.
func TestDNSSECDSComparesServers(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	shared, err := dnssec.StepKeys(dnssec.Keyring{Zone: "example.com"}, keysPolicy, now, "", dnssec.ParentDS{})
	if err != nil {
		t.Fatal(err)
	}
	own, err := dnssec.StepKeys(dnssec.Keyring{Zone: "example.com"}, keysPolicy, now, "", dnssec.ParentDS{})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := servedZone(t, shared.Keys), servedZone(t, shared.Keys), servedZone(t, own.Keys)

	out, err := runPlugin(t, "dnssec", "ds", "example.com", "--server", a, "--server", b)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != shared.Keys.DSRecords()[0] {
		t.Fatalf("two servers with the same keys: %q, want %q", out, shared.Keys.DSRecords()[0])
	}

	_, err = runPlugin(t, "dnssec", "ds", "example.com", "--server", a+","+c)
	theirs, ours := shared.Keys.Keys[0], own.Keys.Keys[0]
	want := fmt.Sprintf("the servers of zone example.com. publish different DNSKEY sets, so they sign with different keys and resolvers fail to validate one of them: %s lacks algorithm 13 (tag %d, flags 257) of %s, and has algorithm 13 (tag %d, flags 257) that %s lacks",
		c, theirs.KeyTag(), a, ours.KeyTag(), a)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("servers with different keys: %v\nwant %s", err, want)
	}
}
