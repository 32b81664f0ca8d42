package app

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/pkg/grant"
)

// The values of --grants-scope.
const (
	// GrantsScopeEmbedded: grants gate what the embedded DNS server serves, and the records that
	// publish through it; cloud backends, whose credential already is the entitlement, publish
	// as before.
	GrantsScopeEmbedded = "embedded"
	// GrantsScopeAll: grants gate every backend too, for clusters where tenants share cloud
	// credentials.
	GrantsScopeAll = "all"
)

// GrantOptions are the administrator's grants of domains to namespaces (package grant).
type GrantOptions struct {
	// Grants are those of --grant, --grants-file and --dns-zone-namespaces together.
	Grants grant.Grants
	// File is the YAML file of grants (--grants-file), e.g. the chart's ConfigMap.
	File string
	// Scope is GrantsScopeEmbedded or GrantsScopeAll.
	Scope string
}

// grantFlag is the repeatable --grant. Its environment variable holds a ';'-separated list of
// grants; they are added to the command line's.
type grantFlag struct{ list *grant.Grants }

func (f grantFlag) String() string {
	if f.list == nil {
		return ""
	}
	var out []string
	for _, g := range *f.list {
		out = append(out, strings.Join(g.Namespaces, ",")+"="+strings.Join(g.Domains, ","))
	}
	return strings.Join(out, ";")
}

func (f grantFlag) Set(s string) error {
	for _, item := range strings.Split(s, ";") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		g, err := grant.ParseFlag(item)
		if err != nil {
			return err
		}
		*f.list = append(*f.list, g)
	}
	return nil
}

// flags registers the grant flags and returns a function that reads the file and adds the
// --dns-zone-namespaces shorthand once the flag set has been parsed.
func (g *GrantOptions) flags(fs *flag.FlagSet) func(zoneNamespaces map[string][]string) error {
	fs.Var(grantFlag{&g.Grants}, "grant", "NAMESPACE=DOMAIN[,DOMAIN...], repeatable: the namespace may publish the domains and every name below them (docs/embedded-dns.md#grants). Its environment variable holds ';'-separated grants, added to the command line's.")
	fs.StringVar(&g.File, "grants-file", g.File, "YAML list of grants, each {namespaces, namespaceSelector, domains} (the chart's grants value).")
	fs.StringVar(&g.Scope, "grants-scope", g.Scope, "What grants gate: embedded (the embedded DNS server and the records it serves) or all (every backend too, for tenants sharing cloud credentials).")
	return func(zoneNamespaces map[string][]string) error {
		if g.Scope != GrantsScopeEmbedded && g.Scope != GrantsScopeAll {
			return fmt.Errorf("--grants-scope must be %s or %s, not %q", GrantsScopeEmbedded, GrantsScopeAll, g.Scope)
		}
		if g.File != "" {
			fromFile, err := grant.ParseFile(g.File)
			if err != nil {
				return fmt.Errorf("--grants-file: %w", err)
			}
			g.Grants = append(g.Grants, fromFile...)
		}
		// --dns-zone-namespaces zone=ns is a grant of the zone to ns.
		for _, zone := range slices.Sorted(maps.Keys(zoneNamespaces)) {
			shorthand := grant.Grant{Namespaces: zoneNamespaces[zone], Domains: []string{zone}}
			if err := (grant.Grants{shorthand}).Validate(); err != nil {
				return fmt.Errorf("--dns-zone-namespaces: zone %s: %w", zone, err)
			}
			g.Grants = append(g.Grants, shorthand)
		}
		return nil
	}
}

// AllBackends says whether grants gate every backend, not only the embedded server's.
func (g GrantOptions) AllBackends() bool { return g.Scope == GrantsScopeAll }
