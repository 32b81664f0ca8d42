//go:build integration

package dnsserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/test/bind"
	"github.com/dnspolicy/dnspolicy-controller/test/geodb"
)

// digResult is what dig printed, read back from its standard output.
type digResult struct {
	out    string
	status string
	flags  []string
	counts map[string]int
	answer []string // "name type value" per answer record, TTL dropped
}

var (
	digStatus = regexp.MustCompile(`status: (\w+)`)
	digFlags  = regexp.MustCompile(`;; flags: ([a-z ]+);`)
	digCount  = regexp.MustCompile(`(QUERY|ANSWER|AUTHORITY|ADDITIONAL): (\d+)`)
)

// dig runs Debian's dig against the server. It reports the last answer when dig retried (over TCP).
func dig(t *testing.T, s *Server, args ...string) digResult {
	t.Helper()
	bin := bind.Tool(t, "dig")
	ap := s.Addr()
	full := append([]string{"@" + ap.Addr().String(), "-p", strconv.Itoa(int(ap.Port())), "+tries=1", "+time=5"}, args...)
	out, err := exec.Command(bin, full...).CombinedOutput()
	if err != nil {
		t.Fatalf("dig %s: %v\n%s", strings.Join(full, " "), err, out)
	}
	text := string(out)
	r := digResult{out: text, counts: map[string]int{}}
	// Keep the last message: after ";; Truncated, retrying in TCP mode." dig prints the TCP answer.
	last := text[max(strings.LastIndex(text, "->>HEADER<<-"), 0):]
	if m := digStatus.FindStringSubmatch(last); m != nil {
		r.status = m[1]
	}
	if m := digFlags.FindStringSubmatch(last); m != nil {
		r.flags = strings.Fields(m[1])
	}
	for _, m := range digCount.FindAllStringSubmatch(last, -1) {
		r.counts[m[1]], _ = strconv.Atoi(m[2])
	}
	if i := strings.Index(last, ";; ANSWER SECTION:\n"); i >= 0 {
		for _, line := range strings.Split(last[i+len(";; ANSWER SECTION:\n"):], "\n") {
			f := strings.Fields(line)
			if len(f) < 5 {
				break
			}
			r.answer = append(r.answer, strings.Join(append([]string{f[0], f[3]}, f[4:]...), " "))
		}
	}
	return r
}

