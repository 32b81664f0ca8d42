package clouddns

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	dns "google.golang.org/api/dns/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/geo"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// companionPrefix starts the name of the TXT record sets that hold set identifiers.
const companionPrefix = "_dnspolicy-sets-"

// region matches Google Cloud region names (europe-west1, us-central1, northamerica-south1, ...).
var region = regexp.MustCompile(`^(africa|asia|australia|europe|me|northamerica|southamerica|us)-[a-z]+[0-9]+$`)

// batchBytes estimates the rrdata bytes of the Change a batch becomes.
func batchBytes(c *providers.Changes) int {
	n := 0
	for _, ep := range slices.Concat(c.Create, c.UpdateNew, c.UpdateOld, c.Delete, c.Require, c.Require) {
		if ep == nil {
			continue
		}
		for _, d := range rrdatas(ep.RecordType, ep.Targets) {
			n += len(d)
		}
		if ep.SetIdentifier != "" {
			n += len(strconv.Quote("000=" + ep.SetIdentifier)) // its item in the companion
		}
	}
	return n
}

// changeBytes is the rrdata size of a Change as Cloud DNS counts it against its quota.
func changeBytes(c *dns.Change) int {
	n := 0
	for _, rs := range slices.Concat(c.Additions, c.Deletions) {
		for _, l := range rrdataLists(rs) {
			for _, d := range l {
				n += len(d)
			}
		}
	}
	return n
}

// rrdataLists are a set's rrdatas and those of each routing item.
func rrdataLists(rs *dns.ResourceRecordSet) [][]string {
	lists := [][]string{rs.Rrdatas}
	if rp := rs.RoutingPolicy; rp != nil {
		if rp.Wrr != nil {
			for _, it := range rp.Wrr.Items {
				lists = append(lists, it.Rrdatas)
			}
		}
		if rp.Geo != nil {
			for _, it := range rp.Geo.Items {
				lists = append(lists, it.Rrdatas)
			}
		}
	}
	return lists
}

// buildChange folds the affected names and types of next into record sets and returns the Change
// that replaces their current versions, and what each affected set should hold afterwards (nil: none).
func buildChange(zone providers.Zone, view map[setKey]*dns.ResourceRecordSet, next []*v1alpha1.Endpoint, changes *providers.Changes) (*dns.Change, map[setKey]*dns.ResourceRecordSet, error) {
	affected := map[setKey]bool{}
	for _, list := range [][]*v1alpha1.Endpoint{changes.Create, changes.UpdateNew, changes.Delete} {
		for _, ep := range list {
			affected[setKey{v1alpha1.NormalizeName(ep.DNSName), ep.RecordType}] = true
		}
	}
	// A required set is deleted and added back unchanged: the deletion fails with 412 unless the
	// set is exactly as required, which is Cloud DNS's only precondition.
	required := map[setKey]bool{}
	for _, ep := range changes.Require {
		k := setKey{v1alpha1.NormalizeName(ep.DNSName), ep.RecordType}
		required[k], affected[k] = true, true
	}
	byKey := map[setKey][]*v1alpha1.Endpoint{}
	for _, ep := range next {
		k := setKey{v1alpha1.NormalizeName(ep.DNSName), ep.RecordType}
		if affected[k] {
			byKey[k] = append(byKey[k], ep)
		}
	}
	keys := make([]setKey, 0, len(affected))
	for k := range affected {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].name < keys[j].name || (keys[i].name == keys[j].name && keys[i].typ < keys[j].typ)
	})
	change := &dns.Change{}
	want := map[setKey]*dns.ResourceRecordSet{}
	replace := func(k setKey, rs *dns.ResourceRecordSet) {
		old := view[k]
		want[k] = rs
		if old != nil && rs != nil && canonical(old) == canonical(rs) && !required[k] {
			return
		}
		if old != nil {
			change.Deletions = append(change.Deletions, old)
		}
		if rs != nil {
			change.Additions = append(change.Additions, rs)
		}
	}
	for _, k := range keys {
		set, companion, err := fold(zone, k, byKey[k])
		if err != nil {
			return nil, nil, err
		}
		replace(k, set)
		replace(companionKey(zone, k), companion)
	}
	return change, want, nil
}

