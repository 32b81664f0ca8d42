// Package registry reads and writes the ownership TXT records that let several owners (clusters)
// share one DNS zone, in Kuadrant's "version 1" format, so that zones are shared with clusters that
// run Kuadrant's dns-operator.
//
// One TXT per (record name, record type, set identifier, owner):
//
//	name   kuadrant-<hash8(ownerID)>-<lowercase type>-<record name>   (a leading "*" becomes "wildcard")
//	value  "heritage=external-dns,external-dns/owner=<ownerID>,external-dns/version=1"
//
// The value is one TXT string whose double quotes are part of the target, as external-dns writes it;
// after heritage come external-dns/<key>=<value> pairs in sorted key order. The TXT carries the
// record's set identifier and routing properties (weight, geo-code), so it sits in the same weighted
// or geo set as the record it describes.
//
// Where it matters, our TXTs also say what their owner wants for the record (NewWishTXT):
// external-dns/claim-targets (the owner's targets, sorted, separated by ";") and
// external-dns/claim-ttl. Kuadrant ignores keys it does not know. With them another owner can
// publish this owner's wish, or withdraw its targets alone, from the zone alone. Everywhere else
// (NewTXT) the TXT is byte for byte the one Kuadrant writes; its owner's wish is unknown (Claim.Wish
// is nil) and presumed to be the record as published (see package plan for when which is written).
//
// An owner in a failover group (package groups) adds Kuadrant's external-dns/group and
// external-dns/targets (NewTXTInGroup), as Kuadrant's grouped controllers do.
//
// A record with no ownership TXT belongs to a human or another tool: Zone reports it unowned, the
// plan never changes it, and Zone.Check refuses a batch that would.
//
// Kuadrant's releases before "version 1" wrote one TXT per record, not per owner, that we read but
// never write (legacy claims, see ParseLegacyTXT):
//
//	name   kuadrant-<lowercase type>-<record name>   (a leading "*" becomes "wildcard")
//	value  "heritage=external-dns,external-dns/owner=<ownerID>[&&<ownerID>...]"   (no version key)
//
// Each owner it names holds a claim whose wish is unknown, unless that owner has written its own
// version-1 TXT for the record: then the legacy TXT is redundant (Kuadrant's migration writes the
// version-1 TXT and gives it precedence), and only Zone.Check's rule for deleting it applies.
package registry

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
)

const (
	// Prefix starts the name of every ownership TXT (Kuadrant's txtRegistryPrefix).
	Prefix = "kuadrant-"
	// WildcardLabel stands for a leading "*" in TXT names: "*" is only valid as a whole first label,
	// and "kuadrant-...-*.example.com" would not be.
	WildcardLabel = "wildcard"
	// FormatVersion is the only TXT format read and written: the owner's hash and the record type
	// are in the TXT name.
	FormatVersion = "1"

	heritage       = "external-dns"
	labelPrefix    = heritage + "/"
	ownedRecordKey = "ownedRecord"
	// A TXT character-string holds at most 255 octets; a longer value is split into several strings
	// (several targets of the TXT), each a complete value that Kuadrant reads on its own.
	maxValueLength = 255
	// targetSeparator joins targets inside one value, as external-dns's Targets.String does. It
	// cannot appear in a target, unlike "," and "=" which the value format splits on.
	targetSeparator = ";"
)

// Keys of the external-dns/<key>=<value> pairs of a TXT value.
const (
	// OwnerKey names the owner ID.
	OwnerKey = "owner"
	// VersionKey names the format version; only FormatVersion is read.
	VersionKey = "version"
	// TargetsKey (ours) lists the owner's targets for the record.
	TargetsKey = "claim-targets"
	// TTLKey (ours) is the TTL the owner wants for the record.
	TTLKey = "claim-ttl"
	// LeaseKey (ours) names the lease (package lease) that vouches for the owner: the hash
	// (hash.Hash8) of the lease holder's cluster ID. The owner counts as gone once that lease
	// expires; an owner whose claims do not name a lease never does.
	LeaseKey = "claim-lease"
)

// ErrNoHeritage is returned by ParseValue for a value that external-dns did not write.
var ErrNoHeritage = errors.New("heritage is unknown or not found")

// OwnedTypes are the record types an ownership TXT can describe; Kuadrant reads no other type from a
// TXT name.
var OwnedTypes = []string{v1alpha1.RecordTypeA, v1alpha1.RecordTypeAAAA, v1alpha1.RecordTypeCNAME, v1alpha1.RecordTypeNS}

