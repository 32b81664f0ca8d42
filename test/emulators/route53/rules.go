package route53

import (
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
)

// applyBatch validates a change batch against a zone and returns the zone's sets with the batch
// applied, or Route 53's refusal: InvalidInput when a change breaks the request schema (checked for
// the whole batch first, as Route 53 validates the request before it looks at the zone), else
// InvalidChangeBatch listing every problem the zone has with the batch. The zone is not modified.
func applyBatch(z *zone, changes []changeXML) ([]*recordSet, *apiError) {
	if len(changes) == 0 {
		// Route 53's code for an empty list is not known (CLOUD-API-RULES.md D2).
		return nil, invalidChangeBatch([]string{"ChangeBatch must contain at least one change"})
	}
	for _, c := range changes {
		if e := schemaError(c); e != nil {
			return nil, e
		}
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
		return nil, invalidChangeBatch(problems)
	}

	next := slices.Clone(z.sets)
	touched := map[string]bool{}
	for _, c := range changes {
		rs := fromXML(c.RecordSet)
		touched[rs.key()] = true
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
	if len(problems) == 0 {
		problems = consistency(z, next, touched)
	}
	if len(problems) > 0 {
		return nil, invalidChangeBatch(problems)
	}
	return next, nil
}

// invalidChangeBatch is Route 53's refusal of changes the zone cannot take: HTTP 400, the problems
// in brackets separated by ", " (CLOUD-API-RULES.md A1.9), and each one in Messages.
func invalidChangeBatch(problems []string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "InvalidChangeBatch",
		message: "[" + strings.Join(problems, ", ") + "]", messages: problems}
}

func invalidInput(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, code: "InvalidInput", message: fmt.Sprintf(format, args...)}
}

// rrTypes are the values of the API model's RRType enumeration, in the model's order.
var rrTypes = []string{"SOA", "A", "TXT", "NS", "CNAME", "MX", "NAPTR", "PTR", "SRV", "SPF", "AAAA", "CAA", "DS", "TLSA", "SSHFP", "SVCB", "HTTPS"}

