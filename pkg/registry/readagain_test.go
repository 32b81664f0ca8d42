package registry

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// TestReadAgainAsRead: a zone read again in place answers every question as a zone read afresh from
// the same endpoints (and Names the names of an owner's claims), over a run of reads that add, drop and change records, version-1 and legacy
// claims, plain TXTs, duplicates and nils, and holds the very endpoints read, as Read does.
func TestReadAgainAsRead(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 5))
	pool := readAgainPool(t)
	var z *Zone
	for step := range 300 {
		var read []*v1alpha1.Endpoint
		keep := []int{1, 5, 9}[rng.IntN(3)] // in tenths: reads that differ much and little
		for _, e := range pool {
			if rng.IntN(10) < keep {
				read = append(read, copyEndpoint(e))
			}
		}
		for range rng.IntN(3) {
			// A backend that repeats a key, or lists a nil.
			if len(read) > 0 && rng.IntN(2) == 0 {
				read = append(read, copyEndpoint(read[rng.IntN(len(read))]))
			} else {
				read = append(read, nil)
			}
		}
		rng.Shuffle(len(read), func(i, j int) { read[i], read[j] = read[j], read[i] })
		if z == nil || step%50 == 0 {
			z = Read(read)
		} else {
			z.ReadAgain(read)
		}
		if got, want := zoneAnswers(z, pool), zoneAnswers(Read(read), pool); got != want {
			t.Fatalf("step %d: read again in place:\n%s\nread afresh:\n%s", step, got, want)
		}
		claimed := map[string][]string{}
		for _, r := range z.Records() {
			for _, o := range r.Owners() {
				if !slices.Contains(claimed[o], r.Key.DNSName) {
					claimed[o] = append(claimed[o], r.Key.DNSName)
				}
			}
		}
		for _, o := range readAgainOwners {
			if slices.Sort(claimed[o]); !slices.Equal(z.Names(o), claimed[o]) {
				t.Fatalf("step %d: Names(%s) = %v, its claims are at %v", step, o, z.Names(o), claimed[o])
			}
		}
	}
}

// readAgainPool is every endpoint a read may hold: records at many names, their claims by three
// owners (with and without a wish), legacy claims, plain TXTs, and other values of the same keys.
func readAgainPool(t *testing.T) []*v1alpha1.Endpoint {
	var pool []*v1alpha1.Endpoint
	for i := range 2*fewNames + 2 { // more names than an owner's claims are counted at in a slice
		name := fmt.Sprintf("h%d.example.org", i)
		for _, rec := range []*v1alpha1.Endpoint{
			ep(name, "A", "1.1.1.1"), ep(name, "A", "2.2.2.2", "1.1.1.1"), ep(name, "AAAA", "2001:db8::1"),
			ep(name, "CNAME", "lb.example.net"), ep(name, "A", "3.3.3.3").WithSetIdentifier("eu"),
			ep(strings.ToUpper(name), "A", "1.1.1.1"), // the same key, another spelling
		} {
			pool = append(pool, rec)
			for _, owner := range []string{"owner1", "owner2", "owner3"} {
				pool = append(pool, mustTXT(t, owner, rec), kuadrantTXT(owner, rec.RecordType, name))
			}
			// Owners that claim at one name or two, as most do.
			pool = append(pool, mustTXT(t, fmt.Sprintf("solo%d", i), rec), mustTXT(t, fmt.Sprintf("solo%d", i+1), rec))
		}
		pool = append(pool,
			ep("kuadrant-a-"+name, "TXT", `"heritage=external-dns,external-dns/owner=owner1&&owner2"`),
			ep("kuadrant-cname-"+name, "TXT", `"heritage=external-dns,external-dns/owner=owner3"`),
			ep(name, "TXT", "random"), ep(name, "TXT", "other"))
	}
	lbl := ep("h0.example.org", "A", "1.1.1.1")
	lbl.Labels = map[string]string{"k": "v"} // identical to another but for its labels
	return append(pool, lbl)
}

var readAgainOwners = func() []string {
	owners := []string{"owner1", "owner2", "owner3"}
	for i := range 2*fewNames + 3 {
		owners = append(owners, fmt.Sprintf("solo%d", i))
	}
	return owners
}()

func copyEndpoint(e *v1alpha1.Endpoint) *v1alpha1.Endpoint { return e.DeepCopy() }

// zoneAnswers is what a zone answers about the keys and names of the pool, with the identity of the
// endpoints it holds.
func zoneAnswers(z *Zone, pool []*v1alpha1.Endpoint) string {
	var b strings.Builder
	for _, r := range z.Records() {
		fmt.Fprintf(&b, "record %v endpoint %p", r.Key, r.Endpoint)
		for _, c := range r.Claims {
			fmt.Fprintf(&b, " claim %s legacy=%t txt=%p wish=%v", c.Owner, c.Legacy, c.TXT, c.Wish)
		}
		b.WriteString("\n")
	}
	names := map[string]bool{}
	for _, e := range pool {
		k := e.Key()
		names[k.DNSName] = true
		fmt.Fprintf(&b, "endpoint %v %p legacy %d redundant %t\n", k, z.Endpoint(k), len(z.LegacyTXT(k)), z.Redundant(k))
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		var at []v1alpha1.EndpointKey
		for _, r := range z.AtName(name) {
			at = append(at, r.Key)
		}
		unclaimed := z.Unclaimed(name)
		slices.SortFunc(unclaimed, func(a, b *v1alpha1.Endpoint) int { return compareKeys(a.Key(), b.Key()) })
		fmt.Fprintf(&b, "name %s records %v unclaimed %s\n", name, at, pointers(unclaimed))
	}
	for _, owner := range readAgainOwners {
		fmt.Fprintf(&b, "owner %s names %v\n", owner, z.Names(owner))
	}
	fmt.Fprintf(&b, "legacy %s\n", pointers(z.LegacyTXTs()))
	return b.String()
}

func pointers(eps []*v1alpha1.Endpoint) string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = fmt.Sprintf("%p", e)
	}
	return strings.Join(out, " ")
}
