// Package grant holds the administrator's grants: which namespaces may publish which DNS names.
// A grant maps namespaces, by name or by label selector, to domains; a grant for a domain covers
// the domain and every name below it, zones nested below it included. Grants come from the
// controller's flags and a file the administrator mounts, never from an object a tenant can write:
// a tenant never widens its own reach (docs/embedded-dns.md, "Grants").
//
// The package is pure: the caller reads namespace labels and hands them in.
package grant

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// Grant lets the namespaces it names, or whose labels its selector matches, publish the names at
// and below each of its domains.
type Grant struct {
	// Namespaces are namespace names.
	Namespaces []string `json:"namespaces,omitempty"`
	// NamespaceSelector matches namespaces by their labels; an empty selector ({}) matches every
	// namespace.
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// Domains are DNS names; each covers itself and every name below it.
	Domains []string `json:"domains"`
}

// Grants are every grant the administrator configured. A namespace may publish a name when any
// grant for the namespace covers it.
type Grants []Grant

// ParseFlag reads one grant of the --grant flag: NAMESPACE=DOMAIN[,DOMAIN...].
func ParseFlag(s string) (Grant, error) {
	ns, domains, ok := strings.Cut(s, "=")
	ns = strings.TrimSpace(ns)
	if !ok || ns == "" {
		return Grant{}, fmt.Errorf("grant %q is not of the form namespace=domain[,domain]", s)
	}
	g := Grant{Namespaces: []string{ns}}
	for _, d := range strings.Split(domains, ",") {
		if d = strings.TrimSpace(d); d != "" {
			g.Domains = append(g.Domains, d)
		}
	}
	if err := g.validate(); err != nil {
		return Grant{}, fmt.Errorf("grant %q: %w", s, err)
	}
	return g, nil
}

// ParseFile reads a YAML (or JSON) list of grants, each {namespaces, namespaceSelector, domains}.
// A field it does not know is an error: a misspelt namespaceSelector must not silently grant
// nothing, or worse, a typo in a selector's key grant everything.
func ParseFile(path string) (Grants, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	gs, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return gs, nil
}

// Parse reads what ParseFile reads from its file.
func Parse(b []byte) (Grants, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var gs Grants
	if err := yaml.UnmarshalStrict(b, &gs); err != nil {
		return nil, err
	}
	if err := gs.Validate(); err != nil {
		return nil, err
	}
	return gs, nil
}

// Validate checks every grant: it names namespaces (or selects them) and valid domains.
func (gs Grants) Validate() error {
	var errs []error
	for i, g := range gs {
		if err := g.validate(); err != nil {
			errs = append(errs, fmt.Errorf("grant %d: %w", i+1, err))
		}
	}
	return errors.Join(errs...)
}

func (g Grant) validate() error {
	if len(g.Namespaces) == 0 && g.NamespaceSelector == nil {
		return errors.New("names no namespace: give namespaces or a namespaceSelector")
	}
	for _, ns := range g.Namespaces {
		if strings.TrimSpace(ns) == "" {
			return errors.New("has an empty namespace name")
		}
	}
	if g.NamespaceSelector != nil {
		if _, err := metav1.LabelSelectorAsSelector(g.NamespaceSelector); err != nil {
			return fmt.Errorf("namespaceSelector: %w", err)
		}
	}
	if len(g.Domains) == 0 {
		return errors.New("grants no domain")
	}
	for _, d := range g.Domains {
		if err := validDomain(d); err != nil {
			return fmt.Errorf("domain %q: %w", d, err)
		}
	}
	return nil
}

// validDomain accepts host names as DNS holds them (letters, digits, '-' and '_', as in
// _acme-challenge): a wildcard or the root would be a grant of more than the administrator wrote.
func validDomain(d string) error {
	n := normalize(d)
	if n == "" {
		return errors.New("is empty (the root cannot be granted)")
	}
	if len(n) > 253 {
		return errors.New("is longer than 253 characters")
	}
	for _, label := range strings.Split(n, ".") {
		if label == "" || len(label) > 63 {
			return errors.New("has an empty label or one longer than 63 characters")
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("has a character %q not allowed in a host name (a grant covers every name below its domain: no wildcard is needed)", c)
			}
		}
	}
	return nil
}

// normalize is how names are compared: lower case, without space or the trailing dot.
func normalize(name string) string {
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), "."))
}

// applies says whether the grant is for the namespace.
func (g Grant) applies(namespace string, nsLabels map[string]string) bool {
	if slices.Contains(g.Namespaces, namespace) {
		return true
	}
	if g.NamespaceSelector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(g.NamespaceSelector)
	// A selector that does not parse was refused by Validate; unvalidated, it selects nothing.
	return err == nil && sel.Matches(labels.Set(nsLabels))
}

// Covers says whether the namespace may publish name: some grant for it has a domain that is the
// name or one of its parents (on label boundaries, so example.com covers a.example.com and
// *.a.example.com, never badexample.com).
func (gs Grants) Covers(namespace string, nsLabels map[string]string, name string) bool {
	n := normalize(name)
	for _, g := range gs {
		if !g.applies(namespace, nsLabels) {
			continue
		}
		for _, d := range g.Domains {
			if d = normalize(d); n == d || strings.HasSuffix(n, "."+d) {
				return true
			}
		}
	}
	return false
}

// Uncovered returns the names the namespace may not publish, each once, in the order given.
func (gs Grants) Uncovered(namespace string, nsLabels map[string]string, names []string) []string {
	var out []string
	for _, name := range names {
		if !gs.Covers(namespace, nsLabels, name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// UsesSelector says whether any grant selects namespaces by label: only then do callers need
// the namespaces' labels.
func (gs Grants) UsesSelector() bool {
	return slices.ContainsFunc(gs, func(g Grant) bool { return g.NamespaceSelector != nil })
}

// Missing is the end of every message about a missing grant: it says who sets grants.
const Missing = "grants are set by the administrator: --grant, --grants-file"

// Message says that a namespace has no grant for the first of names (and how many more), for a
// status condition.
func Message(namespace string, names []string) string {
	const shown = 3
	list := strings.Join(names[:min(len(names), shown)], ", ")
	if len(names) > shown {
		list += fmt.Sprintf(" and %d more", len(names)-shown)
	}
	return fmt.Sprintf("namespace %s has no grant for %s (%s)", namespace, list, Missing)
}
