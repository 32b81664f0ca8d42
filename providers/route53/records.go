package route53

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/geo"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// AdjustEndpoints implements providers.Provider. Names are lower-cased, a missing TTL becomes 300,
// TXT values are quoted as Route 53 stores them, a value given twice is kept once, and only the
// routing keys Route 53 expresses are kept. An unknown geo code or one Route 53 does not route by, a weight outside 0..255, or a set identifier without exactly one of
// weight and geo-code is a Permanent error.
func (p *Provider) AdjustEndpoints(endpoints []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error) {
	out := make([]*v1alpha1.Endpoint, 0, len(endpoints))
	for _, in := range endpoints {
		ep := in.DeepCopy()
		ep.DNSName = normalizeName(ep.DNSName)
		if ep.RecordTTL == 0 {
			ep.RecordTTL = defaultTTL
		}
		if ep.RecordType == v1alpha1.RecordTypeTXT {
			for i, t := range ep.Targets {
				ep.Targets[i] = quoteTXT(t)
			}
		}
		// A record set is a set: Route 53 refuses a value given twice ("Duplicate Resource Record").
		ep.Targets = uniqueTargets(ep.Targets)
		weight, hasWeight := in.GetProviderSpecific(v1alpha1.ProviderSpecificWeight)
		code, hasGeo := in.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
		ep.ProviderSpecific = nil
		if hasWeight {
			if err := geo.ValidateWeight(weight); err != nil {
				return nil, providers.NewError(providers.Permanent, err)
			}
			if w, _ := strconv.ParseUint(weight, 10, 64); w > 255 {
				return nil, providers.Errorf(providers.Permanent, "weight %s of %s is above 255, the largest Route 53 weight", weight, in)
			}
			ep.SetProviderSpecific(v1alpha1.ProviderSpecificWeight, weight)
		}
		if hasGeo {
			if err := geo.ValidateCode(code); err != nil {
				return nil, providers.NewError(providers.Permanent, err)
			}
			if slices.Contains(unroutedCountries, code) {
				return nil, providers.Errorf(providers.Permanent, "geo code %s of %s is a country Route 53 does not route by", code, in)
			}
			ep.SetProviderSpecific(v1alpha1.ProviderSpecificGeoCode, code)
		}
		switch {
		case hasWeight && hasGeo:
			return nil, providers.Errorf(providers.Permanent, "%s has both a weight and a geo-code; a Route 53 record set has one routing policy", in)
		case (hasWeight || hasGeo) && ep.SetIdentifier == "":
			return nil, providers.Errorf(providers.Permanent, "%s has a routing property but no set identifier", in)
		case ep.SetIdentifier != "" && !hasWeight && !hasGeo:
			return nil, providers.Errorf(providers.Permanent, "%s has a set identifier but neither weight nor geo-code", in)
		case ep.RecordType == v1alpha1.RecordTypeCNAME && len(ep.Targets) > 1:
			return nil, providers.Errorf(providers.Permanent, "%s: a Route 53 CNAME holds one target", in)
		}
		out = append(out, ep)
	}
	return out, nil
}

// unroutedCountries are the ISO 3166 countries Route 53 geolocation does not support (Route 53
// Developer Guide, "Geolocation": Bouvet Island, Christmas Island, Western Sahara, Heard Island and
// McDonald Islands).
var unroutedCountries = []string{"BV", "CX", "EH", "HM"}

