package dnsserver

import (
	"fmt"
	"slices"

	"github.com/miekg/dns"
)

// claims is which sources hold what, while a zone is built, so that a record of one source never
// takes away what another serves. Three kinds of record exclude the records of others: a delegation
// (NS below the apex) hides every name at and below it, a CNAME excludes any other data at its name,
// and data at a name excludes another's CNAME there or delegation at or above it. Of two sources
// whose records exclude each other, the one processed first (the earlier created) keeps its
// records; the other's are refused. Records of one source at one name and type merge, and several
// sources may share a name with other types, as the grants allow them to.
type claims struct {
	origin string
	// cut and alias are the source holding a delegation or a CNAME at a name.
	cut, alias map[string]int
	// at and below are the sources holding records at a name, and at or below it.
	at, below map[string][]int
}

func newClaims(origin string) *claims {
	return &claims{origin: origin, cut: map[string]int{}, alias: map[string]int{}, at: map[string][]int{}, below: map[string][]int{}}
}

// conflict says why source src may not hold a record of rrtype at name, given what earlier sources
// hold; empty when it may.
func (c *claims) conflict(src int, name string, rrtype uint16) string {
	const keeps = "; the record created first keeps a name"
	for n := name; ; {
		if h, ok := c.cut[n]; ok && h != src {
			return fmt.Sprintf("another record delegates %s%s", n, keeps)
		}
		if n == c.origin {
			break
		}
		next, _ := dns.NextLabel(n, 0)
		n = n[next:]
	}
	switch rrtype {
	case dns.TypeNS:
		if others(c.below[name], src) {
			return fmt.Sprintf("another record has records at or below %s%s", name, keeps)
		}
	case dns.TypeCNAME:
		if others(c.at[name], src) {
			return fmt.Sprintf("another record has records at %s%s", name, keeps)
		}
	default:
		if h, ok := c.alias[name]; ok && h != src {
			return fmt.Sprintf("another record has a CNAME at %s%s", name, keeps)
		}
	}
	return ""
}

// add records that source src holds a record of rrtype at name.
func (c *claims) add(src int, name string, rrtype uint16) {
	switch rrtype {
	case dns.TypeNS:
		c.cut[name] = src
	case dns.TypeCNAME:
		c.alias[name] = src
	}
	if !slices.Contains(c.at[name], src) {
		c.at[name] = append(c.at[name], src)
	}
	for n := name; ; {
		if slices.Contains(c.below[n], src) {
			// Added before, with every ancestor.
			break
		}
		c.below[n] = append(c.below[n], src)
		if n == c.origin {
			break
		}
		next, _ := dns.NextLabel(n, 0)
		n = n[next:]
	}
}

// others says whether a source other than src is among holders.
func others(holders []int, src int) bool {
	return slices.ContainsFunc(holders, func(h int) bool { return h != src })
}
