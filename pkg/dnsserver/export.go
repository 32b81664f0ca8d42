package dnsserver

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// An export is what one cluster publishes in a zone, offered to the embedded servers of the other
// clusters serving the same zone (package peers pulls and merges them). It is served as a zone of
// its own, ExportName(zone), that answers zone transfers only: every other query is REFUSED, so
// resolvers never see it. It carries each endpoint as it is, set identifier and routing properties
// included, which the zone's own transfer cannot (a secondary cannot route, so that transfer is a
// static view).
//
// Every record of an export is a TXT at the export's apex (TTL 0): a header,
//
//	"dnspolicy-export=1" "cluster=<lease key>" "changed=<unix seconds>"
//
// then one per endpoint,
//
//	"ep" "name=<dnsName>" "type=<type>" "set=<setIdentifier>" "ttl=<ttl>" "ps=<name>=<value>"... "t=<target>"...
//
// Values are percent-encoded (so a TXT string holds no quote or backslash), and a field longer than
// one TXT string goes on in strings that start with "+". An export holds nothing a resolver could not
// learn from the zone: the records, their ownership TXTs, the lease, and the routing properties that
// the answers to clients of different subnets reveal.

// ExportLabel is the first label of every export's name.
const ExportLabel = "_dnspolicy-export"

// ExportVersion is the version of the export format.
const ExportVersion = "1"

// ExportName is the name of zone's export.
func ExportName(zone string) string {
	return ExportLabel + "." + strings.TrimSuffix(v1alpha1.NormalizeName(zone), ".") + "."
}

// Export is one cluster's contribution to a zone.
type Export struct {
	// Cluster names the cluster (its lease key, lease.Key of its cluster ID).
	Cluster string
	// Changed is when the cluster's content last changed, by its clock; merged zones take their
	// serial from the latest Changed of their exports, so servers fed the same exports agree.
	Changed time.Time
	// Endpoints are the cluster's records, ownership TXTs and lease.
	Endpoints []*v1alpha1.Endpoint
}

// ExportAccess says who may pull a zone's export: peers signing with one of Keys (names of
// Options.TSIGKeys), or, unsigned, from a source address in Prefixes.
type ExportAccess struct {
	Keys     []string
	Prefixes []netip.Prefix
}

// maxTXTString is the longest string a TXT record can hold.
const maxTXTString = 255

// EncodeExport returns the records of an export whose apex is origin (ExportName), without the SOA.
func EncodeExport(origin string, ex Export) []dns.RR {
	rrs := make([]dns.RR, 0, len(ex.Endpoints)+1)
	txt := func(fields ...string) {
		rrs = append(rrs, &dns.TXT{Hdr: header(origin, dns.TypeTXT, 0), Txt: fields})
	}
	txt("dnspolicy-export="+ExportVersion, "cluster="+url.QueryEscape(ex.Cluster), "changed="+strconv.FormatInt(ex.Changed.Unix(), 10))
	for _, ep := range ex.Endpoints {
		if ep == nil {
			continue
		}
		fields := []string{"ep"}
		add := func(key, value string) {
			s := key + "=" + url.QueryEscape(value)
			for len(s) > maxTXTString {
				fields = append(fields, s[:maxTXTString])
				s = "+" + s[maxTXTString:]
			}
			fields = append(fields, s)
		}
		add("name", ep.DNSName)
		add("type", ep.RecordType)
		add("set", ep.SetIdentifier)
		add("ttl", strconv.FormatInt(int64(ep.RecordTTL), 10))
		for _, ps := range ep.ProviderSpecific {
			add("ps", url.QueryEscape(ps.Name)+"="+url.QueryEscape(ps.Value))
		}
		for _, t := range ep.Targets {
			add("t", t)
		}
		txt(fields...)
	}
	return rrs
}

// ErrExport is wrapped by every error of DecodeExport: the transfer is not an export.
var ErrExport = errors.New("not a well-formed export")