// TXTName is the name of the ownership TXT of ownerID for the record (dnsName, recordType).
func TXTName(ownerID, recordType, dnsName string) string {
	return txtName(cachedOwnerHash(ownerID), recordType, dnsName)
}

func ownerHash(ownerID string) string { return hash.Base36(ownerID, 8) }

// ownerHashes remembers ownerHash's answers across reads: a zone holds many TXTs of few owners per
// name, every read of it parses them all, and the hash (SHA-224 through big-integer base 36) was most
// of the cost of a read. It is bounded: when full it starts over, so a controller that sees owners
// come and go for months does not grow without end.
var ownerHashes = struct {
	sync.Mutex
	m map[string]string
}{m: map[string]string{}}

const maxOwnerHashes = 1 << 16

func cachedOwnerHash(ownerID string) string {
	ownerHashes.Lock()
	h, ok := ownerHashes.m[ownerID]
	ownerHashes.Unlock()
	if ok {
		return h
	}
	h = ownerHash(ownerID)
	ownerHashes.Lock()
	if len(ownerHashes.m) >= maxOwnerHashes {
		ownerHashes.m = map[string]string{}
	}
	ownerHashes.m[ownerID] = h
	ownerHashes.Unlock()
	return h
}

func txtName(ownerHash, recordType, dnsName string) string {
	name := v1alpha1.NormalizeName(dnsName)
	if strings.HasPrefix(name, "*") {
		name = WildcardLabel + name[1:]
	}
	return Prefix + ownerHash + "-" + strings.ToLower(recordType) + "-" + name
}

// ParseTXTName splits an ownership TXT name into the owner hash, the record type and the record
// name. The record name comes back lower-cased, with a leading "wildcard" label read as "*": the
// format cannot tell "*.example.com" from a host named "wildcard.example.com", and wildcards are the
// ones that exist.
func ParseTXTName(txtName string) (ownerHash, recordType, dnsName string, ok bool) {
	rest, found := strings.CutPrefix(v1alpha1.NormalizeName(txtName), Prefix)
	if !found {
		return "", "", "", false
	}
	parts := strings.SplitN(rest, "-", 3)
	if len(parts) != 3 || parts[0] == "" || parts[2] == "" {
		return "", "", "", false
	}
	for _, t := range OwnedTypes {
		if parts[1] == strings.ToLower(t) {
			recordType = t
		}
	}
	if recordType == "" {
		return "", "", "", false
	}
	dnsName = parts[2]
	if dnsName == WildcardLabel || strings.HasPrefix(dnsName, WildcardLabel+".") {
		dnsName = "*" + strings.TrimPrefix(dnsName, WildcardLabel)
	}
	return parts[0], recordType, dnsName, true
}

// FormatValue writes labels as one quoted external-dns TXT value: heritage first, then the pairs in
// sorted key order.
func FormatValue(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(`"heritage=` + heritage)
	for _, k := range keys {
		b.WriteString("," + labelPrefix + k + "=" + labels[k])
	}
	b.WriteString(`"`)
	return b.String()
}

// ParseValue reads one TXT value the way external-dns does: surrounding quotes dropped, pairs split
// on "," and "=", tokens that are not exactly key=value skipped, keys outside external-dns/ ignored.
// A value without heritage=external-dns, or with another heritage, is ErrNoHeritage.
func ParseValue(value string) (map[string]string, error) {
	labels := map[string]string{}
	found := false
	for token := range strings.SplitSeq(strings.Trim(value, `"`), ",") {
		k, v, ok := strings.Cut(token, "=")
		if !ok || strings.Contains(v, "=") {
			continue
		}
		switch {
		case k == "heritage" && v != heritage:
			return nil, ErrNoHeritage
		case k == "heritage":
			found = true
		case strings.HasPrefix(k, labelPrefix):
			labels[strings.TrimPrefix(k, labelPrefix)] = v
		}
	}
	if !found {
		return nil, ErrNoHeritage
	}
	return labels, nil
}

// ValidOwnerID reports whether id can be written into a TXT value and read back unchanged.
func ValidOwnerID(id string) error {
	if id == "" {
		return errors.New("owner ID is empty")
	}
	// "&&" joined several owners in Kuadrant's pre-version-1 format (ParseLegacyTXT).
	if strings.ContainsAny(id, `,=";`) || strings.Contains(id, "&&") || strings.IndexFunc(id, isSpace) >= 0 {
		return fmt.Errorf("owner ID %q has a character the TXT format cannot carry", id)
	}
	return nil
}

