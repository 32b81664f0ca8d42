package rfc2136

import (
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// defaultTTL is the TTL of a record set whose endpoint names none (a dynamic update must carry one).
const defaultTTL = 300

// serverKept are the types the server maintains itself: the zone's SOA (its serial moves with every
// update) and DNSSEC records of a zone it signs. They are not record sets anyone plans.
var serverKept = map[uint16]bool{
	dns.TypeSOA: true, dns.TypeRRSIG: true, dns.TypeNSEC: true, dns.TypeNSEC3: true,
	dns.TypeNSEC3PARAM: true, dns.TypeDNSKEY: true, dns.TypeCDS: true, dns.TypeCDNSKEY: true,
	// BIND's private type recording the state of on-line signing.
	65534: true,
}

// adjust returns an endpoint as the server will give it back: every value parsed as its type and
// rendered as a zone file renders it, so what is written compares equal with what is read.
func adjust(in *v1alpha1.Endpoint) (*v1alpha1.Endpoint, error) {
	ep := in.DeepCopy()
	ep.DNSName = v1alpha1.NormalizeName(ep.DNSName)
	ep.ProviderSpecific = nil
	if ep.RecordTTL <= 0 {
		ep.RecordTTL = defaultTTL
	}
	targets := make(v1alpha1.Targets, 0, len(ep.Targets))
	for _, t := range ep.Targets {
		if ep.RecordType == v1alpha1.RecordTypeTXT {
			t = quoteTXT(t)
		}
		rr, err := parseRR(ep.DNSName, ep.RecordType, ep.RecordTTL, t)
		if err != nil {
			return nil, fmt.Errorf("record %s %s: value %q is not a valid %s value", ep.DNSName, ep.RecordType, t, ep.RecordType)
		}
		if v := valueOf(rr); !slices.Contains(targets, v) {
			targets = append(targets, v)
		}
	}
	ep.Targets = targets
	if ep.RecordType == v1alpha1.RecordTypeCNAME && len(ep.Targets) > 1 {
		// A server keeps one CNAME per name (RFC 1034 section 3.6.2) and replaces it with the next.
		return nil, fmt.Errorf("record %s CNAME: a CNAME holds one target, not %d", ep.DNSName, len(ep.Targets))
	}
	return ep, nil
}

// parseRR parses one record from its zone-file form; names in the value are absolute.
func parseRR(name, recordType string, ttl v1alpha1.TTL, value string) (dns.RR, error) {
	if _, ok := dns.StringToType[recordType]; !ok {
		return nil, fmt.Errorf("unknown record type %s", recordType)
	}
	zp := dns.NewZoneParser(strings.NewReader(fmt.Sprintf("%s %d IN %s %s\n", dns.Fqdn(name), ttl, recordType, value)), ".", "")
	rr, ok := zp.Next()
	if err := zp.Err(); err != nil {
		return nil, err
	}
	if !ok || rr == nil {
		return nil, fmt.Errorf("no record")
	}
	if extra, more := zp.Next(); more || extra != nil {
		return nil, fmt.Errorf("more than one record")
	}
	return rr, nil
}

// valueOf is a record's value as an endpoint target: its zone-file form, with the trailing dot of
// a name (CNAME, NS, PTR, the exchange of MX, the target of SRV) dropped and names lower-cased,
// as every backend gives names.
func valueOf(rr dns.RR) string {
	v := strings.TrimPrefix(rr.String(), rr.Header().String())
	switch rr.Header().Rrtype {
	case dns.TypeCNAME, dns.TypeNS, dns.TypePTR, dns.TypeDNAME, dns.TypeMX, dns.TypeSRV:
		v = strings.ToLower(strings.TrimSuffix(v, "."))
	}
	return v
}

// quoteTXT returns a TXT value in zone-file form: one or more quoted strings. A value that already
// is one (Kuadrant's ownership records are written quoted) is kept as it is, so records written by
// Kuadrant's controllers and by ours compare equal; any other text is quoted, escaping quotes and
// backslashes, in strings of at most 255 bytes.
func quoteTXT(v string) string {
	if len(v) >= 2 && strings.HasPrefix(v, `"`) && strings.HasSuffix(v, `"`) {
		if _, err := parseRR("q.", v1alpha1.RecordTypeTXT, 1, v); err == nil {
			return v
		}
	}
	var parts []string
	for len(v) > 0 || len(parts) == 0 {
		n := min(len(v), 255)
		chunk := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v[:n])
		parts = append(parts, `"`+chunk+`"`)
		v = v[n:]
	}
	return strings.Join(parts, " ")
}

