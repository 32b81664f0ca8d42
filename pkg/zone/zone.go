// Package zone decides which hosted zone a record's root host is published in.
//
// The rule is DNS delegation's: a name belongs to the most specific zone above it, because records
// put in a parent zone for a delegated child are never served. Beyond that the choice refuses rather
// than guesses: a public suffix is nobody's to publish in, two zones of the same name (a public and a
// private hosted zone of one domain) leave no safe pick, and once a record has a zone it keeps it
// (see Choose).
package zone

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/net/publicsuffix"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Errors of Choose, told apart with errors.Is so the controller can set a precise condition. The
// texts of ErrNoZone, ErrApexNotAllowed and ErrAmbiguousZone are Kuadrant's, which ends up in the
// same "Unable to find suitable zone in provider: <err>" condition message.
var (
	// ErrInvalidHost: the root host is empty, has an empty label, a "*" other than a leading "*."
	// label, or is longer than a DNS name can be.
	ErrInvalidHost = errors.New("invalid host")
	// ErrNoZone: no zone listed by the provider is the root host or above it.
	ErrNoZone = errors.New("no zone for host")
	// ErrPublicSuffix: the root host, or the only zone above it, is an ICANN public suffix.
	ErrPublicSuffix = errors.New("public suffix")
	// ErrApexNotAllowed: the root host is the apex of its zone and the provider cannot hold records
	// there.
	ErrApexNotAllowed = errors.New("apex domain not allowed")
	// ErrAmbiguousZone: several zones share the most specific matching name.
	ErrAmbiguousZone = errors.New("multiple zones found for host")
)

// Zone is a hosted zone of a backend.
type Zone struct {
	// ID is the backend's identifier of the zone.
	ID string
	// DNSName is the zone's domain name, lower case, without a trailing dot.
	DNSName string
}

// maxListed bounds how many zones an error message names: it lands in a status condition.
const maxListed = 10

// maxNameLength is the longest presentation form of a DNS name without its trailing dot.
const maxNameLength = 253