func TestDig(t *testing.T) {
	s := exampleServer(t, Options{Random: seededRandom(3)})
	t.Run("simple host", func(t *testing.T) {
		r := dig(t, s, "www.example.com", "A")
		want := []string{"www.example.com. A 192.0.2.10", "www.example.com. A 192.0.2.11"}
		if r.status != "NOERROR" || !slices.Contains(r.flags, "aa") || slices.Contains(r.flags, "ra") || !slices.Equal(r.answer, want) {
			t.Errorf("%+v\n%s", r, r.out)
		}
	})
	t.Run("simple host through an alias", func(t *testing.T) {
		r := dig(t, s, "app.example.com", "A")
		want := []string{"app.example.com. CNAME www.example.com.", "www.example.com. A 192.0.2.10", "www.example.com. A 192.0.2.11"}
		if !slices.Equal(r.answer, want) {
			t.Errorf("%q\n%s", r.answer, r.out)
		}
	})
	for _, tc := range []struct {
		name, subnet, geo, addr string
	}{
		{"country IE", "81.17.23.0/24", "ie", ""},
		{"country US", "8.8.4.0/24", "us", "198.51.100.3"},
		{"country JP", "133.1.2.0/24", "jp", "198.51.100.4"},
		{"continent EU", "5.9.10.0/24", "geo-eu", "198.51.100.2"},
		{"default", "41.32.1.0/24", "us", "198.51.100.3"},
	} {
		t.Run("loadbalanced host, "+tc.name, func(t *testing.T) {
			r := dig(t, s, "api.example.com", "A", "+subnet="+tc.subnet)
			if len(r.answer) != 4 || r.answer[0] != "api.example.com. CNAME klb.api.example.com." ||
				r.answer[1] != "klb.api.example.com. CNAME "+tc.geo+".klb.api.example.com." ||
				!strings.HasPrefix(r.answer[2], tc.geo+".klb.api.example.com. CNAME c") ||
				(tc.addr != "" && !strings.HasSuffix(r.answer[3], " A "+tc.addr)) {
				t.Errorf("%q\n%s", r.answer, r.out)
			}
			if !strings.Contains(r.out, "CLIENT-SUBNET: "+tc.subnet) {
				t.Errorf("client subnet not echoed:\n%s", r.out)
			}
		})
	}
	t.Run("loadbalanced host located by source address", func(t *testing.T) {
		r := dig(t, s, "-b", loopbackIE.String(), "api.example.com", "A")
		if len(r.answer) != 4 || r.answer[1] != "klb.api.example.com. CNAME ie.klb.api.example.com." {
			t.Errorf("%q\n%s", r.answer, r.out)
		}
	})
	t.Run("NXDOMAIN", func(t *testing.T) {
		r := dig(t, s, "nope.example.com", "A")
		if r.status != "NXDOMAIN" || r.counts["ANSWER"] != 0 || r.counts["AUTHORITY"] != 1 || !strings.Contains(r.out, "IN\tSOA\tns1.example.com.") {
			t.Errorf("%+v\n%s", r, r.out)
		}
	})
	t.Run("NODATA", func(t *testing.T) {
		r := dig(t, s, "txt.example.com", "AAAA")
		if r.status != "NOERROR" || r.counts["ANSWER"] != 0 || r.counts["AUTHORITY"] != 1 {
			t.Errorf("%+v\n%s", r, r.out)
		}
	})
	t.Run("REFUSED", func(t *testing.T) {
		if r := dig(t, s, "www.example.org", "A"); r.status != "REFUSED" || slices.Contains(r.flags, "aa") {
			t.Errorf("%+v\n%s", r, r.out)
		}
	})
	t.Run("TCP fallback for a large answer", func(t *testing.T) {
		r := dig(t, s, "big.example.com", "A")
		if !strings.Contains(r.out, "Truncated, retrying in TCP mode") || r.counts["ANSWER"] != 100 || len(r.answer) != 100 {
			t.Errorf("answers %d\n%s", len(r.answer), r.out)
		}
	})
	t.Run("wildcard and case", func(t *testing.T) {
		r := dig(t, s, "AnY.WiLd.ExAmPlE.cOm", "A")
		if !slices.Equal(r.answer, []string{"AnY.WiLd.ExAmPlE.cOm. A 192.0.2.30"}) {
			t.Errorf("%q\n%s", r.answer, r.out)
		}
	})
	t.Run("ANY", func(t *testing.T) {
		r := dig(t, s, "www.example.com", "ANY")
		if r.status != "NOERROR" || len(r.answer) != 2 || !strings.Contains(r.answer[0], " A ") {
			t.Errorf("%q\n%s", r.answer, r.out)
		}
	})
	t.Run("serial grows", func(t *testing.T) {
		before := dig(t, s, "example.com", "SOA", "+short").out
		st := setZone(t, s, "example.com", ZoneData{Endpoints: append(exampleZone(), ep("new.example.com", "A", 60, "192.0.2.99")),
			Nameservers: []string{"ns1.example.com", "ns2.example.net"}})
		after := dig(t, s, "example.com", "SOA", "+short").out
		b, a := strings.Fields(before), strings.Fields(after)
		if len(b) != 7 || len(a) != 7 || a[2] != strconv.FormatUint(uint64(st.Serial), 10) {
			t.Fatalf("before %q after %q", before, after)
		}
		if bs, _ := strconv.ParseUint(b[2], 10, 32); !serialNewer(st.Serial, uint32(bs)) {
			t.Errorf("serial %s then %s", b[2], a[2])
		}
		if r := dig(t, s, "new.example.com", "A", "+short"); strings.TrimSpace(r.out) != "192.0.2.99" {
			t.Errorf("new name: %q", r.out)
		}
	})
}

