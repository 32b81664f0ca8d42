package azure

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/dns/armdns"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/trafficmanager/armtrafficmanager"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/geo"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// Limits of Azure DNS and Traffic Manager that AdjustEndpoints and Apply check before writing.
const (
	recordsPerSet   = 20
	txtChunk        = 255
	maxWeight       = 1000
	worldGeo        = "WORLD"
	endpointType    = "Microsoft.Network/trafficManagerProfiles/externalEndpoints"
	setsMetadataKey = "dnspolicysets"
)

// regions are Traffic Manager's geographic regions above country level.
var regions = []string{"GEO-AF", "GEO-AN", "GEO-AP", "GEO-AS", "GEO-EU", "GEO-ME", "GEO-NA", "GEO-SA"}

// groupKey is one Azure record set: a name (lower case, fully qualified without the dot) and type.
type groupKey struct {
	name, recordType string
}

func (k groupKey) String() string { return k.name + " " + k.recordType }

// state is one read of a zone: its record sets of the types this backend handles, and the profiles
// they alias.
type state struct {
	zoneName string
	sets     map[groupKey]*armdns.RecordSet
	decoded  map[groupKey][]*v1alpha1.Endpoint
}

func (st *state) relativeName(name string) string {
	if name == st.zoneName {
		return "@"
	}
	return strings.TrimSuffix(name, "."+st.zoneName)
}

func (st *state) endpoints() []*v1alpha1.Endpoint {
	var eps []*v1alpha1.Endpoint
	for _, group := range st.decoded {
		for _, ep := range group {
			eps = append(eps, ep.DeepCopy())
		}
	}
	v1alpha1.SortEndpoints(eps)
	return eps
}

func supportedType(t string) bool {
	return t == v1alpha1.RecordTypeA || t == v1alpha1.RecordTypeAAAA || t == v1alpha1.RecordTypeCNAME || t == v1alpha1.RecordTypeTXT ||
		t == v1alpha1.RecordTypeNS
}

// txtSet is one TXT set with a set identifier, as kept in a record set's metadata.
type txtSet struct {
	SetIdentifier    string                    `json:"setIdentifier"`
	Targets          []string                  `json:"targets"`
	ProviderSpecific v1alpha1.ProviderSpecific `json:"providerSpecific,omitempty"`
}

func decodeSet(key groupKey, rs *armdns.RecordSet, profiles map[string]*armtrafficmanager.Profile) ([]*v1alpha1.Endpoint, error) {
	props := rs.Properties
	var ttl v1alpha1.TTL
	if props.TTL != nil {
		ttl = v1alpha1.TTL(*props.TTL)
	}
	if props.TargetResource != nil && props.TargetResource.ID != nil {
		prof, ok := profiles[strings.ToLower(*props.TargetResource.ID)]
		if !ok || prof.Properties == nil || prof.Properties.TrafficRoutingMethod == nil {
			return nil, providers.Errorf(providers.Transient, "azure: record set %s aliases a Traffic Manager profile that does not exist (yet or any more)", key)
		}
		return decodeProfile(key, ttl, prof), nil
	}
	if key.recordType == v1alpha1.RecordTypeTXT && props.Metadata[setsMetadataKey] != nil {
		var sets []txtSet
		if err := json.Unmarshal([]byte(*props.Metadata[setsMetadataKey]), &sets); err != nil {
			return nil, providers.Errorf(providers.Permanent, "azure: record set %s has metadata %s that is not a list of sets", key, setsMetadataKey)
		}
		var eps []*v1alpha1.Endpoint
		for _, s := range sets {
			ep := v1alpha1.NewEndpoint(key.name, key.recordType, ttl, s.Targets...).WithSetIdentifier(s.SetIdentifier)
			ep.ProviderSpecific = s.ProviderSpecific
			eps = append(eps, ep)
		}
		return eps, nil
	}
	var targets []string
	switch key.recordType {
	case v1alpha1.RecordTypeA:
		for _, r := range props.ARecords {
			targets = append(targets, deref(r.IPv4Address))
		}
	case v1alpha1.RecordTypeAAAA:
		for _, r := range props.AaaaRecords {
			targets = append(targets, deref(r.IPv6Address))
		}
	case v1alpha1.RecordTypeCNAME:
		if props.CnameRecord != nil {
			targets = append(targets, deref(props.CnameRecord.Cname))
		}
	case v1alpha1.RecordTypeNS:
		for _, r := range props.NsRecords {
			targets = append(targets, deref(r.Nsdname))
		}
	case v1alpha1.RecordTypeTXT:
		for _, r := range props.TxtRecords {
			var b strings.Builder
			for _, chunk := range r.Value {
				b.WriteString(deref(chunk))
			}
			targets = append(targets, b.String())
		}
	}
	if len(targets) == 0 {
		return nil, nil
	}
	return []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(key.name, key.recordType, ttl, targets...)}, nil
}