// schemaError checks one change against the request schema: what Route 53 answers with InvalidInput
// before it looks at the zone. Messages captured from Route 53 are used verbatim
// (CLOUD-API-RULES.md A7.36, A7.37, A8.44); range and length failures take the form of the captured
// XML-schema failure (A8.44) with the API model's shape names and limits.
func schemaError(c changeXML) *apiError {
	x := c.RecordSet
	setID := "null"
	if x.SetIdentifier != "" {
		setID = x.SetIdentifier
	}
	// The name as sent: Route 53 quotes it without adding a dot (modernisation-platform#10072).
	in := fmt.Sprintf("in Change with [Action=%s, Name=%s, Type=%s, SetIdentifier=%s]", c.Action, x.Name, x.Type, setID)
	enumeration := func(value string, values []string) *apiError {
		return invalidInput("Invalid XML ; cvc-enumeration-valid: Value '%s' is not facet-valid with respect to enumeration '[%s]'. It must be a value from the enumeration.",
			value, strings.Join(values, ", "))
	}
	if actions := []string{"CREATE", "DELETE", "UPSERT"}; !slices.Contains(actions, c.Action) {
		return enumeration(c.Action, actions)
	}
	if !slices.Contains(rrTypes, x.Type) {
		return enumeration(x.Type, rrTypes)
	}
	records := x.TTL != nil && len(x.Records) > 0
	other := x.AliasTarget != nil || x.TrafficPolicyInstanceID != ""
	found := 0
	for _, given := range []bool{x.AliasTarget != nil, records, x.TrafficPolicyInstanceID != ""} {
		if given {
			found++
		}
	}
	const exactlyOne = "Invalid request: Expected exactly one of [AliasTarget, all of [TTL, and ResourceRecords], or TrafficPolicyInstanceId], "
	switch {
	case found > 1 || other && (x.TTL != nil || len(x.Records) > 0):
		// An alias with ResourceRecords and no TTL is "more than one" too (community.aws#502).
		return invalidInput(exactlyOne+"but found more than one %s", in)
	case found == 0:
		return invalidInput(exactlyOne+"but found none %s", in)
	case other:
		return &apiError{status: http.StatusNotImplemented, code: "NotImplemented",
			message: "the Route 53 emulator does not store alias or traffic-policy record sets"}
	}
	if (x.Weight != nil || x.GeoLocation != nil) && x.SetIdentifier == "" {
		return invalidInput("Invalid request: Missing field 'SetIdentifier' %s", in)
	}
	// The API model gives these constraints; Route 53's wording for breaking them was not captured
	// (CLOUD-API-RULES.md A7.37, A7.38), so the emulator says what is wrong in Route 53's form.
	if x.SetIdentifier != "" && x.Weight == nil && x.GeoLocation == nil {
		return invalidInput("Invalid request: a SetIdentifier needs a routing policy (Weight or GeoLocation) %s", in)
	}
	if x.Weight != nil && x.GeoLocation != nil {
		return invalidInput("Invalid request: Expected at most one of [Weight, GeoLocation], but found more than one %s", in)
	}
	bound := func(kind string, value, limit int64, shape string) *apiError {
		return invalidInput("Invalid XML ; cvc-%s-valid: Value '%d' is not facet-valid with respect to %s '%d' for type '%s'.", kind, value, kind, limit, shape)
	}
	length := func(kind, value string, limit int, shape string) *apiError {
		return invalidInput("Invalid XML ; cvc-%s-valid: Value '%s' with length = '%d' is not facet-valid with respect to %s '%d' for type '%s'.",
			kind, value, len(value), kind, limit, shape)
	}
	if ttl := x.TTL; ttl != nil && *ttl < 0 {
		return bound("minInclusive", *ttl, 0, "TTL")
	} else if ttl != nil && *ttl > 2147483647 {
		return bound("maxInclusive", *ttl, 2147483647, "TTL")
	}
	if w := x.Weight; w != nil && *w < 0 {
		return bound("minInclusive", *w, 0, "ResourceRecordSetWeight")
	} else if w != nil && *w > 255 {
		return bound("maxInclusive", *w, 255, "ResourceRecordSetWeight")
	}
	if len(x.SetIdentifier) > 128 {
		return length("maxLength", x.SetIdentifier, 128, "ResourceRecordSetIdentifier")
	}
	for _, r := range x.Records {
		if len(r.Value) > 4000 {
			return length("maxLength", r.Value, 4000, "RData")
		}
	}
	if g := x.GeoLocation; g != nil {
		switch {
		case g.ContinentCode != "" && len(g.ContinentCode) != 2:
			return length("length", g.ContinentCode, 2, "ContinentCode")
		case len(g.CountryCode) > 2:
			return length("maxLength", g.CountryCode, 2, "CountryCode")
		case len(g.SubdivisionCode) > 3:
			return length("maxLength", g.SubdivisionCode, 3, "SubdivisionCode")
		case g.ContinentCode != "" && (g.CountryCode != "" || g.SubdivisionCode != ""):
			// The API model: "Specifying ContinentCode with either CountryCode or SubdivisionCode
			// returns an InvalidInput error." Its wording was not captured.
			return invalidInput("Invalid request: Specifying ContinentCode with CountryCode or SubdivisionCode is not allowed %s", in)
		case g.ContinentCode == "" && g.CountryCode == "":
			return invalidInput("Invalid request: GeoLocation needs a ContinentCode or a CountryCode %s", in)
		}
	}
	return nil
}