// endpointsOf folds a zone transfer into record sets, sorted; records the server keeps (SOA,
// DNSSEC) are left out.
func endpointsOf(rrs []dns.RR) []*v1alpha1.Endpoint {
	sets := map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}
	for _, rr := range rrs {
		h := rr.Header()
		if serverKept[h.Rrtype] || h.Class != dns.ClassINET {
			continue
		}
		name := v1alpha1.NormalizeName(h.Name)
		key := v1alpha1.EndpointKey{DNSName: name, RecordType: dns.TypeToString[h.Rrtype]}
		ep, ok := sets[key]
		if !ok {
			ep = v1alpha1.NewEndpoint(name, key.RecordType, v1alpha1.TTL(h.Ttl))
			sets[key] = ep
		}
		if v := valueOf(rr); !slices.Contains(ep.Targets, v) {
			ep.Targets = append(ep.Targets, v)
		}
	}
	eps := make([]*v1alpha1.Endpoint, 0, len(sets))
	for _, ep := range sets {
		eps = append(eps, ep)
	}
	v1alpha1.SortEndpoints(eps)
	return eps
}

// rrsOf returns the records of a set, fresh for each use: miekg/dns's update helpers rewrite the
// class and TTL of the records they are given.
func rrsOf(ep *v1alpha1.Endpoint) ([]dns.RR, error) {
	rrs := make([]dns.RR, 0, len(ep.Targets))
	for _, t := range ep.Targets {
		rr, err := parseRR(ep.DNSName, ep.RecordType, ep.RecordTTL, t)
		if err != nil {
			return nil, providers.Errorf(providers.Permanent, "record %s %s: value %q is not a valid %s value",
				v1alpha1.NormalizeName(ep.DNSName), ep.RecordType, t, ep.RecordType)
		}
		rrs = append(rrs, rr)
	}
	return rrs, nil
}

// updateMessage builds the UPDATE message of one batch: prerequisites stating what the batch
// assumes of the zone, then deletions, the old values of updates removed and their new ones
// added, and creations. The server checks every prerequisite before it changes anything.
func updateMessage(zone string, c *providers.Changes) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetUpdate(dns.Fqdn(zone))
	m.Compress = true
	// deleted: the names and types the batch removes, so a created set may replace them.
	deleted := map[v1alpha1.EndpointKey]bool{}
	// emptied: the names where the batch removes a set.
	emptied := map[string]bool{}
	for _, ep := range slices.Concat(c.Delete, c.UpdateOld) {
		deleted[ep.Key()] = true
		emptied[v1alpha1.NormalizeName(ep.DNSName)] = true
	}
	assume := func(eps []*v1alpha1.Endpoint) error {
		for _, ep := range eps {
			rrs, err := rrsOf(ep)
			if err != nil {
				return err
			}
			m.Used(rrs)
		}
		return nil
	}
	if err := assume(slices.Concat(c.Delete, c.UpdateOld, c.Require)); err != nil {
		return nil, err
	}
	for _, ep := range c.Create {
		set := &dns.ANY{Hdr: dns.RR_Header{Name: dns.Fqdn(v1alpha1.NormalizeName(ep.DNSName)), Rrtype: dns.StringToType[ep.RecordType]}}
		m.RRsetNotUsed([]dns.RR{set})
		cname := v1alpha1.EndpointKey{DNSName: v1alpha1.NormalizeName(ep.DNSName), RecordType: v1alpha1.RecordTypeCNAME}
		switch {
		case ep.RecordType != v1alpha1.RecordTypeCNAME && !deleted[cname]:
			// A server ignores, without an error, an addition beside a CNAME (RFC 2136 3.4.2.2).
			set.Hdr.Rrtype = dns.TypeCNAME
			m.RRsetNotUsed([]dns.RR{set})
		case ep.RecordType == v1alpha1.RecordTypeCNAME && !emptied[cname.DNSName]:
			// And a CNAME beside other data: the name must hold nothing. (Where the batch replaces
			// sets at the name, their prerequisites state the name's other sets.)
			m.NameNotUsed([]dns.RR{set})
		}
	}
	for _, ep := range slices.Concat(c.Delete, c.UpdateOld) {
		m.RemoveRRset([]dns.RR{&dns.ANY{Hdr: dns.RR_Header{Name: dns.Fqdn(v1alpha1.NormalizeName(ep.DNSName)), Rrtype: dns.StringToType[ep.RecordType]}}})
	}
	for _, ep := range slices.Concat(c.UpdateNew, c.Create) {
		rrs, err := rrsOf(ep)
		if err != nil {
			return nil, err
		}
		m.Insert(rrs)
	}
	return m, nil
}
