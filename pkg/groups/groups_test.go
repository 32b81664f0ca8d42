package groups

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"", true},
		{"primary", true},
		{"us-east-1.a_b", true},
		{strings.Repeat("g", MaxNameLength), true},
		{strings.Repeat("g", MaxNameLength+1), false},
		{"a;b", false},
		{"a&b", false},
		{"a,b", false},
		{"a b", false},
		{`a"b`, false},
		{"a'b", false},
	} {
		if err := Validate(tc.name); (err == nil) != tc.ok {
			t.Errorf("Validate(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestRecordName(t *testing.T) {
	for zone, want := range map[string]string{
		"example.com":  "kuadrant-active-groups.example.com",
		"example.com.": "kuadrant-active-groups.example.com",
	} {
		if got := RecordName(zone); got != want {
			t.Errorf("RecordName(%q) = %q, want %q", zone, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   []string
	}{
		{"none", nil, nil},
		{"as the CLI writes it", []string{"version=1;groups=a&&b"}, []string{"a", "b"}},
		{"quoted target", []string{`"version=1;groups=a&&b"`}, []string{"a", "b"}},
		{"groups first, as Kuadrant's comment shows", []string{"groups=east&&west;version=1"}, []string{"east", "west"}},
		{"version not checked", []string{"version=2;groups=a"}, []string{"a"}},
		{"no groups key", []string{"version=1"}, nil},
		{"empty groups", []string{"version=1;groups="}, nil},
		{"malformed pairs skipped", []string{"junk;groups=a=b;x;groups=c"}, []string{"c"}},
		{"empty names and duplicates dropped", []string{"groups=a&&&&a&&b"}, []string{"a", "b"}},
		{"strings joined before splitting", []string{"version=1;gro", "ups=a&&b"}, []string{"a", "b"}},
		{"two groups pairs", []string{"groups=b;groups=a&&b"}, []string{"b", "a"}},
		{"other keys ignored", []string{"owner=x;groups=a"}, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Parse(tc.values); !slices.Equal(got, tc.want) {
				t.Errorf("Parse(%q) = %q, want %q", tc.values, got, tc.want)
			}
		})
	}
}

func TestActive(t *testing.T) {
	active := []string{"east"}
	for _, tc := range []struct {
		group string
		want  bool
	}{{"", true}, {"east", true}, {"west", false}} {
		if got := Active(tc.group, active); got != tc.want {
			t.Errorf("Active(%q) = %v, want %v", tc.group, got, tc.want)
		}
	}
	if Active("east", nil) {
		t.Error("a group is active with no active-groups TXT")
	}
}

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		target string
		want   []string
		err    error
	}{
		{`"version=1;groups=a&&b"`, []string{"a", "b"}, nil},
		{`version=1;groups=a`, []string{"a"}, nil},
		{`"version=1"`, nil, nil},
		{`"version=1;groups="`, nil, nil},
		{`"groups=a;version=1"`, nil, ErrOtherVersion},
		{`"version=2;groups=a"`, nil, ErrOtherVersion},
	} {
		got, err := ParseTarget(tc.target)
		if !errors.Is(err, tc.err) || !slices.Equal(got, tc.want) {
			t.Errorf("ParseTarget(%s) = %q, %v; want %q, %v", tc.target, got, err, tc.want, tc.err)
		}
	}
}

func TestTarget(t *testing.T) {
	for _, tc := range []struct {
		groups []string
		want   string
	}{
		{nil, `"version=1"`},
		{[]string{""}, `"version=1"`},
		{[]string{"b", "a", "b"}, `"version=1;groups=a&&b"`},
		{[]string{"only"}, `"version=1;groups=only"`},
	} {
		got := Target(tc.groups)
		if got != tc.want {
			t.Errorf("Target(%q) = %s, want %s", tc.groups, got, tc.want)
		}
		back, err := ParseTarget(got)
		if err != nil || !slices.Equal(Parse([]string{got}), back) {
			t.Errorf("Target(%q) = %s does not read back alike: %q, %q, %v", tc.groups, got, Parse([]string{got}), back, err)
		}
	}
}

func TestWithWithout(t *testing.T) {
	if got := With([]string{"b"}, "a"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("With = %q", got)
	}
	if got := With([]string{"a", "b"}, "a"); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("With an active group = %q", got)
	}
	in := []string{"a", "b"}
	if got := Without(in, "a"); !slices.Equal(got, []string{"b"}) || !slices.Equal(in, []string{"a", "b"}) {
		t.Errorf("Without = %q (input now %q)", got, in)
	}
	if got := Without([]string{"a"}, "c"); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Without an inactive group = %q", got)
	}
}
