package zone

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

var (
	apexOK = true
	noApex = false
)

func z(id, name string) Zone { return Zone{ID: id, DNSName: name} }

func TestChoose(t *testing.T) {
	for _, tc := range []struct {
		name     string
		host     string
		zones    []Zone
		caps     bool
		assigned string
		want     Zone
		wantErr  error
		wantMsg  string
	}{
		{
			name:  "single parent zone",
			host:  "sub.domain.test.example.com",
			zones: []Zone{z("Z1", "example.com")},
			want:  z("Z1", "example.com"),
		},
		{
			name:  "most specific of several",
			host:  "sub.domain.test.example.com",
			zones: []Zone{z("Z1", "example.com"), z("Z3", "domain.test.example.com"), z("Z2", "test.example.com")},
			want:  z("Z3", "domain.test.example.com"),
		},
		{
			name:  "unrelated zones are ignored",
			host:  "sub.domain.test.example.com",
			zones: []Zone{z("Z1", "example.com"), z("Z2", "test.example.com"), z("Z3", "test.otherdomain.com")},
			want:  z("Z2", "test.example.com"),
		},
		{
			name:    "a child zone below the host does not hold it",
			host:    "test.example.com",
			zones:   []Zone{z("Z1", "sub.test.example.com")},
			wantErr: ErrNoZone,
			wantMsg: "no zone for host: test.example.com is in none of the zones [sub.test.example.com]",
		},
		{
			name:    "suffix only on a label boundary",
			host:    "app.badexample.com",
			zones:   []Zone{z("Z1", "example.com")},
			wantErr: ErrNoZone,
			wantMsg: "no zone for host: app.badexample.com is in none of the zones [example.com]",
		},
		{
			name:  "label boundary: the real parent wins over a look-alike",
			host:  "app.badexample.com",
			zones: []Zone{z("Z1", "example.com"), z("Z2", "badexample.com")},
			want:  z("Z2", "badexample.com"),
		},
		{
			name:  "case and trailing dots are ignored; the zone comes back as listed",
			host:  "App.Example.COM.",
			zones: []Zone{z("Z1", "EXAMPLE.com.")},
			want:  z("Z1", "EXAMPLE.com."),
		},
		{
			name:  "wildcard host goes into the zone of its parent",
			host:  "*.example.com",
			zones: []Zone{z("Z1", "example.com")},
			caps:  noApex,
			want:  z("Z1", "example.com"),
		},
		{
			name:  "wildcard host below a sub-zone",
			host:  "*.app.example.com",
			zones: []Zone{z("Z1", "example.com"), z("Z2", "app.example.com")},
			caps:  noApex,
			want:  z("Z2", "app.example.com"),
		},
		{
			name:  "two-label public suffix",
			host:  "sub.domain.test.example.co.uk",
			zones: []Zone{z("Z1", "example.co.uk")},
			want:  z("Z1", "example.co.uk"),
		},
		{
			name:    "a zone that is a public suffix is refused",
			host:    "sub.domain.test.example.co.uk",
			zones:   []Zone{z("Z1", "co.uk")},
			wantErr: ErrPublicSuffix,
			wantMsg: "public suffix: zone co.uk (Z1) is a public suffix and may not hold sub.domain.test.example.co.uk",
		},
		{
			name:    "a zone above the public suffix is refused too",
			host:    "www.example.co.uk",
			zones:   []Zone{z("Z1", "uk")},
			wantErr: ErrPublicSuffix,
		},
		{
			name:    "the root zone is refused",
			host:    "www.example.com",
			zones:   []Zone{z("Z1", ".")},
			wantErr: ErrPublicSuffix,
		},
		{
			name:  "a proper zone wins over a public-suffix zone",
			host:  "www.example.co.uk",
			zones: []Zone{z("Z1", "co.uk"), z("Z2", "example.co.uk")},
			want:  z("Z2", "example.co.uk"),
		},
		{
			name:    "host that is a TLD",
			host:    "com",
			zones:   []Zone{z("Z1", "com")},
			caps:    apexOK,
			wantErr: ErrPublicSuffix,
			wantMsg: "public suffix: host com is a public suffix",
		},
		{
			name:    "host that is a two-label public suffix",
			host:    "co.uk",
			zones:   []Zone{z("Z1", "co.uk")},
			caps:    apexOK,
			wantErr: ErrPublicSuffix,
		},
		{
			name:    "wildcard over a public suffix",
			host:    "*.com",
			zones:   []Zone{z("Z1", "com")},
			wantErr: ErrPublicSuffix,
		},
		{
			name:    "wildcard public-suffix rule (*.ck)",
			host:    "www.shop.ck",
			zones:   []Zone{z("Z1", "shop.ck")},
			wantErr: ErrPublicSuffix,
		},
		{
			name:  "a private-section suffix is a real domain and may be a zone",
			host:  "app.blogspot.com",
			zones: []Zone{z("Z1", "blogspot.com")},
			want:  z("Z1", "blogspot.com"),
		},
		{
			name:  "an unmanaged top-level label may be a private zone",
			host:  "app.internal",
			zones: []Zone{z("Z1", "internal")},
			want:  z("Z1", "internal"),
		},
		{
			name:  "apex allowed",
			host:  "example.com",
			zones: []Zone{z("Z1", "example.com")},
			caps:  apexOK,
			want:  z("Z1", "example.com"),
		},
		{
			name:    "apex refused",
			host:    "example.com",
			zones:   []Zone{z("Z1", "example.com")},
			caps:    noApex,
			wantErr: ErrApexNotAllowed,
			wantMsg: "apex domain not allowed: example.com is the apex of zone example.com (Z1), and this provider cannot hold records at a zone apex",
		},
		{
			name:    "apex refused: the shadowed parent zone is not tried instead",
			host:    "test.example.com",
			zones:   []Zone{z("Z1", "example.com"), z("Z2", "test.example.com")},
			caps:    noApex,
			wantErr: ErrApexNotAllowed,
		},
		{
			name:    "same name twice: public and private hosted zone",
			host:    "app.example.com",
			zones:   []Zone{z("Z1", "com.example"), z("Zpriv", "example.com"), z("Zpub", "example.com")},
			wantErr: ErrAmbiguousZone,
			wantMsg: "multiple zones found for host: app.example.com: zones [Zpriv, Zpub] are all named example.com; remove or filter out all but one",
		},
		{
			name:  "same name twice below a more specific match is not ambiguous",
			host:  "a.app.example.com",
			zones: []Zone{z("Z1", "example.com"), z("Z2", "example.com"), z("Z3", "app.example.com")},
			want:  z("Z3", "app.example.com"),
		},
		{
			name:  "the same zone listed twice is one zone",
			host:  "app.example.com",
			zones: []Zone{z("Z1", "example.com"), z("Z1", "example.com")},
			want:  z("Z1", "example.com"),
		},
		{
			name:    "no zones at all",
			host:    "app.example.com",
			wantErr: ErrNoZone,
			wantMsg: "no zone for host: app.example.com is in none of the zones []",
		},
		{
			name:     "sticky: the assigned zone stays though a more specific one appeared",
			host:     "a.app.example.com",
			zones:    []Zone{z("Z1", "example.com"), z("Z2", "app.example.com")},
			assigned: "Z1",
			want:     z("Z1", "example.com"),
		},
		{
			name:     "sticky: the assigned zone settles two zones of the same name",
			host:     "app.example.com",
			zones:    []Zone{z("Zpub", "example.com"), z("Zpriv", "example.com")},
			assigned: "Zpriv",
			want:     z("Zpriv", "example.com"),
		},
		{
			name:     "sticky: an assigned zone that is gone is replaced",
			host:     "a.app.example.com",
			zones:    []Zone{z("Z1", "example.com"), z("Z2", "app.example.com")},
			assigned: "Zgone",
			want:     z("Z2", "app.example.com"),
		},
		{
			name:     "sticky: an assigned ID now naming an unrelated zone is not kept",
			host:     "a.app.example.com",
			zones:    []Zone{z("Z1", "example.org"), z("Z2", "app.example.com")},
			assigned: "Z1",
			want:     z("Z2", "app.example.com"),
		},
		{
			name:     "sticky: an assigned public-suffix zone is not kept",
			host:     "www.example.co.uk",
			zones:    []Zone{z("Z1", "co.uk"), z("Z2", "example.co.uk")},
			assigned: "Z1",
			want:     z("Z2", "example.co.uk"),
		},
		{
			name:     "sticky: the apex rule still applies to the assigned zone",
			host:     "app.example.com",
			zones:    []Zone{z("Z1", "app.example.com")},
			caps:     noApex,
			assigned: "Z1",
			wantErr:  ErrApexNotAllowed,
		},
		{
			name:    "empty host",
			host:    "",
			zones:   []Zone{z("Z1", "example.com")},
			wantErr: ErrInvalidHost,
		},
		{
			name:    "empty label",
			host:    "a..example.com",
			zones:   []Zone{z("Z1", "example.com")},
			wantErr: ErrInvalidHost,
		},
		{
			name:    "bare wildcard",
			host:    "*.",
			zones:   []Zone{z("Z1", "example.com")},
			wantErr: ErrInvalidHost,
		},
		{
			name:    "wildcard not in the first label",
			host:    "a.*.example.com",
			zones:   []Zone{z("Z1", "example.com")},
			wantErr: ErrInvalidHost,
		},
		{
			name:    "too long",
			host:    strings.Repeat("a.", 130) + "example.com",
			zones:   []Zone{z("Z1", "example.com")},
			wantErr: ErrInvalidHost,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Choose(tc.host, tc.zones, tc.caps, tc.assigned)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Choose() error = %v, want %v", err, tc.wantErr)
				}
				if tc.wantMsg != "" && err.Error() != tc.wantMsg {
					t.Errorf("Choose() error\n got %q\nwant %q", err.Error(), tc.wantMsg)
				}
				if got != (Zone{}) {
					t.Errorf("Choose() returned zone %v with an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Choose() error = %v", err)
			}
			if got != tc.want {
				t.Errorf("Choose() = %v, want %v", got, tc.want)
			}
		})
	}
}

