package registry

import (
	"fmt"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// benchReads are two reads of a zone of 10,000 records, each its own owner's with its ownership
// TXT (20,000 endpoints, as the 10,000-record scale benchmark's zone), the second without 10 of the
// records and their TXTs: a publish cycle's reads while records are deleted.
func benchReads(b *testing.B) (full, fewer []*v1alpha1.Endpoint) {
	for i := range 10000 {
		rec := ep(fmt.Sprintf("host%d.example.com", i), "A", fmt.Sprintf("10.%d.%d.1", i/256, i%256))
		txt := mustTXT(b, fmt.Sprintf("owner%d", i), rec)
		full = append(full, rec, txt)
		if i%1000 != 0 {
			fewer = append(fewer, rec, txt)
		}
	}
	return full, fewer
}

// BenchmarkRead20000 builds the index of each read afresh, as every read did before
// Zone.ReadAgain.
func BenchmarkRead20000(b *testing.B) {
	full, fewer := benchReads(b)
	reads := [][]*v1alpha1.Endpoint{full, fewer}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if z := Read(reads[i%2]); len(z.Records()) == 0 {
			b.Fatal("no records")
		}
	}
}

// BenchmarkReadAgain20000 brings one index up to date with each read in place.
func BenchmarkReadAgain20000(b *testing.B) {
	full, fewer := benchReads(b)
	reads := [][]*v1alpha1.Endpoint{full, fewer}
	z := Read(full)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		z.ReadAgain(reads[(i+1)%2])
	}
	if len(z.Names("owner1")) != 1 {
		b.Fatal("owner1's record is not in the zone")
	}
}