// DecodeExport reads the records of a transfer of zone's export (SOA records are skipped). Every
// endpoint must be in zone.
func DecodeExport(zone string, rrs []dns.RR) (Export, error) {
	origin := ExportName(zone)
	zoneName := v1alpha1.NormalizeName(zone)
	var ex Export
	header := false
	for _, rr := range rrs {
		if rr.Header().Rrtype == dns.TypeSOA {
			continue
		}
		t, ok := rr.(*dns.TXT)
		if !ok || !strings.EqualFold(t.Hdr.Name, origin) {
			return Export{}, fmt.Errorf("%w: %s record at %s", ErrExport, dns.TypeToString[rr.Header().Rrtype], rr.Header().Name)
		}
		fields, err := joinFields(t.Txt)
		if err != nil {
			return Export{}, err
		}
		if len(fields) == 0 {
			return Export{}, fmt.Errorf("%w: an empty TXT", ErrExport)
		}
		if !header {
			if len(fields) != 3 || fields[0] != [2]string{"dnspolicy-export", ExportVersion} || fields[1][0] != "cluster" || fields[2][0] != "changed" {
				return Export{}, fmt.Errorf("%w: no export header of version %s", ErrExport, ExportVersion)
			}
			changed, err := strconv.ParseInt(fields[2][1], 10, 64)
			if err != nil || fields[1][1] == "" {
				return Export{}, fmt.Errorf("%w: a malformed header", ErrExport)
			}
			ex.Cluster, ex.Changed, header = fields[1][1], time.Unix(changed, 0), true
			continue
		}
		ep, err := decodeEndpoint(fields)
		if err != nil {
			return Export{}, err
		}
		name := v1alpha1.NormalizeName(ep.DNSName)
		if name != zoneName && !strings.HasSuffix(name, "."+zoneName) {
			return Export{}, fmt.Errorf("%w: %s is not in zone %s", ErrExport, ep.DNSName, zoneName)
		}
		ex.Endpoints = append(ex.Endpoints, ep)
	}
	if !header {
		return Export{}, fmt.Errorf("%w: no header", ErrExport)
	}
	return ex, nil
}

// joinFields turns a TXT's strings back into key/value fields, continuations joined and values
// unescaped; the marker "ep" is a field with an empty value.
func joinFields(txt []string) ([][2]string, error) {
	var raw []string
	for _, s := range txt {
		if rest, ok := strings.CutPrefix(s, "+"); ok {
			if len(raw) == 0 {
				return nil, fmt.Errorf("%w: a continuation with nothing to continue", ErrExport)
			}
			raw[len(raw)-1] += rest
			continue
		}
		raw = append(raw, s)
	}
	out := make([][2]string, len(raw))
	for i, s := range raw {
		key, value, found := strings.Cut(s, "=")
		if !found {
			if s != "ep" {
				return nil, fmt.Errorf("%w: field %.40q has no value", ErrExport, s)
			}
			out[i] = [2]string{s, ""}
			continue
		}
		v, err := url.QueryUnescape(value)
		if err != nil {
			return nil, fmt.Errorf("%w: field %s: %w", ErrExport, key, err)
		}
		out[i] = [2]string{key, v}
	}
	return out, nil
}

