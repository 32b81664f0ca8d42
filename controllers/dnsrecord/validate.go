package dnsrecord

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// Bounds a DNSRecord's endpoints are held to before anything is planned (docs/troubleshooting.md,
// ValidationError).
const (
	// MinTargets and MaxTargets bound the targets of one endpoint. 1,000 is Route 53's limit of
	// values per record set (and more than any gateway has addresses); a record set with no value
	// cannot be published.
	MinTargets, MaxTargets = 1, v1alpha1.MaxTargets
	// maxNameLength and maxLabelLength are DNS's limits on a name in text form without the final
	// dot (RFC 1035 section 2.3.4: 255 octets on the wire).
	maxNameLength  = 253
	maxLabelLength = 63
	// maxErrors bounds how many problems one message lists.
	maxErrors = 10
)

// validateSpec re-checks what the CRD validates (a CRD installed from an older version may not) and
// what it cannot: target syntax by record type, name lengths including the ownership TXT the registry
// writes beside each record, TTL (at most maxTTL, Options.MaxTTL), weight (v1alpha1.MaxWeight) and
// target count bounds, and duplicate record sets. Each problem names its field
// (spec.endpoints[2].targets[0]).
func validateSpec(rec *v1alpha1.DNSRecord, maxTTL int64) error {
	root := strings.ToLower(rec.RootHost())
	owner := ownerID(rec)
	seen := map[v1alpha1.EndpointKey]int{}
	var problems []string
	add := func(field, format string, args ...any) {
		problems = append(problems, field+": "+fmt.Sprintf(format, args...))
	}
	for i, ep := range rec.Spec.Endpoints {
		field := fmt.Sprintf("spec.endpoints[%d]", i)
		if ep == nil {
			add(field, "an endpoint must not be null")
			continue
		}
		name := v1alpha1.NormalizeName(ep.DNSName)
		ownTXT := ownershipTXTOf(ep, rec.Spec.RootHost)
		if name != strings.ToLower(rec.Spec.RootHost) && !strings.HasSuffix(name, "."+root) && !ownTXT {
			add(field+".dnsName", "invalid endpoint discovered %s all endpoints should be equal to or end with the rootHost %s", ep.DNSName, root)
		}
		if why := nameProblem(name); why != "" {
			add(field+".dnsName", "%s", why)
		} else if !ownTXT {
			// The registry writes an ownership TXT beside every record; its name is longer.
			if txt := registry.TXTName(owner, ep.RecordType, ep.DNSName); nameProblem(txt) != "" {
				add(field+".dnsName", "the ownership TXT record %s written beside it %s", txt, nameProblem(txt))
			}
		}
		if ep.RecordTTL < 0 || int64(ep.RecordTTL) > maxTTL {
			add(field+".recordTTL", "%d is outside 0..%d (the operator may raise the cap with --max-ttl)", ep.RecordTTL, maxTTL)
		}
		for j, ps := range ep.ProviderSpecific {
			if ps.Name != v1alpha1.ProviderSpecificWeight {
				continue
			}
			// A weight that is no number, or negative, is the backend's to refuse in Kuadrant's words
			// (with a coredns Secret, on the authoritative record, as Kuadrant's suite checks).
			if w, err := strconv.ParseUint(strings.TrimSpace(ps.Value), 10, 64); errors.Is(err, strconv.ErrRange) || err == nil && w > v1alpha1.MaxWeight {
				add(fmt.Sprintf("%s.providerSpecific[%d]", field, j), "weight %.40s is more than %d, the largest weight every provider accepts", ps.Value, v1alpha1.MaxWeight)
			}
		}
		if n := len(ep.Targets); n < MinTargets || n > MaxTargets {
			add(field+".targets", "%d targets, want %d to %d", n, MinTargets, MaxTargets)
		}
		for j, t := range ep.Targets {
			if why := targetProblem(ep.RecordType, t); why != "" {
				add(fmt.Sprintf("%s.targets[%d]", field, j), "%s", why)
			}
		}
		if k, dup := seen[normalKey(ep)]; dup {
			add(field, "duplicate endpoint %s %s set %q: the same record set as spec.endpoints[%d]", ep.DNSName, ep.RecordType, ep.SetIdentifier, k)
		} else {
			seen[normalKey(ep)] = i
		}
	}
	if len(problems) == 0 {
		return nil
	}
	if len(problems) > maxErrors {
		problems = append(problems[:maxErrors], fmt.Sprintf("and %d more", len(problems)-maxErrors))
	}
	return fmt.Errorf("%s", strings.Join(problems, "; "))
}

// nameProblem says what makes a DNS name unpublishable: its length, or a label's.
func nameProblem(name string) string {
	if name == "" {
		return "is empty"
	}
	if len(name) > maxNameLength {
		return fmt.Sprintf("is %d characters long, more than the %d a DNS name may have", len(name), maxNameLength)
	}
	for _, label := range strings.Split(name, ".") {
		switch {
		case label == "":
			return "has an empty label"
		case len(label) > maxLabelLength:
			return fmt.Sprintf("has the label %q of %d characters, more than the %d a DNS label may have", label, len(label), maxLabelLength)
		}
	}
	return ""
}

// targetProblem says what makes a target unpublishable for its record type.
func targetProblem(recordType, target string) string {
	switch recordType {
	case v1alpha1.RecordTypeA:
		if a, err := netip.ParseAddr(target); err != nil || !a.Is4() {
			return fmt.Sprintf("%q is not an IPv4 address, which an A record needs", target)
		}
	case v1alpha1.RecordTypeAAAA:
		if a, err := netip.ParseAddr(target); err != nil || !a.Is6() || a.Zone() != "" {
			return fmt.Sprintf("%q is not an IPv6 address, which an AAAA record needs", target)
		}
	case v1alpha1.RecordTypeCNAME, v1alpha1.RecordTypeNS:
		if why := nameProblem(v1alpha1.NormalizeName(target)); why != "" {
			return fmt.Sprintf("%q %s", target, why)
		}
	}
	return ""
}

// ownershipTXTOf reports whether ep is an ownership TXT of the root host itself, which is not under
// the root host on a label boundary (kuadrant-<hash>-a-app.example.com for app.example.com).
func ownershipTXTOf(ep *v1alpha1.Endpoint, rootHost string) bool {
	name := strings.ToLower(ep.DNSName)
	root := strings.ToLower(rootHost)
	if r, ok := strings.CutPrefix(root, v1alpha1.WildcardPrefix); ok {
		root = "wildcard." + r
	}
	return ep.RecordType == v1alpha1.RecordTypeTXT && strings.HasPrefix(name, "kuadrant-") && strings.HasSuffix(name, "-"+root)
}
