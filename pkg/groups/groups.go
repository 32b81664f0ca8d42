// Package groups reads and writes what Kuadrant's failover groups put in DNS, byte for byte as its
// dns-operator does (internal/controller/dnsrecord_groups.go, cmd/plugin/failover and types/group.go
// at 57b9db50).
//
// A controller started with --group puts every record it reconciles in that group. The groups whose
// records are published are listed in one TXT at the apex of each zone:
//
//	name   kuadrant-active-groups.<zone>
//	value  "version=1;groups=<group>&&<group>..."   (groups sorted, no duplicates; TTL 60)
//
// A record of a group not listed there is not published; an ungrouped record always is. The value is
// read tolerantly (Parse: any order of ";"-separated key=value pairs, unknown or malformed pairs
// skipped, as the controller reads it) and edited strictly (ParseTarget: a value of another version
// is left alone, as the CLI does).
package groups

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
)

const (
	// RecordLabel is the first label of the active-groups TXT (Kuadrant's ActiveGroupsTXTRecordName).
	RecordLabel = "kuadrant-active-groups"
	// Version is the only value format written and edited.
	Version = "1"
	// RecordTTL is the TTL the CLI writes the TXT with (Kuadrant's GroupRecordTTL).
	RecordTTL = 60
	// MaxNameLength bounds a group name (Kuadrant's MaxGroupNameLength).
	MaxNameLength = 16

	keySeparator   = ";"
	groupsKey      = "groups"
	versionKey     = "version"
	groupSeparator = "&&"
	// invalidChars cannot appear in a group name: they separate the TXT's pairs, groups and the
	// ownership TXT's labels (Kuadrant's Group.Validate).
	invalidChars = ";&, \"'"
)

// Ownership TXT keys (external-dns/<key>) Kuadrant writes for a grouped owner (types.GroupLabelKey,
// types.TargetsLabelKey): the owner's group, and its targets joined by ";".
const (
	OwnershipGroupKey   = "group"
	OwnershipTargetsKey = "targets"
)

// Validate reports whether name can be a group: empty (ungrouped) or at most MaxNameLength
// characters, none of invalidChars. The messages are Kuadrant's.
func Validate(name string) error {
	if len(name) > MaxNameLength {
		return fmt.Errorf("group name exceeds maximum length of %d characters", MaxNameLength)
	}
	if strings.ContainsAny(name, invalidChars) {
		return fmt.Errorf("group name cannot contain any of these characters: %s", invalidChars)
	}
	return nil
}

// RecordName is the name of the active-groups TXT of the zone zoneName.
func RecordName(zoneName string) string {
	return RecordLabel + "." + strings.TrimSuffix(zoneName, ".")
}

// Parse reads the active groups from the strings of the TXT answer as the record controller does:
// the strings joined, split into ";"-separated pairs, pairs that are not exactly key=value skipped,
// the "groups" pairs split on "&&", empty names dropped, first occurrence kept. The version is not
// checked. Surrounding quotes (a target as a provider backend returns it) are dropped first.
func Parse(values []string) []string {
	joined := ""
	for _, v := range values {
		joined += unquote(v)
	}
	var active []string
	for pair := range strings.SplitSeq(joined, keySeparator) {
		sections := strings.Split(pair, "=")
		if len(sections) != 2 || sections[0] != groupsKey {
			continue
		}
		for g := range strings.SplitSeq(sections[1], groupSeparator) {
			if g != "" && !slices.Contains(active, g) {
				active = append(active, g)
			}
		}
	}
	return active
}

// Active reports whether records of group are published: an ungrouped record always is.
func Active(group string, active []string) bool {
	return group == "" || slices.Contains(active, group)
}

// ErrOtherVersion is returned by ParseTarget for a value of another format version, which is left as
// it is.
var ErrOtherVersion = errors.New("active groups TXT is not of version " + Version)

// ParseTarget reads a TXT target as the CLI does before editing it: it must start with
// "version=1"; the groups follow as ";groups=a&&b" (none without it).
func ParseTarget(target string) ([]string, error) {
	rest, ok := strings.CutPrefix(unquote(target), versionKey+"="+Version)
	if !ok {
		return nil, ErrOtherVersion
	}
	list, ok := strings.CutPrefix(rest, keySeparator+groupsKey+"=")
	if !ok {
		return nil, nil
	}
	var out []string
	for g := range strings.SplitSeq(list, groupSeparator) {
		if g != "" {
			out = append(out, g)
		}
	}
	return out, nil
}

// Target is the TXT target listing groups, quotes included as the CLI writes it: sorted, without
// duplicates or empty names; "version=1" alone for none.
func Target(groups []string) string {
	gs := slices.DeleteFunc(slices.Clone(groups), func(g string) bool { return g == "" })
	slices.Sort(gs)
	gs = slices.Compact(gs)
	value := versionKey + "=" + Version
	if len(gs) > 0 {
		value += keySeparator + groupsKey + "=" + strings.Join(gs, groupSeparator)
	}
	return `"` + value + `"`
}

// With returns groups with group added, sorted and without duplicates.
func With(groups []string, group string) []string {
	out := append(slices.Clone(groups), group)
	slices.Sort(out)
	return slices.Compact(out)
}

// Without returns groups without group.
func Without(groups []string, group string) []string {
	return slices.DeleteFunc(slices.Clone(groups), func(g string) bool { return g == group })
}

func unquote(s string) string { return strings.Trim(s, `"`) }

// FindTXT is the active-groups TXT of zone among eps, nil when there is none.
func FindTXT(eps []*v1alpha1.Endpoint, zone string) *v1alpha1.Endpoint {
	name := RecordName(v1alpha1.NormalizeName(zone))
	for _, ep := range eps {
		if ep.RecordType == v1alpha1.RecordTypeTXT && v1alpha1.NormalizeName(ep.DNSName) == name && len(ep.Targets) > 0 {
			return ep
		}
	}
	return nil
}

// Changes is the batch that takes the active-groups TXT txt (nil: none) of zone to list next, as
// the CLI writes it: created when missing, deleted when next is empty, else its first string
// replaced. The TXT belongs to no owner: the batch goes straight to the provider, as Kuadrant's CLI
// sends it.
func Changes(zone string, txt *v1alpha1.Endpoint, next []string) *batch.Changes {
	switch {
	case len(next) == 0:
		return &batch.Changes{Delete: []*v1alpha1.Endpoint{txt}}
	case txt == nil:
		return &batch.Changes{Create: []*v1alpha1.Endpoint{
			v1alpha1.NewEndpoint(RecordName(zone), v1alpha1.RecordTypeTXT, RecordTTL, Target(next)),
		}}
	}
	updated := txt.DeepCopy()
	updated.Targets[0] = Target(next)
	return &batch.Changes{UpdateOld: []*v1alpha1.Endpoint{txt}, UpdateNew: []*v1alpha1.Endpoint{updated}}
}