// Choose returns the zone that rootHost's records are published in: the most specific zone whose
// name is rootHost or a parent of it on a label boundary. Names compare case-insensitively and
// without a trailing dot; a leading "*." of rootHost is ignored for matching, so "*.example.com" goes
// into zone example.com, and is not its apex.
//
// assignedID is the ID of the zone chosen on an earlier pass (the record's status.zoneID; empty if
// none). While that zone is still listed and can still hold rootHost, it is returned even if a more
// specific zone has appeared since: silently moving live records to another zone would leave the old
// ones orphaned in the first zone (served as long as it stays delegated) and drop the ownership
// records that let other clusters share the name. Moving is a deliberate act: recreate the record.
// A stable ID also settles the choice between two zones of the same name. When the assigned zone is
// gone, the choice is made afresh.
//
// Choose refuses:
//   - a rootHost that is itself an ICANN public suffix ("com", "co.uk"), and any zone that is such a
//     suffix or above it (ErrPublicSuffix). Only ICANN's section of the list counts: the private
//     section names real domains whose owners do run zones for them, and names under unmanaged
//     top-level labels ("internal", "test") are what private zones are for;
//   - the zone apex, when apexRecords is false (ErrApexNotAllowed). The parent zone is not
//     tried instead: records there would be shadowed by the delegation;
//   - two zones of the same most specific name (ErrAmbiguousZone, naming their IDs);
//   - no match at all (ErrNoZone, naming rootHost and the zones seen).
//
// The zone is returned as listed, so its ID and name can be handed back to the provider unchanged.
func Choose(rootHost string, zones []Zone, apexRecords bool, assignedID string) (Zone, error) {
	host, wildcard, err := parseHost(rootHost)
	if err != nil {
		return Zone{}, err
	}
	suffix := icannSuffix(host)
	if host == suffix {
		return Zone{}, fmt.Errorf("%w: host %s is a public suffix", ErrPublicSuffix, rootHost)
	}

	// A zone can hold host when it is host or a parent of it, and strictly below the ICANN suffix.
	holds := func(zoneName string) bool {
		return len(zoneName) > len(suffix) && isAtOrUnder(host, zoneName)
	}
	checkApex := func(z Zone) (Zone, error) {
		if !wildcard && !apexRecords && v1alpha1.NormalizeName(z.DNSName) == host {
			return Zone{}, fmt.Errorf("%w: %s is the apex of zone %s (%s), and this provider cannot hold records at a zone apex",
				ErrApexNotAllowed, rootHost, z.DNSName, z.ID)
		}
		return z, nil
	}

	if assignedID != "" {
		for _, z := range zones {
			if z.ID == assignedID && holds(v1alpha1.NormalizeName(z.DNSName)) {
				return checkApex(z)
			}
		}
	}

	var best, refused []Zone
	bestName := ""
	for _, z := range zones {
		name := v1alpha1.NormalizeName(z.DNSName)
		switch {
		case !isAtOrUnder(host, name):
			// Not a parent of host: irrelevant.
		case !holds(name):
			refused = append(refused, z)
		case len(name) > len(bestName):
			best, bestName = []Zone{z}, name
		case name == bestName && !slices.ContainsFunc(best, func(b Zone) bool { return b.ID == z.ID }):
			// The same zone listed twice is not a second zone.
			best = append(best, z)
		}
	}

	switch {
	case len(best) == 1:
		return checkApex(best[0])
	case len(best) > 1:
		ids := make([]string, len(best))
		for i, z := range best {
			ids[i] = z.ID
		}
		return Zone{}, fmt.Errorf("%w: %s: zones %s are all named %s; remove or filter out all but one",
			ErrAmbiguousZone, rootHost, bounded(ids), bestName)
	case len(refused) > 0:
		// Name the most specific, whatever order the provider listed them in.
		z := slices.MinFunc(refused, func(a, b Zone) int {
			return cmp.Or(cmp.Compare(len(b.DNSName), len(a.DNSName)), strings.Compare(a.ID, b.ID))
		})
		return Zone{}, fmt.Errorf("%w: zone %s (%s) is a public suffix and may not hold %s",
			ErrPublicSuffix, z.DNSName, z.ID, rootHost)
	default:
		names := make([]string, len(zones))
		for i, z := range zones {
			names[i] = v1alpha1.NormalizeName(z.DNSName)
		}
		return Zone{}, fmt.Errorf("%w: %s is in none of the zones %s", ErrNoZone, rootHost, bounded(names))
	}
}

// parseHost normalizes rootHost and reports whether it was a wildcard. A "*" is only meaningful as
// the whole first label.
func parseHost(rootHost string) (host string, wildcard bool, err error) {
	host = v1alpha1.NormalizeName(rootHost)
	host, wildcard = strings.CutPrefix(host, "*.")
	badLabel := func(l string) bool { return l == "" || strings.Contains(l, "*") }
	if len(host) > maxNameLength || slices.ContainsFunc(strings.Split(host, "."), badLabel) {
		return "", false, fmt.Errorf("%w: %q", ErrInvalidHost, rootHost)
	}
	return host, wildcard, nil
}

// isAtOrUnder reports whether host is zoneName or a name below it. The empty name is the root, above
// everything.
func isAtOrUnder(host, zoneName string) bool {
	return zoneName == "" || host == zoneName || strings.HasSuffix(host, "."+zoneName)
}

// icannSuffix returns the longest suffix of host that is an ICANN public suffix, or "" when host is
// under a top-level label ICANN does not manage.
func icannSuffix(host string) string {
	for name := host; ; {
		suffix, icann := publicsuffix.PublicSuffix(name)
		if icann {
			return suffix
		}
		// A private-section entry or the default rule: any ICANN suffix lies above it.
		_, parent, found := strings.Cut(suffix, ".")
		if !found {
			return ""
		}
		name = parent
	}
}

// bounded renders names sorted and deduplicated, naming at most maxListed of them.
func bounded(names []string) string {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	if len(names) > maxListed {
		return fmt.Sprintf("[%s and %d more]", strings.Join(names[:maxListed], ", "), len(names)-maxListed)
	}
	return "[" + strings.Join(names, ", ") + "]"
}
