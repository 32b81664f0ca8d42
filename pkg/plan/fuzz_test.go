package plan

import (
	"errors"
	"slices"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// fuzzReader turns fuzz bytes into choices; past the end every choice is the first.
type fuzzReader struct {
	data []byte
	i    int
}

func (r *fuzzReader) pick(n int) int {
	if r.i >= len(r.data) {
		return 0
	}
	b := r.data[r.i]
	r.i++
	return int(b) % n
}

func (r *fuzzReader) endpoint(types ...string) *v1alpha1.Endpoint {
	names := []string{"example.com", "a.example.com", "b.example.com", "*.w.example.com", "klb.a.example.com", "A.Example.com."}
	targets := map[string][]string{
		"A":     {"10.0.0.1", "10.0.0.2", "10.0.0.3"},
		"AAAA":  {"2001:db8::1", "2001:db8::2"},
		"CNAME": {"x.example.net", "y.example.net", "a.example.com"},
		"NS":    {"ns1.example.net", "ns2.example.net"},
		"TXT":   {`"v=spf1 -all"`, `"heritage=external-dns,external-dns/owner=o2,external-dns/version=1"`},
		"MX":    {"10 mx.example.net"},
	}
	t := types[r.pick(len(types))]
	e := &v1alpha1.Endpoint{
		DNSName:    names[r.pick(len(names))],
		RecordType: t,
		RecordTTL:  []v1alpha1.TTL{0, 60, 300}[r.pick(3)],
	}
	pool := targets[t]
	for n := 1 + r.pick(2); n > 0; n-- {
		if v := pool[r.pick(len(pool))]; !slices.Contains(e.Targets, v) {
			e.Targets = append(e.Targets, v)
		}
	}
	switch r.pick(4) {
	case 1:
		e.SetIdentifier = "default"
		e.SetProviderSpecific("geo-code", "*")
	case 2:
		e.SetIdentifier = "IE"
		e.SetProviderSpecific("weight", []string{"100", "120"}[r.pick(2)])
	}
	return e
}

// fuzzInput builds a zone from fuzz bytes: humans' records, records with claims written by our
// owners (with wishes, possibly stale) and by a Kuadrant owner (without), claims without records,
// and TXTs that only look like claims; then what owner o1 published and wants, and who expired.
func fuzzInput(data []byte) Input {
	r := &fuzzReader{data: data}
	owners := []string{"o1", "o2", "o3", "k"}
	zone := map[v1alpha1.EndpointKey]*v1alpha1.Endpoint{}
	add := func(e *v1alpha1.Endpoint) {
		if e == nil {
			return
		}
		if _, dup := zone[e.Key()]; !dup {
			zone[e.Key()] = e
		}
	}
	claim := func(owner string, e *v1alpha1.Endpoint) *v1alpha1.Endpoint {
		if owner == "k" {
			txt := &v1alpha1.Endpoint{DNSName: registry.TXTName(owner, e.RecordType, e.DNSName), RecordType: "TXT",
				Targets: v1alpha1.Targets{registry.FormatValue(map[string]string{"owner": owner, "version": "1"})}, SetIdentifier: e.SetIdentifier}
			txt.ProviderSpecific = e.ProviderSpecific.DeepCopy()
			return txt
		}
		txt, err := registry.NewTXT(owner, e)
		if err != nil {
			return nil
		}
		return txt
	}
	for n := r.pick(14); n > 0; n-- {
		e := r.endpoint("A", "AAAA", "CNAME", "NS", "TXT", "MX")
		switch r.pick(5) {
		case 0: // a human's record
			add(e)
		case 1, 2: // a record and one or two claims on it
			add(e)
			for k := 1 + r.pick(2); k > 0; k-- {
				wish := e.DeepCopy()
				if r.pick(3) == 0 {
					wish.Targets = wish.Targets[:1]
				}
				add(claim(owners[r.pick(len(owners))], wish))
			}
		case 3: // a claim whose record is not published
			add(claim(owners[r.pick(len(owners))], e))
		case 4: // a TXT that looks like a claim but is not one
			add(&v1alpha1.Endpoint{DNSName: registry.TXTName("o1", "A", e.DNSName), RecordType: "TXT",
				Targets: v1alpha1.Targets{[]string{`"heritage=external-dns,external-dns/owner=o2,external-dns/version=1"`, `"random"`}[r.pick(2)]}})
		}
	}
	in := Input{OwnerID: "o1", ZoneName: "example.com"}
	for _, e := range zone {
		in.Current = append(in.Current, e)
	}
	sortByKey(in.Current)
	for n := r.pick(6); n > 0; n-- {
		in.Desired = append(in.Desired, r.endpoint("A", "AAAA", "CNAME", "NS", "A", "CNAME", "TXT"))
	}
	for n := r.pick(4); n > 0; n-- {
		in.Previous = append(in.Previous, r.endpoint("A", "AAAA", "CNAME"))
	}
	for _, o := range owners[1:] {
		if r.pick(3) == 0 {
			in.Expired = append(in.Expired, o)
		}
	}
	return in
}

// FuzzPlan: Plan never panics; whatever it plans passes the apply-time check, never deletes or
// updates a record nobody owns or a TXT that is neither ours nor an expired owner's, applies to a
// strict zone, and re-plans to nothing.
func FuzzPlan(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{5, 1, 0, 1, 1, 0, 0, 1, 0, 1, 0, 2, 1, 1, 0, 0, 0, 0, 3, 1, 1, 0, 1, 0, 2, 0, 0, 0})
	f.Add([]byte{8, 0, 0, 1, 1, 0, 0, 1, 2, 0, 2, 1, 0, 0, 3, 1, 3, 2, 1, 0, 0, 2, 1, 3, 2, 2, 0, 1, 4, 3, 2, 0, 0, 0, 1, 0, 0, 1, 1, 0, 1})
	f.Add([]byte{13, 2, 1, 2, 1, 1, 2, 1, 3, 2, 0, 1, 1, 3, 2, 4, 2, 2, 1, 2, 0, 3, 3, 1, 1, 2, 0, 4, 3, 3, 1, 1, 1, 1, 2, 0, 5, 2, 1, 2, 1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data)
		res, err := Plan(in)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Plan: %v", err)
			}
			return
		}
		zone := registry.Read(in.Current)
		for _, e := range append(slices.Clone(res.Changes.Delete), res.Changes.UpdateOld...) {
			if e.RecordType == v1alpha1.RecordTypeTXT {
				c, ok := registry.ParseTXT(e)
				if !ok || c.Owner != in.OwnerID && !slices.Contains(in.Expired, c.Owner) {
					t.Fatalf("changes TXT %v, which is not ours to change", e)
				}
				continue
			}
			if r := zone.Record(e.Key()); r == nil || !r.Owned() {
				t.Fatalf("changes %v, which nobody owns", e)
			}
		}
		if err := zone.Check([]string{in.OwnerID}, in.Expired, res.Changes); err != nil {
			t.Fatalf("the check refuses the plan: %v\n%s", err, describeChanges(res.Changes))
		}
		z := newZone(in.Current...)
		if z.apply(&batch.Changes{}) != nil {
			// The zone already breaks DNS rules (a human's CNAME beside other records): a strict
			// backend would not hold it.
			return
		}
		if err := z.apply(res.Changes); err != nil {
			t.Fatalf("apply: %v\n%s", err, describeChanges(res.Changes))
		}
		in.Current, in.Previous = z.endpoints(), res.Published
		again, err := Plan(in)
		if err != nil {
			t.Fatalf("Plan again: %v", err)
		}
		if !again.Changes.Empty() {
			t.Fatalf("planning again changes the zone:\n%s\nafter\n%s", describeChanges(again.Changes), describeChanges(res.Changes))
		}
	})
}