// fold turns the endpoints of one name and type into one record set and, for a routing policy, the
// companion TXT set that names its items.
func fold(zone providers.Zone, k setKey, eps []*v1alpha1.Endpoint) (*dns.ResourceRecordSet, *dns.ResourceRecordSet, error) {
	if len(eps) == 0 {
		return nil, nil, nil
	}
	sort.Slice(eps, func(i, j int) bool { return eps[i].SetIdentifier < eps[j].SetIdentifier })
	set := &dns.ResourceRecordSet{Name: k.name + ".", Type: k.typ, Ttl: int64(eps[0].RecordTTL)}
	_, weighted := eps[0].GetProviderSpecific(v1alpha1.ProviderSpecificWeight)
	_, located := eps[0].GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
	if !weighted && !located {
		if len(eps) > 1 || eps[0].SetIdentifier != "" {
			return nil, nil, providers.Errorf(providers.Permanent, "%s %s: set identifiers need a weight or a geo-code in Cloud DNS", k.name, k.typ)
		}
		set.Rrdatas = rrdatas(k.typ, eps[0].Targets)
		return set, nil, nil
	}
	policy := &dns.RRSetRoutingPolicy{}
	if weighted {
		policy.Wrr = &dns.RRSetRoutingPolicyWrrPolicy{}
	} else {
		policy.Geo = &dns.RRSetRoutingPolicyGeoPolicy{}
	}
	ids := make([]string, 0, len(eps))
	for i, ep := range eps {
		if int64(ep.RecordTTL) != set.Ttl {
			return nil, nil, providers.Errorf(providers.Permanent, "%s %s: sets with TTLs %d and %d; Cloud DNS holds one TTL per name and type",
				k.name, k.typ, set.Ttl, ep.RecordTTL)
		}
		weight, isWeighted := ep.GetProviderSpecific(v1alpha1.ProviderSpecificWeight)
		location, isGeo := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
		switch {
		case weighted && isWeighted && !isGeo:
			w, err := strconv.ParseFloat(weight, 64)
			if err != nil || w < 0 {
				return nil, nil, providers.Errorf(providers.Permanent, "%s: %v", ep, geo.ErrWeight)
			}
			policy.Wrr.Items = append(policy.Wrr.Items, &dns.RRSetRoutingPolicyWrrPolicyWrrPolicyItem{Weight: w, Rrdatas: rrdatas(k.typ, ep.Targets)})
		case located && isGeo && !isWeighted:
			policy.Geo.Items = append(policy.Geo.Items, &dns.RRSetRoutingPolicyGeoPolicyGeoPolicyItem{Location: location, Rrdatas: rrdatas(k.typ, ep.Targets)})
		default:
			return nil, nil, providers.Errorf(providers.Permanent, "%s %s: Cloud DNS holds one routing policy per name and type, "+
				"so its sets must all be weighted or all be geo", k.name, k.typ)
		}
		ids = append(ids, strconv.Quote(strconv.Itoa(i)+"="+ep.SetIdentifier))
	}
	set.RoutingPolicy = policy
	companion := &dns.ResourceRecordSet{Name: companionKey(zone, k).name + ".", Type: v1alpha1.RecordTypeTXT, Ttl: defaultTTL, Rrdatas: ids}
	return set, companion, nil
}

// unfoldAffected unfolds the record sets at the names a batch touches, with their companions: all a
// batch is checked against, without unfolding the whole zone for every batch.
func unfoldAffected(view map[setKey]*dns.ResourceRecordSet, changes *providers.Changes) []*v1alpha1.Endpoint {
	names := map[string]bool{}
	for _, ep := range slices.Concat(changes.Create, changes.UpdateOld, changes.UpdateNew, changes.Delete, changes.Require) {
		if ep != nil {
			names[v1alpha1.NormalizeName(ep.DNSName)] = true
		}
	}
	part := map[setKey]*dns.ResourceRecordSet{}
	for k, rs := range view {
		if names[k.name] || strings.HasPrefix(k.name, companionPrefix) {
			part[k] = rs
		}
	}
	return unfold(part)
}

