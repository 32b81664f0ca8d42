package route53

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/pkg/geo"
)

// applyBatch validates a change batch against a zone and returns the zone's sets with the batch
// applied, or the problems that make Route 53 reject it. The zone is not modified.
func applyBatch(z *zone, changes []changeXML) ([]*recordSet, []string) {
	if len(changes) == 0 {
		return nil, []string{"ChangeBatch must contain at least one change"}
	}
	var problems []string
	records, chars := 0, 0
	actions := map[string][]string{}
	var order []string
	for _, c := range changes {
		rs := fromXML(c.RecordSet)
		if p := validateSet(z, c.Action, rs); p != "" {
			problems = append(problems, p)
			continue
		}
		factor := 1
		if c.Action == "UPSERT" {
			factor = 2
		}
		records += factor * len(rs.Values)
		for _, v := range rs.Values {
			chars += factor * len(v)
		}
		k := rs.key()
		if _, seen := actions[k]; !seen {
			order = append(order, k)
		}
		actions[k] = append(actions[k], c.Action)
	}
	if records > MaxRecordsPerChange {
		problems = append(problems, fmt.Sprintf("Number of records limit of %d exceeded.", MaxRecordsPerChange))
	}
	if chars > MaxValueCharsPerChange {
		problems = append(problems, fmt.Sprintf("Number of characters limit of %d exceeded.", MaxValueCharsPerChange))
	}
	for _, k := range order {
		if a := actions[k]; len(a) > 1 && !slices.Equal(a, []string{"DELETE", "CREATE"}) {
			problems = append(problems, "The request contains an invalid set of changes for a resource record set "+k)
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}

	next := slices.Clone(z.sets)
	touched := map[string]bool{}
	for _, c := range changes {
		rs := fromXML(c.RecordSet)
		touched[rs.Name] = true
		i := slices.IndexFunc(next, func(o *recordSet) bool { return o.key() == rs.key() })
		switch c.Action {
		case "CREATE":
			if i >= 0 {
				problems = append(problems, fmt.Sprintf("Tried to create resource record set [name='%s', type='%s'%s] but it already exists",
					rs.Name, rs.Type, idText(rs)))
				continue
			}
			next = append(next, rs)
		case "DELETE":
			if i < 0 {
				problems = append(problems, fmt.Sprintf("Tried to delete resource record set [name='%s', type='%s'%s] but it was not found",
					rs.Name, rs.Type, idText(rs)))
				continue
			}
			if !next[i].sameValues(rs) {
				problems = append(problems, fmt.Sprintf("Tried to delete resource record set [name='%s', type='%s'%s] but the values provided do not match the current values",
					rs.Name, rs.Type, idText(rs)))
				continue
			}
			next = slices.Delete(next, i, i+1)
		case "UPSERT":
			if i >= 0 {
				next[i] = rs
			} else {
				next = append(next, rs)
			}
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return next, consistency(z, next, touched)
}

// consistency checks the rules between the sets of a name that the batch touched.
func consistency(z *zone, sets []*recordSet, touched map[string]bool) []string {
	var problems []string
	byName := map[string][]*recordSet{}
	for _, rs := range sets {
		if touched[rs.Name] {
			byName[rs.Name] = append(byName[rs.Name], rs)
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		group := byName[name]
		hasCNAME := slices.ContainsFunc(group, func(rs *recordSet) bool { return rs.Type == "CNAME" })
		if hasCNAME && name == z.name {
			problems = append(problems, fmt.Sprintf("RRSet of type CNAME with DNS name %s is not permitted at apex in zone %s", name, z.name))
		} else if hasCNAME && slices.ContainsFunc(group, func(rs *recordSet) bool { return rs.Type != "CNAME" }) {
			problems = append(problems, fmt.Sprintf("RRSet of type CNAME with DNS name %s is not permitted as it conflicts with other records with the same DNS name in zone %s", name, z.name))
		}
		byType := map[string][]*recordSet{}
		for _, rs := range group {
			byType[rs.Type] = append(byType[rs.Type], rs)
		}
		for t, same := range byType {
			policies := map[string]bool{}
			locations := map[geoLocationXML]bool{}
			for _, rs := range same {
				policies[rs.policy()] = true
				if rs.Geo != nil {
					if locations[*rs.Geo] {
						problems = append(problems, fmt.Sprintf("RRSet with DNS name %s, type %s has two sets for one geolocation", name, t))
					}
					locations[*rs.Geo] = true
				}
			}
			if len(policies) > 1 {
				problems = append(problems, fmt.Sprintf("RRSet with DNS name %s, type %s cannot be created as sets with other routing policies exist with the same name and type", name, t))
			}
		}
	}
	return problems
}

// validateSet checks one change on its own.
func validateSet(z *zone, action string, rs *recordSet) string {
	what := fmt.Sprintf("[name='%s', type='%s'%s]", rs.Name, rs.Type, idText(rs))
	switch action {
	case "CREATE", "DELETE", "UPSERT":
	default:
		return fmt.Sprintf("Invalid action %q for %s", action, what)
	}
	if rs.Name != z.name && !strings.HasSuffix(rs.Name, "."+z.name) {
		return fmt.Sprintf("RRSet with DNS name %s is not permitted in zone %s", rs.Name, z.name)
	}
	switch rs.Type {
	case "A", "AAAA", "CNAME", "TXT", "NS", "MX", "SRV", "CAA", "PTR":
	case "SOA":
		if action != "UPSERT" {
			return "A HostedZone must contain exactly one SOA record."
		}
	default:
		return fmt.Sprintf("Unsupported record type %s for %s", rs.Type, what)
	}
	if rs.TTL < 0 || rs.TTL > 2147483647 {
		return fmt.Sprintf("Invalid TTL for %s", what)
	}
	if len(rs.Values) == 0 {
		return fmt.Sprintf("Invalid Resource Record: %s has no values", what)
	}
	if rs.Type == "CNAME" && len(rs.Values) > 1 {
		return fmt.Sprintf("Invalid Resource Record: CNAME %s must hold exactly one value", what)
	}
	for _, v := range rs.Values {
		if p := validateValue(rs.Type, v); p != "" {
			return fmt.Sprintf("Invalid Resource Record: FATAL problem: %s encountered with '%s'", p, v)
		}
	}
	if rs.Weight != nil && rs.Geo != nil {
		return fmt.Sprintf("Invalid request: %s has both a weight and a geolocation", what)
	}
	if (rs.Weight != nil || rs.Geo != nil) && rs.SetIdentifier == "" {
		return fmt.Sprintf("Invalid request: %s has a routing policy but no SetIdentifier", what)
	}
	if rs.SetIdentifier != "" && rs.Weight == nil && rs.Geo == nil {
		return fmt.Sprintf("Invalid request: %s has a SetIdentifier but no routing policy", what)
	}
	if len(rs.SetIdentifier) > 128 {
		return fmt.Sprintf("Invalid request: SetIdentifier of %s is longer than 128 characters", what)
	}
	if rs.Weight != nil && (*rs.Weight < 0 || *rs.Weight > 255) {
		return fmt.Sprintf("Invalid request: weight of %s must be in 0..255", what)
	}
	if g := rs.Geo; g != nil {
		valid := false
		switch {
		case g.ContinentCode != "":
			valid = g.CountryCode == "" && g.SubdivisionCode == "" && geo.IsContinent(g.ContinentCode)
		case g.CountryCode == "*":
			valid = g.SubdivisionCode == ""
		case g.CountryCode != "":
			valid = geo.IsCountry(g.CountryCode) && (g.SubdivisionCode == "" || g.CountryCode == "US")
		}
		if !valid {
			return fmt.Sprintf("Invalid request: unknown geolocation %+v for %s", *g, what)
		}
	}
	return ""
}

func validateValue(recordType, v string) string {
	switch recordType {
	case "A":
		if ip := net.ParseIP(v); ip == nil || ip.To4() == nil {
			return "ARRDATAIllegalIPv4Address"
		}
	case "AAAA":
		if ip := net.ParseIP(v); ip == nil || ip.To4() != nil {
			return "AAAARRDATAIllegalIPv6Address"
		}
	case "TXT":
		if !validCharacterStrings(v) {
			return "InvalidCharacterString (Value should be enclosed in quotation marks)"
		}
	default:
		if strings.TrimSpace(v) == "" {
			return "EmptyValue"
		}
	}
	return ""
}

// validCharacterStrings accepts one or more quoted strings of at most 255 characters each,
// separated by spaces, with \" and \\ escapes.
func validCharacterStrings(v string) bool {
	i, n := 0, 0
	for i < len(v) {
		if v[i] == ' ' && n > 0 {
			i++
			continue
		}
		if v[i] != '"' {
			return false
		}
		i++
		length := 0
		for ; i < len(v) && v[i] != '"'; i++ {
			if v[i] == '\\' {
				i++
			}
			length++
		}
		if i >= len(v) || length > 255 {
			return false
		}
		i++
		n++
	}
	return n > 0
}

func idText(rs *recordSet) string {
	if rs.SetIdentifier == "" {
		return ""
	}
	return fmt.Sprintf(", set-identifier='%s'", rs.SetIdentifier)
}

// canonicalName lower-cases a name, adds the trailing dot and escapes "*" as Route 53 stores it.
func canonicalName(name string) string {
	name = strings.ToLower(strings.TrimSpace(name))
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return strings.ReplaceAll(name, "*", `\052`)
}

func fromXML(x recordSetXML) *recordSet {
	rs := &recordSet{Name: canonicalName(x.Name), Type: x.Type, SetIdentifier: x.SetIdentifier, Weight: x.Weight}
	for _, r := range x.Records {
		rs.Values = append(rs.Values, r.Value)
	}
	if x.TTL != nil {
		rs.TTL = *x.TTL
	}
	if x.GeoLocation != nil {
		g := *x.GeoLocation
		rs.Geo = &g
	}
	return rs
}

func (rs *recordSet) toXML() recordSetXML {
	ttl := rs.TTL
	x := recordSetXML{Name: rs.Name, Type: rs.Type, SetIdentifier: rs.SetIdentifier, TTL: &ttl}
	for _, v := range rs.Values {
		x.Records = append(x.Records, resourceRecord{Value: v})
	}
	if rs.Weight != nil {
		w := *rs.Weight
		x.Weight = &w
	}
	if rs.Geo != nil {
		g := *rs.Geo
		x.GeoLocation = &g
	}
	return x
}

func (rs *recordSet) key() string {
	return fmt.Sprintf("[name='%s', type='%s'%s]", rs.Name, rs.Type, idText(rs))
}

func (rs *recordSet) policy() string {
	switch {
	case rs.Weight != nil:
		return "weighted"
	case rs.Geo != nil:
		return "geolocation"
	}
	return "simple"
}

// sameValues compares what a DELETE must match: TTL, values and routing.
func (rs *recordSet) sameValues(o *recordSet) bool {
	if rs.TTL != o.TTL || (rs.Weight == nil) != (o.Weight == nil) || (rs.Geo == nil) != (o.Geo == nil) {
		return false
	}
	if rs.Weight != nil && *rs.Weight != *o.Weight || rs.Geo != nil && *rs.Geo != *o.Geo {
		return false
	}
	a, b := slices.Clone(rs.Values), slices.Clone(o.Values)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// sortSets orders sets as Route 53 lists them: by name with its labels reversed, then type, then
// set identifier.
func sortSets(sets []*recordSet) {
	slices.SortFunc(sets, func(a, b *recordSet) int {
		if lessSet(a, b) {
			return -1
		}
		if lessSet(b, a) {
			return 1
		}
		return 0
	})
}

func lessSet(a, b *recordSet) bool {
	if ra, rb := reversed(a.Name), reversed(b.Name); ra != rb {
		return ra < rb
	}
	if a.Type != b.Type {
		return a.Type < b.Type
	}
	return a.SetIdentifier < b.SetIdentifier
}

func reversed(name string) string {
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".")
}
