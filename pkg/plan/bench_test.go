package plan

import (
	"fmt"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// benchZone is a zone of 10,000 records with their ownership TXTs: ten owners (clusters) with 1,000
// hosts each, every fifth host shared with the next owner (o9 shares none). Claims at shared hosts
// state their wish; the others are Kuadrant's. It returns the zone and what owner o0 published in it.
func benchZone(b *testing.B) (zone, published []*v1alpha1.Endpoint) {
	b.Helper()
	add := func(owner string, r *v1alpha1.Endpoint, shared bool) {
		newTXT := registry.NewTXT
		if shared {
			newTXT = func(owner string, r *v1alpha1.Endpoint) (*v1alpha1.Endpoint, error) {
				return registry.NewWishTXT(owner, "", r)
			}
		}
		txt, err := newTXT(owner, r)
		if err != nil {
			b.Fatal(err)
		}
		zone = append(zone, txt)
	}
	records := map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}
	for o := 0; o < 10; o++ {
		owner := fmt.Sprintf("o%d", o)
		for h := 0; h < 1000; h++ {
			r := rec(fmt.Sprintf("host%d-%d.example.com", o, h), "A", 60, fmt.Sprintf("10.%d.%d.%d", o, h/256, h%256))
			records[r.Key()] = r
			shared := h%5 == 0 && o < 9
			add(owner, r, shared)
			if owner == "o0" {
				published = append(published, r.DeepCopy())
			}
			if shared {
				next := fmt.Sprintf("o%d", o+1)
				mine := rec(r.DNSName, "A", 60, fmt.Sprintf("10.%d.%d.%d", 100+o+1, h/256, h%256))
				r.Targets = append(r.Targets, mine.Targets...)
				add(next, mine, true)
			}
		}
	}
	for _, r := range records {
		zone = append(zone, r)
	}
	return zone, published
}

// benchInput is owner o0's input in benchZone: 1,000 record changes (400 hosts get a new address,
// 300 are removed and 300 are new) and 680 ownership TXT changes (the 80 shared hosts among the
// 400 state the new address; 300 claims go, 300 come).
func benchInput(b *testing.B) Input {
	zone, published := benchZone(b)
	desired := make([]*v1alpha1.Endpoint, 0, 1000)
	for i, r := range published {
		switch {
		case i < 400:
			desired = append(desired, rec(r.DNSName, "A", 60, fmt.Sprintf("10.200.%d.%d", i/256, i%256)))
		case i < 700:
			desired = append(desired, r)
		}
	}
	for i := 0; i < 300; i++ {
		desired = append(desired, rec(fmt.Sprintf("new%d.example.com", i), "A", 60, "10.250.0.1"))
	}
	return Input{OwnerID: "o0", ZoneName: "example.com", Current: zone, Previous: published, Desired: desired}
}

// BenchmarkPlan1000Changes10000Records plans 1,000 record changes for one owner of a 10,000-record
// zone.
func BenchmarkPlan1000Changes10000Records(b *testing.B) {
	in := benchInput(b)
	res, err := Plan(in)
	if err != nil {
		b.Fatal(err)
	}
	if n := res.Changes.Len(); n != 1680 {
		b.Fatalf("%d changes, want 1,000 record and 680 TXT changes", n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Plan(in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheck1000Changes10000Records reads the zone and checks that plan's batch, as the
// controller does right before applying it.
func BenchmarkCheck1000Changes10000Records(b *testing.B) {
	in := benchInput(b)
	res, err := Plan(in)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := registry.Read(in.Current).Check([]string{in.OwnerID}, nil, res.Changes); err != nil {
			b.Fatal(err)
		}
	}
}
