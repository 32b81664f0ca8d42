package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/net/idna"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// DomainFilter is the domain filter a webhook provider answers `GET /` with: the domains it serves
// (include), the subtrees it leaves alone (exclude), or a pair of regular expressions instead. It
// decodes external-dns's JSON shape (endpoint.DomainFilter) and matches names as external-dns's
// DomainFilter.Match does, so we stay out of exactly what external-dns would stay out of.
type DomainFilter struct {
	Include      []string
	Exclude      []string
	RegexInclude *regexp.Regexp
	RegexExclude *regexp.Regexp
}

// UnmarshalJSON decodes {"include":[...],"exclude":[...]} or {"regexInclude":"...","regexExclude":"..."}.
func (f *DomainFilter) UnmarshalJSON(b []byte) error {
	var wire struct {
		Include      []string `json:"include"`
		Exclude      []string `json:"exclude"`
		RegexInclude string   `json:"regexInclude"`
		RegexExclude string   `json:"regexExclude"`
	}
	if err := json.Unmarshal(b, &wire); err != nil {
		return err
	}
	*f = DomainFilter{Include: normalizeFilters(wire.Include), Exclude: normalizeFilters(wire.Exclude)}
	if wire.RegexInclude == "" && wire.RegexExclude == "" {
		return nil
	}
	if len(f.Include) > 0 || len(f.Exclude) > 0 {
		return errors.New("the domain filter has both domains and regular expressions")
	}
	var err error
	if wire.RegexInclude != "" {
		if f.RegexInclude, err = regexp.Compile(wire.RegexInclude); err != nil {
			return errors.New("the domain filter's regexInclude is not a regular expression")
		}
	}
	if wire.RegexExclude != "" {
		if f.RegexExclude, err = regexp.Compile(wire.RegexExclude); err != nil {
			return errors.New("the domain filter's regexExclude is not a regular expression")
		}
	}
	return nil
}

// normalizeFilters lower-cases the entries, drops the trailing dot and writes internationalised
// names as the ASCII (punycode) names records carry; a leading dot ("only names under") is kept.
func normalizeFilters(entries []string) []string {
	var out []string
	for _, e := range entries {
		e = strings.TrimSpace(e)
		dot := strings.HasPrefix(e, ".")
		name := v1alpha1.NormalizeName(strings.TrimPrefix(e, "."))
		if ascii, err := idna.Lookup.ToASCII(name); err == nil {
			name = ascii
		}
		if name == "" {
			continue
		}
		if dot {
			name = "." + name
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// Match reports whether the provider serves name: external-dns's rules. With expressions, the
// exclusion wins, then the inclusion decides (none: every name). With domains, name must be an
// included domain or under one (a ".d" entry: strictly under d), and not an excluded domain or under
// one; no included domains means every name.
func (f DomainFilter) Match(name string) bool {
	name = v1alpha1.NormalizeName(name)
	if f.RegexInclude != nil || f.RegexExclude != nil {
		if f.RegexExclude != nil && f.RegexExclude.MatchString(name) {
			return false
		}
		return f.RegexInclude == nil || f.RegexInclude.MatchString(name)
	}
	return (len(f.Include) == 0 || matchAny(f.Include, name)) && !matchAny(f.Exclude, name)
}

func matchAny(filters []string, name string) bool {
	for _, filter := range filters {
		if strings.HasPrefix(filter, ".") {
			if strings.HasSuffix(name, filter) {
				return true
			}
		} else if name == filter || strings.HasSuffix(name, "."+filter) {
			return true
		}
	}
	return false
}

// Domains are the zones the filter names: its included domains, a ".d" entry counting as d (its
// apex stays outside the filter, and Match keeps it out). None for a filter of expressions or of
// no domains, which match names but name no zone.
func (f DomainFilter) Domains() []string {
	var zones []string
	for _, d := range f.Include {
		d = strings.TrimPrefix(d, ".")
		if !slices.Contains(zones, d) {
			zones = append(zones, d)
		}
	}
	return zones
}

// zones are the zones of a webhook provider: configured (ZONES) or else the filter's domains, never
// one the filter excludes whole. A configured zone outside the filter is an error, not a zone
// dropped in silence: the Secret says to write where the provider says it does not serve.
func zones(filter DomainFilter, configured []string, secret string) ([]string, error) {
	if len(configured) > 0 {
		for _, z := range configured {
			if !filter.Match(z) && !filter.holdsUnder(z) {
				return nil, fmt.Errorf("provider secret %s: zone %s of key %s is outside the webhook provider's domain filter",
					secret, z, v1alpha1.WebhookZonesKey)
			}
		}
		return configured, nil
	}
	domains := filter.Domains()
	if len(domains) == 0 {
		return nil, fmt.Errorf("provider secret %s: the webhook provider's domain filter names no domains "+
			"(it matches every name, or is a regular expression): list the zones in key %s", secret, v1alpha1.WebhookZonesKey)
	}
	var out []string
	for _, d := range domains {
		if !matchAny(filter.Exclude, d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out, nil
}

// holdsUnder reports whether the filter includes names under zone although not zone itself (a
// ".zone" entry), so that zone may be configured.
func (f DomainFilter) holdsUnder(zone string) bool {
	return f.RegexInclude == nil && f.RegexExclude == nil && slices.Contains(f.Include, "."+zone) && !matchAny(f.Exclude, zone)
}
