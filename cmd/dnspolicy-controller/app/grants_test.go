package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Grants come from --grant (repeatable; its variable holds ';'-separated grants, added to the
// command line's), --grants-file and the --dns-zone-namespaces shorthand; the scope defaults to
// embedded.
func TestParseGrants(t *testing.T) {
	o, err := Parse(nil, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Grants.Grants) != 0 || o.Grants.Scope != GrantsScopeEmbedded || o.Grants.AllBackends() {
		t.Errorf("defaults: %+v", o.Grants)
	}

	file := filepath.Join(t.TempDir(), "grants.yaml")
	if err := os.WriteFile(file, []byte("- namespaceSelector: {matchLabels: {tier: gold}}\n  domains: [gold.example.net]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err = Parse([]string{"--grant=team-a=a.example.com,shared.example.com", "--grant", "team-b=b.example.com",
		"--grants-file=" + file, "--grants-scope=all", "--dns-zone-namespaces=z.example.com=team-z,Z.example.com.=team-y"},
		env(map[string]string{"DNSPOLICY_GRANT": "team-e=e.example.com; team-f=f.example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	g := o.Grants.Grants
	for _, c := range []struct {
		ns     string
		labels map[string]string
		name   string
		want   bool
	}{
		{"team-a", nil, "www.a.example.com", true},
		{"team-a", nil, "shared.example.com", true},
		{"team-a", nil, "b.example.com", false},
		{"team-b", nil, "b.example.com", true},
		{"team-e", nil, "e.example.com", true},
		{"team-f", nil, "x.f.example.com", true},
		{"other", map[string]string{"tier": "gold"}, "gold.example.net", true},
		{"team-z", nil, "www.z.example.com", true},
		{"team-y", nil, "z.example.com", true},
		{"team-x", nil, "z.example.com", false},
	} {
		if got := g.Covers(c.ns, c.labels, c.name); got != c.want {
			t.Errorf("Covers(%s, %s) = %v, want %v (grants %+v)", c.ns, c.name, got, c.want, g)
		}
	}
	if len(g) != 6 || !o.Grants.AllBackends() {
		t.Errorf("grants %+v", o.Grants)
	}

	for name, bad := range map[string][]string{
		"no domain":          {"--grant=team-a="},
		"no namespace":       {"--grant=a.example.com"},
		"wildcard":           {"--grant=team-a=*.example.com"},
		"scope":              {"--grants-scope=cloud"},
		"missing file":       {"--grants-file=" + filepath.Join(t.TempDir(), "none.yaml")},
		"bad shorthand zone": {"--dns-zone-namespaces=bad_zone!=team-a"},
		"removed flag":       {"--dns-only-listed-zones"},
	} {
		if _, err := Parse(bad, env(nil)); err == nil {
			t.Errorf("%s: Parse(%v) accepted", name, bad)
		}
	}
	if _, err := Parse(nil, env(map[string]string{"DNSPOLICY_GRANT": "team-a=ok.example.com;broken"})); err == nil || !strings.Contains(err.Error(), "DNSPOLICY_GRANT") {
		t.Errorf("a bad grant in the environment: %v", err)
	}
}