func decodeProfile(key groupKey, ttl v1alpha1.TTL, prof *armtrafficmanager.Profile) []*v1alpha1.Endpoint {
	var eps []*v1alpha1.Endpoint
	for _, e := range prof.Properties.Endpoints {
		if e == nil || e.Name == nil || e.Properties == nil || e.Properties.Target == nil {
			continue
		}
		ep := v1alpha1.NewEndpoint(key.name, key.recordType, ttl, *e.Properties.Target).WithSetIdentifier(*e.Name)
		switch *prof.Properties.TrafficRoutingMethod {
		case armtrafficmanager.TrafficRoutingMethodGeographic:
			if len(e.Properties.GeoMapping) == 0 {
				continue
			}
			code := deref(e.Properties.GeoMapping[0])
			if code == worldGeo {
				code = v1alpha1.WildcardGeo
			}
			ep.SetProviderSpecific(v1alpha1.ProviderSpecificGeoCode, code)
		default:
			weight := "0"
			if e.Properties.EndpointStatus == nil || *e.Properties.EndpointStatus != armtrafficmanager.EndpointStatusDisabled {
				weight = strconv.FormatInt(deref(e.Properties.Weight), 10)
			}
			ep.SetProviderSpecific(v1alpha1.ProviderSpecificWeight, weight)
		}
		eps = append(eps, ep)
	}
	return eps
}

// groupEndpoints groups record sets by Azure record set (name and type).
func groupEndpoints(eps []*v1alpha1.Endpoint) map[groupKey][]*v1alpha1.Endpoint {
	groups := map[groupKey][]*v1alpha1.Endpoint{}
	for _, ep := range eps {
		key := groupKey{v1alpha1.NormalizeName(ep.DNSName), ep.RecordType}
		groups[key] = append(groups[key], ep)
	}
	return groups
}

// sameGroup reports whether two groups hold the same sets with the same values.
func sameGroup(a, b []*v1alpha1.Endpoint) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.ContainsFunc(b, func(y *v1alpha1.Endpoint) bool { return x.Key() == y.Key() && x.SameValues(y) }) {
			return false
		}
	}
	return true
}

// encoded is what one group becomes in Azure: a record set and, for routed sets, the profile the
// record set aliases.
type encoded struct {
	set     armdns.RecordSet
	profile *armtrafficmanager.Profile
}

func encodeGroup(key groupKey, eps []*v1alpha1.Endpoint) (encoded, error) {
	ttl := int64(eps[0].RecordTTL)
	routed := false
	for _, ep := range eps {
		if int64(ep.RecordTTL) != ttl {
			return encoded{}, providers.Errorf(providers.Permanent, "azure: the sets of %s have different TTLs; one Azure record set has one TTL", key)
		}
		routed = routed || ep.SetIdentifier != ""
	}
	if routed && slices.ContainsFunc(eps, func(ep *v1alpha1.Endpoint) bool { return ep.SetIdentifier == "" }) {
		return encoded{}, providers.Errorf(providers.Permanent, "azure: %s holds a set without a set identifier beside sets with one", key)
	}
	rs := armdns.RecordSet{Properties: &armdns.RecordSetProperties{TTL: &ttl}}
	if !routed {
		return encoded{set: rs}, fillRecords(key, rs.Properties, eps[0].Targets)
	}
	if key.recordType == v1alpha1.RecordTypeTXT {
		var values []string
		sets := make([]txtSet, 0, len(eps))
		for _, ep := range eps {
			sets = append(sets, txtSet{SetIdentifier: ep.SetIdentifier, Targets: ep.Targets, ProviderSpecific: ep.ProviderSpecific})
			for _, t := range ep.Targets {
				if !slices.Contains(values, t) {
					values = append(values, t)
				}
			}
		}
		slices.SortFunc(sets, func(a, b txtSet) int { return strings.Compare(a.SetIdentifier, b.SetIdentifier) })
		raw, err := json.Marshal(sets)
		if err != nil {
			return encoded{}, providers.NewError(providers.Permanent, err)
		}
		rs.Properties.Metadata = map[string]*string{setsMetadataKey: ptr(string(raw))}
		return encoded{set: rs}, fillRecords(key, rs.Properties, values)
	}
	return encodeProfile(key, ttl, eps, rs)
}

