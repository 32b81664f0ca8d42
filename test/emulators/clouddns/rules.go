package clouddns

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"

	dns "google.golang.org/api/dns/v1"
)

// perChangeQuotas refuses a change over Cloud DNS's quotas: HTTP 403 quotaExceeded, one errors[]
// entry per quota broken (external-dns#1028 captured "The change would exceed quota for additions
// per change."; the other entries take the same form with the quota's name).
func perChangeQuotas(c *dns.Change) *apiError {
	var broken []string
	if len(c.Additions) > MaxAdditionsPerChange {
		broken = append(broken, "The change would exceed quota for additions per change.")
	}
	if len(c.Deletions) > MaxDeletionsPerChange {
		broken = append(broken, "The change would exceed quota for deletions per change.")
	}
	size, perSet := 0, false
	for _, rs := range slices.Concat(c.Additions, c.Deletions) {
		if rs == nil {
			continue
		}
		lists := [][]string{rs.Rrdatas}
		if rp := rs.RoutingPolicy; rp != nil && rp.Wrr != nil {
			for _, it := range rp.Wrr.Items {
				if it != nil {
					lists = append(lists, it.Rrdatas)
				}
			}
		}
		if rp := rs.RoutingPolicy; rp != nil && rp.Geo != nil {
			for _, it := range rp.Geo.Items {
				if it != nil {
					lists = append(lists, it.Rrdatas)
				}
			}
		}
		for _, l := range lists {
			perSet = perSet || len(l) > MaxRecordsPerRRSet
			for _, d := range l {
				size += len(d)
			}
		}
	}
	if perSet {
		broken = append(broken, "The change would exceed quota for resource records per rrset.")
	}
	if size > MaxRrdataBytesPerChange {
		broken = append(broken, "The change would exceed quota for total rrdata size per change.")
	}
	if len(broken) == 0 {
		return nil
	}
	return quotaExceeded(broken)
}

func quotaExceeded(broken []string) *apiError {
	e := apiErr(http.StatusForbidden, "quotaExceeded", broken[0])
	e.more = broken[1:]
	return e
}

var supportedTypes = []string{"A", "AAAA", "CAA", "CNAME", "MX", "NS", "PTR", "SRV", "TXT"}

func (z *zone) validate(field string, a *dns.ResourceRecordSet) *apiError {
	invalid := func(format string, args ...any) *apiError {
		return apiErr(http.StatusBadRequest, "invalid", fmt.Sprintf("Invalid value for '%s': ", field)+fmt.Sprintf(format, args...))
	}
	if a == nil {
		return apiErr(http.StatusBadRequest, "required", "Required field '"+field+"' not specified")
	}
	name := strings.ToLower(a.Name)
	if !strings.HasSuffix(name, ".") || (name != z.dnsName && !strings.HasSuffix(name, "."+z.dnsName)) {
		return invalid("name %q is not a fully qualified name in zone %s", a.Name, z.dnsName)
	}
	if !slices.Contains(supportedTypes, a.Type) {
		return invalid("record type %q is not supported", a.Type)
	}
	if a.Ttl < 0 || a.Ttl > 604800 {
		return invalid("ttl %d is out of range", a.Ttl)
	}
	if a.Type == "CNAME" && name == z.dnsName {
		return apiErr(http.StatusBadRequest, "cnameResourceRecordSetConflict", "A CNAME cannot be created at the zone apex.")
	}
	rp := a.RoutingPolicy
	if rp == nil {
		if len(a.Rrdatas) == 0 {
			return invalid("a record set needs rrdatas or a routing policy")
		}
		return validateRRDatas(invalid, a.Type, a.Rrdatas)
	}
	if len(a.Rrdatas) > 0 {
		return invalid("a record set cannot have both rrdatas and a routing policy")
	}
	if a.Type == "NS" {
		return invalid("routing policies are not supported for NS record sets")
	}
	switch {
	case rp.Wrr != nil && rp.Geo == nil && rp.PrimaryBackup == nil:
		if len(rp.Wrr.Items) == 0 {
			return invalid("a WRR routing policy needs at least one item")
		}
		for i, item := range rp.Wrr.Items {
			if item == nil || item.Weight < 0 {
				return invalid("WRR item %d needs a weight >= 0", i)
			}
			if e := validateRRDatas(invalid, a.Type, item.Rrdatas); e != nil {
				return e
			}
		}
	case rp.Geo != nil && rp.Wrr == nil && rp.PrimaryBackup == nil:
		if len(rp.Geo.Items) == 0 {
			return invalid("a geo routing policy needs at least one item")
		}
		seen := map[string]bool{}
		for i, item := range rp.Geo.Items {
			if item == nil || !slices.Contains(Regions, item.Location) {
				return invalid("geo item %d: location must be a Google Cloud region", i)
			}
			if seen[item.Location] {
				return invalid("geo item %d: location %s is used twice", i, item.Location)
			}
			seen[item.Location] = true
			if e := validateRRDatas(invalid, a.Type, item.Rrdatas); e != nil {
				return e
			}
		}
	default:
		return invalid("a routing policy needs exactly one of wrr and geo")
	}
	return nil
}