func decodeEndpoint(fields [][2]string) (*v1alpha1.Endpoint, error) {
	if fields[0][0] != "ep" {
		return nil, fmt.Errorf("%w: a record that is no endpoint (%.40q)", ErrExport, fields[0][0])
	}
	ep := &v1alpha1.Endpoint{}
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		key, value := f[0], f[1]
		if seen[key] && key != "ps" && key != "t" {
			return nil, fmt.Errorf("%w: field %s twice", ErrExport, key)
		}
		seen[key] = true
		switch key {
		case "name":
			ep.DNSName = value
		case "type":
			ep.RecordType = value
		case "set":
			ep.SetIdentifier = value
		case "ttl":
			ttl, err := strconv.ParseInt(value, 10, 64)
			if err != nil || ttl < 0 {
				return nil, fmt.Errorf("%w: TTL %.20q", ErrExport, value)
			}
			ep.RecordTTL = v1alpha1.TTL(ttl)
		case "ps":
			n, v, _ := strings.Cut(value, "=")
			name, err1 := url.QueryUnescape(n)
			val, err2 := url.QueryUnescape(v)
			if err1 != nil || err2 != nil || name == "" {
				return nil, fmt.Errorf("%w: property %.40q", ErrExport, value)
			}
			ep.ProviderSpecific = append(ep.ProviderSpecific, v1alpha1.ProviderSpecificProperty{Name: name, Value: val})
		case "t":
			ep.Targets = append(ep.Targets, value)
		default:
			return nil, fmt.Errorf("%w: unknown field %.20q", ErrExport, key)
		}
	}
	if ep.DNSName == "" || ep.RecordType == "" || len(ep.Targets) == 0 {
		return nil, fmt.Errorf("%w: an endpoint without name, type or targets", ErrExport)
	}
	return ep, nil
}

// buildExport makes the snapshot serving an export: its SOA and its records, for transfers only.
func buildExport(origin string, ex Export, nameservers []string, serial uint32) (*snapshot, error) {
	apex, err := wireName(origin)
	if err != nil {
		return nil, err
	}
	primary := "ns1." + strings.TrimPrefix(origin, ExportLabel+".")
	if len(nameservers) > 0 {
		primary = dns.Fqdn(nameservers[0])
	}
	soa := &dns.SOA{Hdr: header(origin, dns.TypeSOA, 0), Ns: primary, Mbox: "hostmaster." + origin,
		Serial: serial, Refresh: soaRefresh, Retry: soaRetry, Expire: soaExpire, Minttl: 0}
	snap := &snapshot{origin: origin, apex: apex, serial: serial, nodes: map[string]*node{}}
	if snap.soa, err = encodeSet(origin, []dns.RR{soa}); err != nil {
		return nil, fmt.Errorf("export %s: SOA: %w", origin, err)
	}
	records := EncodeExport(origin, ex)
	digest := sha256.New()
	for _, rr := range records {
		fmt.Fprintf(digest, "%q\n", rr.(*dns.TXT).Txt)
	}
	snap.soaRR, snap.export = soa, records
	copy(snap.digest[:], digest.Sum(nil))
	return snap, nil
}

// setExport serves, replaces or (ex nil) stops serving zone origin's export. Called with s.mu held.
func (s *Server) setExport(origin string, ex *Export, nameservers []string) error {
	exportOrigin := ExportName(origin)
	key, err := wireName(exportOrigin)
	if err != nil {
		return err
	}
	table := *s.zones.Load()
	entry := table[string(key)]
	if ex == nil {
		if entry != nil {
			s.removeEntry(string(key))
		}
		return nil
	}
	var prev *snapshot
	if entry != nil {
		prev = entry.snap.Load()
	}
	serial := uint32(s.now().Unix())
	if prev != nil && !serialNewer(serial, prev.serial) {
		serial = prev.serial + 1
	}
	snap, err := buildExport(exportOrigin, *ex, nameservers, serial)
	if err != nil {
		return err
	}
	if entry == nil {
		entry = &zoneEntry{export: true, wake: make(chan struct{}, 1), removed: make(chan struct{})}
		entry.snap.Store(snap)
		next := make(zoneTable, len(table)+1)
		for k, v := range table {
			next[k] = v
		}
		next[string(key)] = entry
		s.zones.Store(&next)
		return nil
	}
	if prev.digest != snap.digest {
		entry.snap.Store(snap)
	}
	return nil
}

// exportAllowed says whether a transfer of an export may go ahead: signed with one of its keys, or
// unsigned from one of its prefixes.
func (s *Server) exportAllowed(origin string, signer *tsigSigner, client netip.Addr) bool {
	if signer != nil {
		return s.transferAllowed(origin, signer.key.name)
	}
	for _, p := range s.exportPrefixes[origin] {
		if p.Contains(client.Unmap()) {
			return true
		}
	}
	return false
}
