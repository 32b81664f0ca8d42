//go:build integration

package resolve

import (
	"slices"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/pkg/groups"
	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/freeport"
)

const zoneDB = `$TTL 60
@ SOA ns.example.net. hostmaster.example.net. 1 3600 600 86400 60
@ NS ns.example.net.
kuadrant-active-groups TXT "version=1;groups=east&&west"
split TXT "version=1;gro" "ups=a&&b"
`

// startBIND serves example.test from zoneDB on loopback and waits until it answers.
func startBIND(t *testing.T) string {
	t.Helper()
	addr := freeport.Addr(t)
	log := bind.StartPrimary(t, addr, "example.test", zoneDB)
	r := &Resolver{Timeout: 200 * time.Millisecond, System: systemAt(silent(t))}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := ask(t.Context(), "example.test", addr, r.Timeout); err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("named did not answer within 30 s:\n%s", log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestLookupTXTAgainstBIND(t *testing.T) {
	addr := startBIND(t)
	dead := silent(t)
	for _, tc := range []struct {
		name        string
		host        string
		nameservers []string
		system      string
		want        []string
		groups      []string
	}{
		{"a listed nameserver", groups.RecordName("example.test."), []string{addr}, silent(t),
			[]string{"version=1;groups=east&&west"}, []string{"east", "west"}},
		{"past one that does not answer", groups.RecordName("example.test"), []string{dead, addr}, silent(t),
			[]string{"version=1;groups=east&&west"}, []string{"east", "west"}},
		{"strings of a record joined", "split.example.test", []string{addr}, silent(t),
			[]string{"version=1;groups=a&&b"}, []string{"a", "b"}},
		{"the system resolver when none is listed", groups.RecordName("example.test"), nil, addr,
			[]string{"version=1;groups=east&&west"}, []string{"east", "west"}},
		{"the system resolver when the listed ones fail", groups.RecordName("example.test"), []string{dead}, addr,
			[]string{"version=1;groups=east&&west"}, []string{"east", "west"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Resolver{Timeout: 500 * time.Millisecond, System: systemAt(tc.system)}
			got, err := r.LookupTXT(t.Context(), tc.host, tc.nameservers)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("LookupTXT = %q, want %q", got, tc.want)
			}
			if g := groups.Parse(got); !slices.Equal(g, tc.groups) {
				t.Errorf("groups = %q, want %q", g, tc.groups)
			}
		})
	}
	t.Run("no TXT anywhere", func(t *testing.T) {
		r := &Resolver{Timeout: 500 * time.Millisecond, System: systemAt(addr)}
		if got, err := r.LookupTXT(t.Context(), groups.RecordName("other.example.test"), []string{addr}); err == nil {
			t.Errorf("LookupTXT of a missing name = %q, want an error", got)
		}
	})
}