// uniqueTargets drops the repeats of a value, keeping the first.
func uniqueTargets(targets v1alpha1.Targets) v1alpha1.Targets {
	out := make(v1alpha1.Targets, 0, len(targets))
	for _, t := range targets {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// changeBatch turns a batch into Route 53 changes: deletions, the old values of updates and the
// required sets as DELETE, then the required sets again, the new values of updates and creations as
// CREATE.
func changeBatch(changes *providers.Changes) ([]types.Change, error) {
	var batch []types.Change
	add := func(action types.ChangeAction, eps []*v1alpha1.Endpoint) error {
		for _, ep := range eps {
			if ep == nil {
				return providers.Errorf(providers.Permanent, "batch holds an empty record set")
			}
			rs, err := toRecordSet(ep)
			if err != nil {
				return err
			}
			batch = append(batch, types.Change{Action: action, ResourceRecordSet: rs})
		}
		return nil
	}
	for _, step := range []struct {
		action types.ChangeAction
		eps    []*v1alpha1.Endpoint
	}{
		{types.ChangeActionDelete, changes.Delete},
		{types.ChangeActionDelete, changes.UpdateOld},
		{types.ChangeActionDelete, changes.Require},
		{types.ChangeActionCreate, changes.Require},
		{types.ChangeActionCreate, changes.UpdateNew},
		{types.ChangeActionCreate, changes.Create},
	} {
		if err := add(step.action, step.eps); err != nil {
			return nil, err
		}
	}
	return batch, nil
}

// withinLimits refuses a call Route 53 would refuse for its size.
func withinLimits(batch []types.Change) error {
	records, chars := 0, 0
	for _, c := range batch {
		for _, r := range c.ResourceRecordSet.ResourceRecords {
			records++
			chars += len(aws.ToString(r.Value))
		}
	}
	if records > maxRecordsPerCall {
		return providers.Errorf(providers.Permanent, "batch holds %d resource records; Route 53 takes %d per call", records, maxRecordsPerCall)
	}
	if chars > maxValueCharsPerCall {
		return providers.Errorf(providers.Permanent, "batch holds %d characters of values; Route 53 takes %d per call", chars, maxValueCharsPerCall)
	}
	return nil
}

// toRecordSet translates an adjusted endpoint into a Route 53 record set.
func toRecordSet(ep *v1alpha1.Endpoint) (*types.ResourceRecordSet, error) {
	rs := &types.ResourceRecordSet{
		Name: aws.String(ep.DNSName),
		Type: types.RRType(ep.RecordType),
		TTL:  aws.Int64(int64(ep.RecordTTL)),
	}
	for _, t := range ep.Targets {
		rs.ResourceRecords = append(rs.ResourceRecords, types.ResourceRecord{Value: aws.String(t)})
	}
	if ep.SetIdentifier != "" {
		rs.SetIdentifier = aws.String(ep.SetIdentifier)
	}
	if w, ok := ep.GetProviderSpecific(v1alpha1.ProviderSpecificWeight); ok {
		n, err := strconv.ParseInt(w, 10, 64)
		if err != nil {
			return nil, providers.NewError(providers.Permanent, geo.ErrWeight)
		}
		rs.Weight = aws.Int64(n)
	}
	if code, ok := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode); ok {
		if err := geo.ValidateCode(code); err != nil {
			return nil, providers.NewError(providers.Permanent, err)
		}
		rs.GeoLocation = geoLocation(code)
	}
	return rs, nil
}

// geoLocation maps a validated geo code: GEO-XX is a continent, "*" the default location, and any
// other code an ISO 3166 country.
func geoLocation(code string) *types.GeoLocation {
	if continent, ok := strings.CutPrefix(code, geo.ContinentPrefix); ok {
		return &types.GeoLocation{ContinentCode: aws.String(continent)}
	}
	return &types.GeoLocation{CountryCode: aws.String(code)}
}

// toEndpoint translates a Route 53 record set as read into an endpoint.
func toEndpoint(rs types.ResourceRecordSet) *v1alpha1.Endpoint {
	targets := make([]string, len(rs.ResourceRecords))
	for i, r := range rs.ResourceRecords {
		targets[i] = aws.ToString(r.Value)
	}
	ep := v1alpha1.NewEndpoint(normalizeName(aws.ToString(rs.Name)), string(rs.Type), v1alpha1.TTL(aws.ToInt64(rs.TTL)), targets...)
	ep.SetIdentifier = aws.ToString(rs.SetIdentifier)
	if rs.Weight != nil {
		ep.SetProviderSpecific(v1alpha1.ProviderSpecificWeight, strconv.FormatInt(*rs.Weight, 10))
	}
	if g := rs.GeoLocation; g != nil {
		code := aws.ToString(g.CountryCode)
		if g.ContinentCode != nil {
			code = geo.ContinentPrefix + aws.ToString(g.ContinentCode)
		} else if g.SubdivisionCode != nil {
			code += "-" + aws.ToString(g.SubdivisionCode)
		}
		ep.SetProviderSpecific(v1alpha1.ProviderSpecificGeoCode, code)
	}
	return ep
}

// octalEscape is how Route 53 returns characters other than letters, digits, "-" and "_" in names
// ("*" reads back as \052).
var octalEscape = regexp.MustCompile(`\\[0-7]{3}`)

// normalizeName lower-cases a name, drops the trailing dot and undoes Route 53's octal escapes.
func normalizeName(name string) string {
	name = octalEscape.ReplaceAllStringFunc(name, func(esc string) string {
		n, _ := strconv.ParseUint(esc[1:], 8, 8)
		return string(rune(n))
	})
	return strings.ToLower(strings.TrimSuffix(strings.TrimSpace(name), "."))
}

// quoteTXT returns a TXT value as Route 53 stores it: one or more quoted character strings. A value
// that already is one (Kuadrant's ownership records are written quoted) is kept as it is, so records
// written by either controller compare equal; any other text is quoted, escaping quotes and
// backslashes, and split into strings of at most 255 characters.
func quoteTXT(v string) string {
	if quotedStrings(v) {
		return v
	}
	var parts []string
	var cur strings.Builder
	n := 0
	flush := func() {
		parts = append(parts, `"`+cur.String()+`"`)
		cur.Reset()
		n = 0
	}
	for _, r := range v {
		if n == 255 {
			flush()
		}
		if r == '"' || r == '\\' {
			cur.WriteByte('\\')
		}
		cur.WriteRune(r)
		n++
	}
	flush()
	return strings.Join(parts, " ")
}

// quotedStrings reports whether v is a sequence of quoted strings of at most 255 characters each,
// separated by single spaces.
func quotedStrings(v string) bool {
	i, count := 0, 0
	for i < len(v) {
		if count > 0 {
			if v[i] != ' ' {
				return false
			}
			i++
		}
		if i >= len(v) || v[i] != '"' {
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
		count++
	}
	return count > 0
}