func encodeProfile(key groupKey, ttl int64, eps []*v1alpha1.Endpoint, rs armdns.RecordSet) (encoded, error) {
	_, geoRouted := eps[0].GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
	method := armtrafficmanager.TrafficRoutingMethodWeighted
	if geoRouted {
		method = armtrafficmanager.TrafficRoutingMethodGeographic
	}
	var endpoints []*armtrafficmanager.Endpoint
	for _, ep := range eps {
		if err := checkRoutedSet(ep); err != nil {
			return encoded{}, err
		}
		code, isGeo := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
		if isGeo != geoRouted {
			return encoded{}, providers.Errorf(providers.Permanent, "azure: %s mixes weighted and geo sets; a Traffic Manager profile routes by one method", key)
		}
		props := &armtrafficmanager.EndpointProperties{
			Target: ptr(ep.Targets[0]),
			// Health is the controller's own probes' business, not Traffic Manager's.
			AlwaysServe:    ptr(armtrafficmanager.AlwaysServeEnabled),
			EndpointStatus: ptr(armtrafficmanager.EndpointStatusEnabled),
		}
		if isGeo {
			if code == v1alpha1.WildcardGeo {
				code = worldGeo
			}
			props.GeoMapping = []*string{ptr(code)}
		} else {
			weight, _ := ep.GetProviderSpecific(v1alpha1.ProviderSpecificWeight)
			w, _ := strconv.ParseInt(weight, 10, 64)
			if w == 0 {
				// Traffic Manager's weights start at 1; a disabled endpoint takes no traffic.
				w, props.EndpointStatus = 1, ptr(armtrafficmanager.EndpointStatusDisabled)
			}
			props.Weight = &w
		}
		endpoints = append(endpoints, &armtrafficmanager.Endpoint{Name: ptr(ep.SetIdentifier), Type: ptr(endpointType), Properties: props})
	}
	profile := &armtrafficmanager.Profile{
		Location: ptr("global"),
		Properties: &armtrafficmanager.ProfileProperties{
			TrafficRoutingMethod: &method,
			DNSConfig:            &armtrafficmanager.DNSConfig{TTL: &ttl},
			MonitorConfig: &armtrafficmanager.MonitorConfig{
				Protocol: ptr(armtrafficmanager.MonitorProtocolHTTPS), Port: ptr[int64](443), Path: ptr("/"),
			},
			Endpoints: endpoints,
		},
	}
	return encoded{set: rs, profile: profile}, nil
}

func fillRecords(key groupKey, props *armdns.RecordSetProperties, targets []string) error {
	if len(targets) > recordsPerSet {
		return providers.Errorf(providers.Permanent, "azure: %s has %d values; an Azure record set holds at most %d", key, len(targets), recordsPerSet)
	}
	for _, t := range targets {
		switch key.recordType {
		case v1alpha1.RecordTypeA:
			props.ARecords = append(props.ARecords, &armdns.ARecord{IPv4Address: ptr(t)})
		case v1alpha1.RecordTypeAAAA:
			props.AaaaRecords = append(props.AaaaRecords, &armdns.AaaaRecord{IPv6Address: ptr(t)})
		case v1alpha1.RecordTypeCNAME:
			if len(targets) != 1 {
				return providers.Errorf(providers.Permanent, "azure: CNAME %s has %d targets; a CNAME has one", key.name, len(targets))
			}
			props.CnameRecord = &armdns.CnameRecord{Cname: ptr(t)}
		case v1alpha1.RecordTypeNS:
			props.NsRecords = append(props.NsRecords, &armdns.NsRecord{Nsdname: ptr(t)})
		case v1alpha1.RecordTypeTXT:
			var chunks []*string
			for len(t) > txtChunk {
				chunks = append(chunks, ptr(t[:txtChunk]))
				t = t[txtChunk:]
			}
			props.TxtRecords = append(props.TxtRecords, &armdns.TxtRecord{Value: append(chunks, ptr(t))})
		}
	}
	return nil
}

// checkRoutedSet checks what a Traffic Manager endpoint can hold.
func checkRoutedSet(ep *v1alpha1.Endpoint) error {
	if len(ep.Targets) != 1 {
		return providers.Errorf(providers.Permanent, "azure: %s: a Traffic Manager endpoint has one target", ep)
	}
	if !validEndpointName(ep.SetIdentifier) {
		return providers.Errorf(providers.Permanent, "azure: %s: set identifier is not a valid Traffic Manager endpoint name", ep)
	}
	_, weighted := ep.GetProviderSpecific(v1alpha1.ProviderSpecificWeight)
	_, geoRouted := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
	if weighted == geoRouted {
		return providers.Errorf(providers.Permanent, "azure: %s: a set with a set identifier needs exactly one of weight and geo-code", ep)
	}
	return nil
}

