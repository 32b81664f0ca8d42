package grant

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCovers(t *testing.T) {
	gs := Grants{
		{Namespaces: []string{"team-a"}, Domains: []string{"example.com"}},
		{Namespaces: []string{"team-b"}, Domains: []string{"B.Demo.Example.org."}},
		{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}, Domains: []string{"gold.example.net"}},
		{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"x", "y"}}}}, Domains: []string{"xy.example.net"}},
	}
	gold := map[string]string{"tier": "gold"}
	for _, c := range []struct {
		ns     string
		labels map[string]string
		name   string
		want   bool
	}{
		{"team-a", nil, "example.com", true},
		{"team-a", nil, "a.example.com", true},
		{"team-a", nil, "*.a.example.com", true},
		{"team-a", nil, "A.EXAMPLE.COM.", true},
		{"team-a", nil, "example.com.", true},
		{"team-a", nil, "badexample.com", false},
		{"team-a", nil, "com", false},
		{"team-a", nil, "example.co", false},
		{"team-a", nil, "example.com.evil.net", false},
		{"team-b", nil, "example.com", false},
		{"team-b", nil, "b.demo.example.org", true},
		{"team-b", nil, "x.b.demo.example.org.", true},
		{"team-b", nil, "demo.example.org", false},
		{"team-b", nil, "ab.demo.example.org", false},
		{"team-c", gold, "gold.example.net", true},
		{"team-c", gold, "www.gold.example.net", true},
		{"team-c", map[string]string{"tier": "silver"}, "gold.example.net", false},
		{"team-c", nil, "gold.example.net", false},
		{"team-a", gold, "gold.example.net", true},
		{"team-d", map[string]string{"team": "y"}, "a.xy.example.net", true},
		{"team-d", map[string]string{"team": "z"}, "a.xy.example.net", false},
		{"", nil, "example.com", false},
	} {
		if got := gs.Covers(c.ns, c.labels, c.name); got != c.want {
			t.Errorf("Covers(%q, %v, %q) = %v, want %v", c.ns, c.labels, c.name, got, c.want)
		}
	}
	if Grants(nil).Covers("team-a", nil, "example.com") {
		t.Error("no grants cover a name")
	}
	everyone := Grants{{NamespaceSelector: &metav1.LabelSelector{}, Domains: []string{"shared.example"}}}
	if !everyone.Covers("anyone", nil, "x.shared.example") || everyone.Covers("anyone", nil, "other.example") {
		t.Error("an empty selector selects every namespace, for its domains only")
	}
}

func TestUncovered(t *testing.T) {
	gs := Grants{{Namespaces: []string{"team-a"}, Domains: []string{"a.example.com"}}}
	got := gs.Uncovered("team-a", nil, []string{"www.a.example.com", "b.example.com", "a.example.com", "b.example.com", "c.example.com"})
	if want := []string{"b.example.com", "c.example.com"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Uncovered = %v, want %v", got, want)
	}
	if got := gs.Uncovered("team-a", nil, []string{"a.example.com"}); got != nil {
		t.Errorf("Uncovered = %v, want none", got)
	}
	msg := Message("team-b", []string{"a", "b", "c", "d", "e"})
	if want := "namespace team-b has no grant for a, b, c and 2 more (grants are set by the administrator: --grant, --grants-file)"; msg != want {
		t.Errorf("Message = %q, want %q", msg, want)
	}
}

func TestParseFlag(t *testing.T) {
	g, err := ParseFlag(" team-a = example.com, b.example.org. ,")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Grant{Namespaces: []string{"team-a"}, Domains: []string{"example.com", "b.example.org."}}); !reflect.DeepEqual(g, want) {
		t.Errorf("ParseFlag = %+v, want %+v", g, want)
	}
	for _, c := range []struct{ in, err string }{
		{"example.com", "not of the form"},
		{"=example.com", "not of the form"},
		{"team-a=", "grants no domain"},
		{"team-a=,", "grants no domain"},
		{"team-a=*.example.com", "not allowed"},
		{"team-a=.", "root cannot be granted"},
		{"team-a=a..example.com", "empty label"},
		{"team-a=" + strings.Repeat("a", 64) + ".com", "longer than 63"},
		{"team-a=" + strings.Repeat("a.", 127) + "com", "longer than 253"},
		{"team-a=exa mple.com", "not allowed"},
	} {
		if _, err := ParseFlag(c.in); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("ParseFlag(%q) = %v, want an error containing %q", c.in, err, c.err)
		}
	}
	if _, err := ParseFlag("team-a=_acme-challenge.example.com"); err != nil {
		t.Errorf("an underscore label is a host name DNS holds: %v", err)
	}
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		p := filepath.Join(dir, "grants.yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gs, err := ParseFile(write(`
- namespaces: [team-a, team-b]
  domains: [example.com]
- namespaceSelector:
    matchLabels: {tier: gold}
  domains: [gold.example.net]
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || !gs.Covers("team-b", nil, "x.example.com") || !gs.Covers("z", map[string]string{"tier": "gold"}, "gold.example.net") || !gs.UsesSelector() {
		t.Errorf("ParseFile = %+v", gs)
	}
	if gs, err := ParseFile(write("  \n")); err != nil || gs != nil {
		t.Errorf("an empty file is no grant: %v %v", gs, err)
	}
	if gs, err := ParseFile(write("[]")); err != nil || len(gs) != 0 {
		t.Errorf("an empty list is no grant: %v %v", gs, err)
	}
	for _, c := range []struct{ text, err string }{
		{"- namespaces: [a]\n  domain: [example.com]", "unknown field"},
		{"- namespaces: [a]\n  namespaceSelector:\n    matchLabel: {a: b}\n  domains: [example.com]", "unknown field"},
		{"- domains: [example.com]", "grant 1: names no namespace"},
		{"- namespaces: [a]\n  domains: [example.com]\n- {}", "grant 2: names no namespace"},
		{"- namespaces: [a]", "grant 1: grants no domain"},
		{"- namespaces: ['']\n  domains: [example.com]", "empty namespace"},
		{"- namespaces: [a]\n  domains: ['*.example.com']", "not allowed"},
		{"- namespaceSelector:\n    matchExpressions: [{key: a, operator: Bogus}]\n  domains: [example.com]", "namespaceSelector"},
		{"namespaces: [a]", "cannot unmarshal"},
	} {
		if _, err := ParseFile(write(c.text)); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("ParseFile(%q) = %v, want an error containing %q", c.text, err, c.err)
		}
	}
	if _, err := ParseFile(filepath.Join(dir, "missing.yaml")); err == nil {
		t.Error("a missing file is an error")
	}
}

func TestUsesSelector(t *testing.T) {
	if (Grants{{Namespaces: []string{"a"}, Domains: []string{"x.y"}}}).UsesSelector() {
		t.Error("a grant by name uses no selector")
	}
}