// ValidTarget reports whether a record target can be written into a claim.
func ValidTarget(target string) error {
	if target == "" {
		return errors.New("empty target")
	}
	if strings.ContainsAny(target, `,=";`) || strings.IndexFunc(target, isSpace) >= 0 {
		return fmt.Errorf("target %q has a character the TXT format cannot carry", target)
	}
	return nil
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// NewTXT returns the ownership TXT of ownerID for record exactly as Kuadrant's dns-operator writes
// it: the value names the owner and the format version only, so the owner's wish is presumed to be
// the record as published. It has the record's set identifier, routing properties and TTL.
func NewTXT(ownerID string, record *v1alpha1.Endpoint) (*v1alpha1.Endpoint, error) {
	return NewTXTInGroup(ownerID, "", record)
}

// NewTXTInGroup is NewTXT for an owner in a failover group ("" none: NewTXT), as Kuadrant's
// grouped controllers write it (their GroupRegistry): the value also says external-dns/group and,
// where the value still fits one TXT string, external-dns/targets, the record's targets joined by
// ";".
func NewTXTInGroup(ownerID, group string, record *v1alpha1.Endpoint) (*v1alpha1.Endpoint, error) {
	return inGroup(group, record, func(extra map[string]string) (*v1alpha1.Endpoint, error) {
		labels := map[string]string{OwnerKey: ownerID, VersionKey: FormatVersion}
		maps.Copy(labels, extra)
		return newTXT(ownerID, record, labels, nil)
	})
}

// NewWishTXT is NewTXT stating the owner's wish (the record's targets and TTL: claim-targets,
// claim-ttl) and, unless lease is "", the lease that vouches for the owner (claim-lease). The plan
// writes it where the wish is not what the zone publishes, or where another cluster's owner must be
// able to withdraw this owner's targets alone.
func NewWishTXT(ownerID, lease string, record *v1alpha1.Endpoint) (*v1alpha1.Endpoint, error) {
	return NewWishTXTInGroup(ownerID, "", lease, record)
}

// NewWishTXTInGroup is NewWishTXT for an owner in a failover group, with the group keys of
// NewTXTInGroup (external-dns/targets only where the value is one TXT string).
func NewWishTXTInGroup(ownerID, group, lease string, record *v1alpha1.Endpoint) (*v1alpha1.Endpoint, error) {
	return inGroup(group, record, func(extra map[string]string) (*v1alpha1.Endpoint, error) {
		labels := map[string]string{
			OwnerKey:   ownerID,
			VersionKey: FormatVersion,
			TTLKey:     strconv.FormatInt(int64(record.RecordTTL), 10),
		}
		if lease != "" {
			labels[LeaseKey] = lease
		}
		maps.Copy(labels, extra)
		return newTXT(ownerID, record, labels, record.Targets)
	})
}

// Keys Kuadrant's grouped controllers add to their ownership TXT values (its types.GroupLabelKey and
// types.TargetsLabelKey): the owner's failover group, and the record's targets joined by ";", which
// its active controllers read to remove an inactive group's targets.
const (
	GroupKey        = "group"
	GroupTargetsKey = "targets"
)

// inGroup builds a TXT with build, given the group keys to add: none for "" (the TXT of an ungrouped
// owner, unchanged); else the group and the targets, or the group alone where the targets would not
// leave the value one TXT string.
func inGroup(group string, record *v1alpha1.Endpoint, build func(extra map[string]string) (*v1alpha1.Endpoint, error)) (*v1alpha1.Endpoint, error) {
	if group == "" {
		return build(nil)
	}
	if strings.ContainsAny(group, `,=";&`) || strings.IndexFunc(group, isSpace) >= 0 {
		return nil, fmt.Errorf("group %q has a character the TXT format cannot carry", group)
	}
	txt, err := build(map[string]string{GroupKey: group, GroupTargetsKey: strings.Join(record.Targets, targetSeparator)})
	if err == nil && len(txt.Targets) == 1 && len(txt.Targets[0])-2 <= maxValueLength {
		return txt, nil
	}
	return build(map[string]string{GroupKey: group})
}

// newTXT builds the TXT with the labels, and the targets as claim-targets spread over as many TXT
// strings as they need (none: a value without claim-targets).
func newTXT(ownerID string, record *v1alpha1.Endpoint, labels map[string]string, wish v1alpha1.Targets) (*v1alpha1.Endpoint, error) {
	if err := ValidOwnerID(ownerID); err != nil {
		return nil, err
	}
	if !slices.Contains(OwnedTypes, record.RecordType) {
		return nil, fmt.Errorf("record %s: type %q cannot be owned through a TXT record", record.DNSName, record.RecordType)
	}
	if len(record.Targets) == 0 {
		return nil, fmt.Errorf("record %s: no targets", record.DNSName)
	}
	for _, t := range record.Targets {
		if err := ValidTarget(t); err != nil {
			return nil, fmt.Errorf("record %s: %w", record.DNSName, err)
		}
	}
	values := []string{FormatValue(labels)}
	if len(wish) > 0 {
		targets := slices.Clone([]string(wish))
		sort.Strings(targets)
		var err error
		if values, err = chunkValues(labels, slices.Compact(targets)); err != nil {
			return nil, fmt.Errorf("record %s: %w", record.DNSName, err)
		}
	}
	return &v1alpha1.Endpoint{
		DNSName:          TXTName(ownerID, record.RecordType, record.DNSName),
		RecordType:       v1alpha1.RecordTypeTXT,
		Targets:          values,
		SetIdentifier:    record.SetIdentifier,
		RecordTTL:        record.RecordTTL,
		Labels:           v1alpha1.Labels{ownedRecordKey: record.DNSName},
		ProviderSpecific: slices.Clone(record.ProviderSpecific),
	}, nil
}

// chunkValues spreads targets over as few values as keep each within one TXT string. Every value
// carries all other labels, so each one parses on its own.
func chunkValues(labels map[string]string, targets []string) ([]string, error) {
	format := func(chunk []string) string {
		l := make(map[string]string, len(labels)+1)
		for k, v := range labels {
			l[k] = v
		}
		l[TargetsKey] = strings.Join(chunk, targetSeparator)
		return FormatValue(l)
	}
	fits := func(value string) bool { return len(value)-2 <= maxValueLength } // the quotes are not stored
	var values []string
	var chunk []string
	for _, t := range targets {
		if fits(format(append(slices.Clone(chunk), t))) {
			chunk = append(chunk, t)
			continue
		}
		if len(chunk) == 0 {
			return nil, fmt.Errorf("target %q is too long for an ownership TXT string", t)
		}
		values = append(values, format(chunk))
		chunk = []string{t}
		if !fits(format(chunk)) {
			return nil, fmt.Errorf("target %q is too long for an ownership TXT string", t)
		}
	}
	return append(values, format(chunk)), nil
}

// Claim is one owner's ownership TXT, read back: who claims which record, and what it wants there.
type Claim struct {
	// Owner is the owner ID from the TXT value.
	Owner string
	// Record is the key of the claimed record (name lower-cased, without a trailing dot).
	Record v1alpha1.EndpointKey
	// Labels are the external-dns/<key> pairs of the value (owner and version included). A TXT split
	// over several strings has its claim-targets joined back.
	Labels map[string]string
	// Wish is the record as the owner wants it (targets, TTL, routing properties), or nil when the
	// TXT does not say (written by Kuadrant's dns-operator).
	Wish *v1alpha1.Endpoint
	// TXT is the ownership TXT as read from the zone.
	TXT *v1alpha1.Endpoint
	// Legacy marks a claim read from a TXT of Kuadrant's format before version 1. Its TXT is
	// shared by every owner it names, and is never written: no plan updates or withdraws it; only
	// prune-legacy deletes it, where it is redundant.
	Legacy bool
}

// ownerSeparator joins several owners in one value, as Kuadrant's dns-operator joins them: the
// owners of one record in its pre-version-1 TXT values, and in its owner label (LabelOwners).
const ownerSeparator = "&&"

// ParseLegacyTXT reads a TXT of Kuadrant's format before version 1, which its dns-operator wrote
// from commit 37e342d (March 2024) until 18549be "txt records per hostname and owner" (July 2025):
// external-dns's TXT registry with prefix "kuadrant-", the record type in the name, wildcard
// replacement "wildcard", and the record's merged owners in the value (generateTXTRecord in
// internal/external-dns/registry/txt.go; read back at 57b9db50 by name_mapper_externaldns.go). It
// returns one claim per owner named, sorted by owner, each with no wish. It reports
// false for anything else: a version-1 TXT, a value with a version key, disagreeing strings, no
// owner or an owner ID the format cannot carry.
func ParseLegacyTXT(txt *v1alpha1.Endpoint) ([]*Claim, bool) {
	if txt.RecordType != v1alpha1.RecordTypeTXT || len(txt.Targets) == 0 {
		return nil, false
	}
	rest, found := strings.CutPrefix(v1alpha1.NormalizeName(txt.DNSName), Prefix)
	if !found {
		return nil, false
	}
	typ, dnsName, ok := strings.Cut(rest, "-")
	if !ok || dnsName == "" {
		return nil, false
	}
	recordType := ""
	for _, t := range OwnedTypes {
		if typ == strings.ToLower(t) {
			recordType = t
		}
	}
	if recordType == "" {
		return nil, false
	}
	if dnsName == WildcardLabel || strings.HasPrefix(dnsName, WildcardLabel+".") {
		dnsName = "*" + strings.TrimPrefix(dnsName, WildcardLabel)
	}
	var labels map[string]string
	for _, value := range txt.Targets {
		l, err := ParseValue(value)
		if err != nil || labels != nil && !maps.Equal(labels, l) {
			return nil, false
		}
		labels = l
	}
	if _, versioned := labels[VersionKey]; versioned || labels[OwnerKey] == "" {
		return nil, false
	}
	owners := strings.Split(labels[OwnerKey], ownerSeparator)
	for _, o := range owners {
		if ValidOwnerID(o) != nil {
			return nil, false
		}
	}
	sort.Strings(owners)
	owners = slices.Compact(owners)
	claims := make([]*Claim, len(owners))
	for i, o := range owners {
		l := maps.Clone(labels)
		l[OwnerKey] = o
		claims[i] = &Claim{
			Owner:  o,
			Record: v1alpha1.EndpointKey{DNSName: dnsName, RecordType: recordType, SetIdentifier: txt.SetIdentifier},
			Labels: l,
			TXT:    txt,
			Legacy: true,
		}
	}
	return claims, true
}

// Lease is the lease that vouches for the claim's owner, "" for none.
func (c *Claim) Lease() string { return c.Labels[LeaseKey] }

// ParseTXT reads an ownership TXT. It reports false for anything else: another type, a name not of
// the format, a value without external-dns heritage, another format version, no owner, or a name
// that is not the one TXTName gives for its owner (Kuadrant always writes them together; a hash
// that does not match the owner is a hand-made record). Such a TXT is not an ownership record; it is
// a plain TXT owned by nobody.
func ParseTXT(txt *v1alpha1.Endpoint) (*Claim, bool) {
	return parseTXT(txt, cachedOwnerHash)
}

// parseTXT takes the hash function as a parameter so that tests can count its calls.
func parseTXT(txt *v1alpha1.Endpoint, ownerHash func(string) string) (*Claim, bool) {
	if txt.RecordType != v1alpha1.RecordTypeTXT || len(txt.Targets) == 0 {
		return nil, false
	}
	_, recordType, dnsName, ok := ParseTXTName(txt.DNSName)
	if !ok {
		return nil, false
	}
	var merged map[string]string
	var targets []string
	for _, value := range txt.Targets {
		labels, err := ParseValue(value)
		if err != nil {
			return nil, false
		}
		if t, ok := labels[TargetsKey]; ok && t != "" {
			targets = append(targets, strings.Split(t, targetSeparator)...)
		}
		delete(labels, TargetsKey)
		if merged == nil {
			merged = labels
		} else if !maps.Equal(merged, labels) {
			// The strings of one TXT disagree: which one is the owner's word is unknowable.
			return nil, false
		}
	}
	owner := merged[OwnerKey]
	// The name must be the one the owner writes: this checks the hash, and gives each claim a single
	// spelling ("*" and "wildcard" would otherwise both name a wildcard's TXT).
	if merged[VersionKey] != FormatVersion || ValidOwnerID(owner) != nil || v1alpha1.NormalizeName(txt.DNSName) != txtName(ownerHash(owner), recordType, dnsName) {
		return nil, false
	}
	c := &Claim{
		Owner:  owner,
		Record: v1alpha1.EndpointKey{DNSName: dnsName, RecordType: recordType, SetIdentifier: txt.SetIdentifier},
		Labels: merged,
		TXT:    txt,
	}
	sort.Strings(targets)
	targets = slices.Compact(targets)
	if len(targets) > 0 {
		merged[TargetsKey] = strings.Join(targets, targetSeparator)
	}
	ttl, err := strconv.ParseInt(merged[TTLKey], 10, 64)
	if len(targets) > 0 && !slices.Contains(targets, "") && err == nil && ttl >= 0 {
		c.Wish = &v1alpha1.Endpoint{
			DNSName:          dnsName,
			RecordType:       recordType,
			SetIdentifier:    txt.SetIdentifier,
			Targets:          targets,
			RecordTTL:        v1alpha1.TTL(ttl),
			ProviderSpecific: slices.Clone(txt.ProviderSpecific),
		}
	}
	return c, true
}