// validEndpointName is Azure Resource Manager's rule for names: 1-260 characters, none of
// <>*%&:\?/+# or control characters, not ending in a period or a space.
func validEndpointName(name string) bool {
	if name == "" || len(name) > 260 || strings.HasSuffix(name, ".") || strings.HasSuffix(name, " ") {
		return false
	}
	for _, r := range name {
		if r < 0x20 || strings.ContainsRune(`<>*%&:\?/+#`, r) {
			return false
		}
	}
	return true
}

// AdjustEndpoints implements providers.Provider: names lower case without the final dot, only the
// routing properties Azure keeps (weight, geo-code), weights as plain integers, WORLD read as `*`.
// It refuses what Azure cannot hold: other record types, a geo code Traffic Manager does not know,
// a weight above 1000, a routed A/AAAA/CNAME set that is not one target with one routing property,
// more than 20 values in a set.
func (p *Provider) AdjustEndpoints(endpoints []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error) {
	out := make([]*v1alpha1.Endpoint, 0, len(endpoints))
	for _, in := range endpoints {
		ep := in.DeepCopy()
		ep.DNSName = v1alpha1.NormalizeName(ep.DNSName)
		if !supportedType(ep.RecordType) {
			return nil, providers.Errorf(providers.Permanent, "azure: %s: record type %s is not supported (A, AAAA, CNAME, NS, TXT)", ep, ep.RecordType)
		}
		if len(ep.Targets) > recordsPerSet {
			return nil, providers.Errorf(providers.Permanent, "azure: %s has %d values; an Azure record set holds at most %d", ep, len(ep.Targets), recordsPerSet)
		}
		var kept v1alpha1.ProviderSpecific
		for _, prop := range ep.ProviderSpecific {
			switch prop.Name {
			case v1alpha1.ProviderSpecificWeight:
				if err := geo.ValidateWeight(prop.Value); err != nil {
					return nil, providers.Errorf(providers.Permanent, "%v", err)
				}
				w, _ := strconv.ParseInt(prop.Value, 10, 64)
				if w > maxWeight {
					return nil, providers.Errorf(providers.Permanent, "azure: %s: weight %d is above Traffic Manager's maximum of %d", ep, w, maxWeight)
				}
				kept = append(kept, v1alpha1.ProviderSpecificProperty{Name: prop.Name, Value: strconv.FormatInt(w, 10)})
			case v1alpha1.ProviderSpecificGeoCode:
				code, err := trafficManagerGeo(prop.Value)
				if err != nil {
					return nil, err
				}
				kept = append(kept, v1alpha1.ProviderSpecificProperty{Name: prop.Name, Value: code})
			}
		}
		ep.ProviderSpecific = kept
		if ep.SetIdentifier != "" && ep.RecordType == v1alpha1.RecordTypeNS {
			// Traffic Manager routes names to endpoints; a delegation is one NS set.
			return nil, providers.Errorf(providers.Permanent, "azure: %s: an NS set cannot be weighted or geo routed", ep)
		}
		if ep.SetIdentifier != "" && ep.RecordType != v1alpha1.RecordTypeTXT {
			if err := checkRoutedSet(ep); err != nil {
				return nil, err
			}
		}
		out = append(out, ep)
	}
	return out, nil
}

// trafficManagerGeo maps a geo code to what Traffic Manager's geographic routing takes and reads
// back: `*` (WORLD), a region GEO-xx, or an ISO 3166-1 alpha-2 country.
func trafficManagerGeo(code string) (string, error) {
	switch {
	case code == v1alpha1.WildcardGeo || code == worldGeo:
		return v1alpha1.WildcardGeo, nil
	case slices.Contains(regions, code) || geo.IsCountry(code):
		return code, nil
	case code == "GEO-OC":
		return "", providers.Errorf(providers.Permanent, "%v %s: Traffic Manager calls Oceania GEO-AP (Australia/Pacific)", geo.ErrContinentCode, code)
	case strings.HasPrefix(code, geo.ContinentPrefix):
		return "", providers.Errorf(providers.Permanent, "%v %s: Traffic Manager's regions are %s", geo.ErrContinentCode, code, strings.Join(regions, ", "))
	default:
		return "", providers.Errorf(providers.Permanent, "%v", geo.ErrGeoCode)
	}
}

func shortHash(s string, n int) string { return hash.Base36(s, n) }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