// The sentinels must be told apart: the controller maps each to its own condition message.
func TestErrorsAreDistinct(t *testing.T) {
	all := []error{ErrInvalidHost, ErrNoZone, ErrPublicSuffix, ErrApexNotAllowed, ErrAmbiguousZone}
	for i, a := range all {
		for j, b := range all {
			if i != j && errors.Is(a, b) {
				t.Errorf("%v matches %v", a, b)
			}
		}
	}
}

func TestNoZoneMessageIsBounded(t *testing.T) {
	var zones []Zone
	for i := range 50 {
		zones = append(zones, z(fmt.Sprint("Z", i), fmt.Sprintf("zone%02d.example.org", i)))
	}
	_, err := Choose("app.example.com", zones, apexOK, "")
	want := "no zone for host: app.example.com is in none of the zones [zone00.example.org, zone01.example.org, " +
		"zone02.example.org, zone03.example.org, zone04.example.org, zone05.example.org, zone06.example.org, " +
		"zone07.example.org, zone08.example.org, zone09.example.org and 40 more]"
	if err == nil || err.Error() != want {
		t.Errorf("error\n got %v\nwant %s", err, want)
	}
}

// The message must not depend on the order the provider lists zones in, or every listing would
// rewrite the status.
func TestMessagesAreStable(t *testing.T) {
	a := []Zone{z("Zb", "example.com"), z("Za", "example.com"), z("Zc", "other.org"), z("Zd", "uk"), z("Ze", "co.uk")}
	b := []Zone{z("Ze", "co.uk"), z("Zc", "other.org"), z("Za", "example.com"), z("Zd", "uk"), z("Zb", "example.com")}
	for _, host := range []string{"app.example.com", "app.example.net", "app.example.co.uk"} {
		_, errA := Choose(host, a, apexOK, "")
		_, errB := Choose(host, b, apexOK, "")
		if errA == nil || errB == nil || errA.Error() != errB.Error() {
			t.Errorf("%s: messages differ by listing order: %v / %v", host, errA, errB)
		}
	}
}