// TestDigWeighted sends the loadbalanced query 2,000 times through dig (one process, a batch file)
// and checks the split between weights 30 and 90 (chi-square, one degree of freedom, p = 0.001).
func TestDigWeighted(t *testing.T) {
	s := exampleServer(t, Options{Random: seededRandom(11)})
	const n = 2000
	batch := strings.Repeat("api.example.com A +subnet=81.17.23.0/24 +short\n", n)
	bin := bind.Tool(t, "dig")
	ap := s.Addr()
	cmd := exec.Command(bin, "@"+ap.Addr().String(), "-p", strconv.Itoa(int(ap.Port())), "-f", "-")
	cmd.Stdin = strings.NewReader(batch)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dig: %v\n%s", err, out)
	}
	counts := map[string]int{}
	var other []string
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "198.51.100."):
			counts[line]++
		case strings.HasSuffix(line, "example.com."), line == "":
		default:
			other = append(other, line)
		}
	}
	one, two := float64(counts["198.51.100.1"]), float64(counts["198.51.100.2"])
	chi := (one-n/4)*(one-n/4)/(n/4) + (two-3*n/4)*(two-3*n/4)/(3*n/4)
	if one+two != n || chi > 10.83 {
		t.Errorf("split %v, chi-square %.2f; other lines: %q", counts, chi, other)
	}
}

func TestKuadrantTXTWithDig(t *testing.T) {
	s := startServer(t, Options{})
	setZone(t, s, "k.example.com", ZoneData{Endpoints: kuadrantZone(t)})
	r := dig(t, s, "kuadrant-4bf1h7kq-a-simple.k.example.com", "TXT", "+short")
	if got := strings.TrimSpace(r.out); got != `"heritage=external-dns,external-dns/owner=eu1owner,external-dns/version=1"` {
		t.Errorf("dig shows %s", got)
	}
}

// writeCountries writes a country database placing one network in a country and continent, by
// writing a new file and renaming it over path, as a Secret or ConfigMap volume is updated.
func writeCountries(t *testing.T, path string, n geodb.Network) {
	t.Helper()
	if err := geodb.Write(path, n); err != nil {
		t.Fatal(err)
	}
}

// A geo database replaced on disk changes the answers for a subnet without a restart, as dig
// sees them; a replacement that does not parse is ignored and the last good one kept.
func TestGeoDatabaseReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "geo.mmdb")
	writeCountries(t, path, geodb.Network{CIDR: "81.17.0.0/16", Country: "IE", Continent: "EU"})
	s := startServer(t, Options{GeoIPDatabase: path, GeoIPReloadInterval: 50 * time.Millisecond})
	setZone(t, s, "example.com", ZoneData{Endpoints: loadbalancedAPI()})
	ask := func() string {
		r := dig(t, s, "api.example.com", "A", "+subnet=81.17.23.0/24", "+short")
		return strings.Join(strings.Fields(r.out), " ")
	}
	ie, us := "klb.api.example.com. ie.klb.api.example.com.", "klb.api.example.com. us.klb.api.example.com. c3.klb.api.example.com. 198.51.100.3"
	if got := ask(); !strings.HasPrefix(got, ie) {
		t.Fatalf("before the change: %q", got)
	}
	writeCountries(t, path, geodb.Network{CIDR: "81.17.0.0/16", Country: "US", Continent: "NA"})
	deadline := time.Now().Add(10 * time.Second)
	for ask() != us {
		if time.Now().After(deadline) {
			t.Fatalf("after the change: %q, want %q", ask(), us)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if v := metricValue(t, s, "dnspolicy_dnsserver_geo_reloads_total", `result="ok"`); v != 1 {
		t.Errorf("reloads %v", v)
	}
	if err := os.WriteFile(path+".new", []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return metricValue(t, s, "dnspolicy_dnsserver_geo_reloads_total", `result="error"`) == 1 })
	if got := ask(); got != us {
		t.Errorf("after a broken file: %q, want the last good database's %q", got, us)
	}
}