// consistency checks the rules between the sets of a name and type that the batch touched.
func consistency(z *zone, sets []*recordSet, touched map[string]bool) []string {
	var problems []string
	names := map[string]bool{}
	for _, rs := range sets {
		if touched[rs.key()] {
			names[rs.Name] = true
		}
	}
	byName := map[string][]*recordSet{}
	for _, rs := range sets {
		if names[rs.Name] {
			byName[rs.Name] = append(byName[rs.Name], rs)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		group := byName[name]
		hasCNAME := slices.ContainsFunc(group, func(rs *recordSet) bool { return rs.Type == "CNAME" })
		if hasCNAME && name == z.name {
			problems = append(problems, fmt.Sprintf("RRSet of type CNAME with DNS name %s is not permitted at apex in zone %s", name, z.name))
		} else if hasCNAME && slices.ContainsFunc(group, func(rs *recordSet) bool { return rs.Type != "CNAME" }) {
			problems = append(problems, cnameConflicts(z, name, group, touched)...)
		}
		byType := map[string][]*recordSet{}
		for _, rs := range group {
			byType[rs.Type] = append(byType[rs.Type], rs)
		}
		for _, t := range slices.Sorted(maps.Keys(byType)) {
			problems = append(problems, typeGroupProblems(name, t, byType[t], touched)...)
		}
	}
	return problems
}

// cnameConflicts words a CNAME beside other types as Route 53 does, from the side the batch wrote:
// a CNAME written where other types are (aws/aws-sdk-java#1996), or another type written where the
// CNAME is (GSA-TTS/dns#443, whose capture has two spaces before "CNAME").
func cnameConflicts(z *zone, name string, group []*recordSet, touched map[string]bool) []string {
	if slices.ContainsFunc(group, func(rs *recordSet) bool { return rs.Type == "CNAME" && touched[rs.key()] }) {
		return []string{fmt.Sprintf("RRSet of type CNAME with DNS name %s is not permitted as it conflicts with other records with the same DNS name in zone %s", name, z.name)}
	}
	var problems []string
	for _, rs := range group {
		if rs.Type != "CNAME" && touched[rs.key()] {
			problems = append(problems, fmt.Sprintf("RRSet of type %s with DNS name %s is not permitted because a conflicting RRSet of type  CNAME with the same DNS name already exists in zone %s",
				rs.Type, name, z.name))
		}
	}
	return problems
}

// typeGroupProblems checks the sets of one name and type after a batch: one routing policy, one set
// per geolocation, one TTL among weighted sets.
func typeGroupProblems(name, t string, same []*recordSet, touched map[string]bool) []string {
	var problems []string
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
		// Route 53's wording for the two captured cases (external-dns#3141; chef-boneyard/route53#100),
		// the same form for the other policies.
		for _, rs := range same {
			switch {
			case !touched[rs.key()]:
			case rs.policy() == "simple":
				problems = append(problems, fmt.Sprintf("RRSet with DNS name %s, type %s cannot be created as other RRSets exist with the same name and type.", name, t))
			default:
				problems = append(problems, fmt.Sprintf("RRSet with DNS name %s, type %s, SetIdentifier %s cannot be created as a non-%s set exists with the same name and type.",
					name, t, rs.SetIdentifier, rs.policy()))
			}
		}
		return problems
	}
	if !policies["weighted"] {
		return problems
	}
	// Weighted sets of one name and type share one TTL: Route 53 refuses the sets of the batch whose
	// TTL differs from the sets it leaves alone (aws/aws-sdk-go-v2#518; CLOUD-API-RULES.md A7.40), or
	// from the first of the batch when it writes them all.
	ttl := int64(-1)
	for _, rs := range same {
		if !touched[rs.key()] {
			ttl = rs.TTL
			break
		}
	}
	for _, rs := range same {
		if ttl < 0 {
			ttl = rs.TTL
		}
		if rs.TTL != ttl && touched[rs.key()] {
			problems = append(problems, fmt.Sprintf("RRSet with DNS name %s and type %s, SetIdentifier %s cannot be created as weighted sets must contain the same TTL.",
				name, t, rs.SetIdentifier))
		}
	}
	return problems
}

// validateSet checks one change on its own, against the zone it is sent to.
func validateSet(z *zone, action string, rs *recordSet) string {
	what := fmt.Sprintf("[name='%s', type='%s'%s]", rs.Name, rs.Type, idText(rs))
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
		return fmt.Sprintf("The Route 53 emulator does not implement record type %s (%s)", rs.Type, what)
	}
	if rs.Type == "CNAME" && len(rs.Values) > 1 {
		return fmt.Sprintf("Invalid Resource Record: CNAME %s must hold exactly one value", what)
	}
	seen := map[string]bool{}
	for _, v := range rs.Values {
		if p := validateValue(rs.Type, v); p != "" {
			return fmt.Sprintf("Invalid Resource Record: FATAL problem: %s encountered with '%s'", p, v)
		}
		if seen[v] {
			// external-dns#1929; CLOUD-API-RULES.md A5.30.
			return fmt.Sprintf("Duplicate Resource Record: '%s'", v)
		}
		seen[v] = true
	}
	if g := rs.Geo; g != nil {
		valid := false
		switch {
		case g.ContinentCode != "":
			valid = isContinent(g.ContinentCode)
		case g.CountryCode == "*":
			valid = g.SubdivisionCode == ""
		default:
			valid = isCountry(g.CountryCode) && (g.SubdivisionCode == "" || g.CountryCode == "US")
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

// reversed is the key Route 53 sorts names by: the labels reversed, with the trailing dot, compared
// as ASCII ("com.example.www."), so characters below "." such as "-" sort a label before its
// prefix (API model, ListResourceRecordSets "Sort order"; ListHostedZonesByName). Names are compared
// in their stored, escaped form ("\052" for "*"), as Route 53 does.
func reversed(name string) string {
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".") + "."
}