// unfold turns record sets back into endpoints, one per routing item, hiding SOA and companions.
func unfold(view map[setKey]*dns.ResourceRecordSet) []*v1alpha1.Endpoint {
	// Companions by their first label, which names the set they belong to (companionKey).
	companions := map[string]*dns.ResourceRecordSet{}
	for k, rs := range view {
		if k.typ == v1alpha1.RecordTypeTXT && strings.HasPrefix(k.name, companionPrefix) {
			label, _, _ := strings.Cut(k.name, ".")
			companions[label] = rs
		}
	}
	var eps []*v1alpha1.Endpoint
	for k, rs := range view {
		if k.typ == "SOA" || strings.HasPrefix(k.name, companionPrefix) {
			continue
		}
		ttl := v1alpha1.TTL(rs.Ttl)
		if rs.RoutingPolicy == nil {
			eps = append(eps, v1alpha1.NewEndpoint(k.name, k.typ, ttl, targets(k.typ, rs.Rrdatas)...))
			continue
		}
		ids := companionIDs(companions[companionLabel(k)])
		id := func(i int, fallback string) string {
			if v, ok := ids[i]; ok {
				return v
			}
			return fallback
		}
		if wrr := rs.RoutingPolicy.Wrr; wrr != nil {
			for i, item := range wrr.Items {
				t := targets(k.typ, item.Rrdatas)
				eps = append(eps, v1alpha1.NewEndpoint(k.name, k.typ, ttl, t...).
					WithSetIdentifier(id(i, first(t))).
					WithProviderSpecific(v1alpha1.ProviderSpecificWeight, strconv.FormatFloat(item.Weight, 'f', -1, 64)))
			}
		}
		if g := rs.RoutingPolicy.Geo; g != nil {
			for i, item := range g.Items {
				eps = append(eps, v1alpha1.NewEndpoint(k.name, k.typ, ttl, targets(k.typ, item.Rrdatas)...).
					WithSetIdentifier(id(i, item.Location)).
					WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, item.Location))
			}
		}
	}
	return eps
}

// companionIDs reads the set identifiers of a folded set's items, by item index, from its
// companion (nil when it has none).
func companionIDs(companion *dns.ResourceRecordSet) map[int]string {
	ids := map[int]string{}
	if companion == nil {
		return ids
	}
	for _, d := range companion.Rrdatas {
		s, err := strconv.Unquote(d)
		if err != nil {
			continue
		}
		i, id, ok := strings.Cut(s, "=")
		n, err := strconv.Atoi(i)
		if ok && err == nil {
			ids[n] = id
		}
	}
	return ids
}

// companionLabel is the first label of the name of k's companion.
func companionLabel(k setKey) string {
	return companionPrefix + strings.ToLower(k.typ) + "-" + hash.Base36(k.name, 12)
}

// companionKey is the name and type of k's companion in zone.
func companionKey(zone providers.Zone, k setKey) setKey {
	return setKey{companionLabel(k) + "." + zone.DNSName, v1alpha1.RecordTypeTXT}
}