// FuzzChoose checks, for any input, that Choose does not panic, fails only with its own errors, and
// that a chosen zone is one of those listed, holds the host on a label boundary and is the most
// specific such zone unless it was the assigned one.
func FuzzChoose(f *testing.F) {
	f.Add("app.example.com", "example.com,app.example.com", false, "")
	f.Add("*.example.co.uk", "co.uk,example.co.uk", true, "0")
	f.Add("example.com.", "EXAMPLE.COM.,example.com", false, "1")
	f.Add("app.badexample.com", "example.com,.,", true, "")
	f.Add("a..b", "b,", true, "")
	f.Add("*.", "*.,*", true, "0")
	f.Fuzz(func(t *testing.T, host, zoneList string, apex bool, assigned string) {
		var zones []Zone
		for i, name := range strings.Split(zoneList, ",") {
			zones = append(zones, z(fmt.Sprint(i%4), name))
		}
		got, err := Choose(host, zones, apex, assigned)
		if err != nil {
			for _, sentinel := range []error{ErrInvalidHost, ErrNoZone, ErrPublicSuffix, ErrApexNotAllowed, ErrAmbiguousZone} {
				if errors.Is(err, sentinel) {
					return
				}
			}
			t.Fatalf("Choose(%q, %q) returned a foreign error: %v", host, zoneList, err)
		}
		listed := false
		for _, zn := range zones {
			listed = listed || zn == got
		}
		if !listed {
			t.Fatalf("Choose(%q, %q) = %v, which is not listed", host, zoneList, got)
		}
		hostLabels := labels(strings.TrimPrefix(strings.ToLower(strings.TrimSuffix(host, ".")), "*."))
		zoneLabels := labels(strings.ToLower(strings.TrimSuffix(got.DNSName, ".")))
		if !labelSuffix(hostLabels, zoneLabels) || len(zoneLabels) == 0 {
			t.Fatalf("Choose(%q, %q) = %v, not a parent of the host on a label boundary", host, zoneList, got)
		}
		if !apex && !strings.HasPrefix(host, "*.") && len(zoneLabels) == len(hostLabels) {
			t.Fatalf("Choose(%q, %q) = %v: the apex, though not allowed", host, zoneList, got)
		}
		if got.ID == assigned {
			return
		}
		for _, other := range zones {
			ol := labels(strings.ToLower(strings.TrimSuffix(other.DNSName, ".")))
			if labelSuffix(hostLabels, ol) && len(ol) > len(zoneLabels) {
				// A more specific parent is only ever passed over for being a public suffix.
				if _, perr := Choose(strings.Join(ol, "."), nil, apexOK, ""); !errors.Is(perr, ErrPublicSuffix) {
					t.Fatalf("Choose(%q, %q) = %v, but %v is more specific", host, zoneList, got, other)
				}
			}
		}
	})
}

func labels(name string) []string {
	if name == "" {
		return nil
	}
	return strings.Split(name, ".")
}

func labelSuffix(host, zone []string) bool {
	if len(zone) > len(host) {
		return false
	}
	off := len(host) - len(zone)
	for i := range zone {
		if host[off+i] != zone[i] {
			return false
		}
	}
	return true
}