func validateRRDatas(invalid func(string, ...any) *apiError, typ string, rrdatas []string) *apiError {
	if len(rrdatas) == 0 {
		return invalid("rrdatas are required")
	}
	seen := map[string]bool{}
	for _, d := range rrdatas {
		if d == "" || seen[d] {
			return invalid("rrdata %q is empty or repeated", d)
		}
		seen[d] = true
		switch typ {
		case "A":
			if ip := net.ParseIP(d); ip == nil || ip.To4() == nil {
				return invalid("rrdata %q is not an IPv4 address", d)
			}
		case "AAAA":
			if ip := net.ParseIP(d); ip == nil || ip.To4() != nil {
				return invalid("rrdata %q is not an IPv6 address", d)
			}
		case "CNAME", "NS", "PTR":
			if !strings.HasSuffix(d, ".") {
				return invalid("rrdata %q is not a fully qualified name", d)
			}
		}
	}
	if typ == "CNAME" && len(rrdatas) > 1 {
		return invalid("a CNAME holds one rrdata")
	}
	return nil
}

// sameSet reports whether a deletion matches the stored set exactly, as Cloud DNS requires.
func sameSet(stored, d *dns.ResourceRecordSet) bool {
	return canonical(stored) == canonical(d)
}

func canonical(rs *dns.ResourceRecordSet) string {
	c := clone(rs)
	c.Name = strings.ToLower(c.Name)
	c.Kind = ""
	if rp := c.RoutingPolicy; rp != nil {
		rp.Kind = ""
		if rp.Wrr != nil {
			rp.Wrr.Kind = ""
			for _, it := range rp.Wrr.Items {
				it.Kind = ""
			}
		}
		if rp.Geo != nil {
			rp.Geo.Kind = ""
			for _, it := range rp.Geo.Items {
				it.Kind = ""
			}
		}
	}
	b, _ := json.Marshal(c)
	return string(b)
}

func clone(rs *dns.ResourceRecordSet) *dns.ResourceRecordSet {
	b, _ := json.Marshal(rs)
	var out dns.ResourceRecordSet
	_ = json.Unmarshal(b, &out)
	return &out
}

// Regions are the Google Cloud regions a geo routing item may name.
var Regions = []string{
	"africa-south1",
	"asia-east1", "asia-east2", "asia-northeast1", "asia-northeast2", "asia-northeast3",
	"asia-south1", "asia-south2", "asia-southeast1", "asia-southeast2",
	"australia-southeast1", "australia-southeast2",
	"europe-central2", "europe-north1", "europe-north2", "europe-southwest1", "europe-west1",
	"europe-west2", "europe-west3", "europe-west4", "europe-west6", "europe-west8", "europe-west9",
	"europe-west10", "europe-west12",
	"me-central1", "me-central2", "me-west1",
	"northamerica-northeast1", "northamerica-northeast2", "northamerica-south1",
	"southamerica-east1", "southamerica-west1",
	"us-central1", "us-east1", "us-east4", "us-east5", "us-south1", "us-west1", "us-west2",
	"us-west3", "us-west4",
}