// AdjustEndpoints implements providers.Provider. Names are lower-cased and name targets lose their
// trailing dot, as Cloud DNS returns them; a value given twice is kept once; TTL 0 becomes 300; weights become whole numbers; geo codes
// must be Google Cloud regions. The "*" (default) geo set is dropped, as Kuadrant does: Cloud DNS
// answers a client whose region has no item from the nearest region listed, and has no catch-all.
func (p *Provider) AdjustEndpoints(endpoints []*v1alpha1.Endpoint) ([]*v1alpha1.Endpoint, error) {
	out := make([]*v1alpha1.Endpoint, 0, len(endpoints))
	for _, in := range endpoints {
		ep := in.DeepCopy()
		ep.DNSName = v1alpha1.NormalizeName(ep.DNSName)
		if ep.RecordTTL == 0 {
			ep.RecordTTL = defaultTTL
		}
		if nameTyped(ep.RecordType) {
			for i, t := range ep.Targets {
				ep.Targets[i] = v1alpha1.NormalizeName(t)
			}
		}
		// A record set is a set: a value given twice is one rrdata, which Cloud DNS holds once.
		ep.Targets = uniqueTargets(ep.Targets)
		if len(ep.Targets) > maxRrdatasPerSet {
			return nil, providers.Errorf(providers.Permanent, "%s has %d targets; Cloud DNS holds at most %d per record set",
				ep.DNSName, len(ep.Targets), maxRrdatasPerSet)
		}
		weight, weighted := ep.GetProviderSpecific(v1alpha1.ProviderSpecificWeight)
		code, located := ep.GetProviderSpecific(v1alpha1.ProviderSpecificGeoCode)
		switch {
		case weighted && located:
			return nil, providers.Errorf(providers.Permanent, "%s has both a weight and a geo-code; Cloud DNS routes a set by one of them", ep)
		case weighted:
			if err := geo.ValidateWeight(weight); err != nil {
				return nil, providers.NewError(providers.Permanent, err)
			}
			w, _ := strconv.Atoi(weight)
			ep.SetProviderSpecific(v1alpha1.ProviderSpecificWeight, strconv.Itoa(w))
		case located && code == v1alpha1.WildcardGeo:
			continue
		case located:
			if !region.MatchString(code) {
				return nil, providers.Errorf(providers.Permanent, "geo code %q of %s cannot be expressed in Google Cloud DNS: "+
					"use a Google Cloud region name such as europe-west1 or us-east1", code, ep.DNSName)
			}
		case ep.SetIdentifier != "":
			return nil, providers.Errorf(providers.Permanent, "%s has a set identifier but no weight or geo-code, which Cloud DNS cannot hold", ep)
		}
		if (weighted || located) && ep.RecordType == v1alpha1.RecordTypeNS {
			return nil, providers.Errorf(providers.Permanent, "%s: Cloud DNS has no routing policies for NS record sets", ep)
		}
		out = append(out, ep)
	}
	return out, nil
}

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

// keyOf is the name and type a record set is held by: Cloud DNS has one set per pair.
func keyOf(rs *dns.ResourceRecordSet) setKey {
	return setKey{v1alpha1.NormalizeName(rs.Name), rs.Type}
}

// canonical is a record set's value as Cloud DNS compares it for a deletion: without the "kind"
// fields the API adds to what it returns.
func canonical(rs *dns.ResourceRecordSet) string {
	c := *rs
	c.Kind = ""
	c.Name = v1alpha1.NormalizeName(c.Name)
	if rp := c.RoutingPolicy; rp != nil {
		p := &dns.RRSetRoutingPolicy{}
		if rp.Wrr != nil {
			p.Wrr = &dns.RRSetRoutingPolicyWrrPolicy{}
			for _, it := range rp.Wrr.Items {
				p.Wrr.Items = append(p.Wrr.Items, &dns.RRSetRoutingPolicyWrrPolicyWrrPolicyItem{Weight: it.Weight, Rrdatas: it.Rrdatas})
			}
		}
		if rp.Geo != nil {
			p.Geo = &dns.RRSetRoutingPolicyGeoPolicy{}
			for _, it := range rp.Geo.Items {
				p.Geo.Items = append(p.Geo.Items, &dns.RRSetRoutingPolicyGeoPolicyGeoPolicyItem{Location: it.Location, Rrdatas: it.Rrdatas})
			}
		}
		c.RoutingPolicy = p
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// nameTyped reports whether a type's values are names, which Cloud DNS writes fully qualified and
// endpoints hold without the final dot.
func nameTyped(recordType string) bool {
	switch recordType {
	case v1alpha1.RecordTypeCNAME, v1alpha1.RecordTypeNS, "PTR":
		return true
	}
	return false
}

// rrdatas are endpoint targets as Cloud DNS holds them.
func rrdatas(recordType string, targets []string) []string {
	out := slices.Clone(targets)
	if nameTyped(recordType) {
		for i, t := range out {
			out[i] = v1alpha1.NormalizeName(t) + "."
		}
	}
	return out
}

// targets are Cloud DNS rrdatas as endpoint targets.
func targets(recordType string, rrdatas []string) []string {
	out := slices.Clone(rrdatas)
	if nameTyped(recordType) {
		for i, t := range out {
			out[i] = v1alpha1.NormalizeName(t)
		}
	}
	return out
}

// first is the first value, or "": the identifier of a WRR item written without a companion.
func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
