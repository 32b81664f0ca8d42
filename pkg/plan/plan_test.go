package plan

import (
	"errors"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

func rec(name, recordType string, ttl v1alpha1.TTL, targets ...string) *v1alpha1.Endpoint {
	return &v1alpha1.Endpoint{DNSName: name, RecordType: recordType, RecordTTL: ttl, Targets: targets}
}

func eps(e ...*v1alpha1.Endpoint) []*v1alpha1.Endpoint { return e }

func mustTXT(t testing.TB, owner string, r *v1alpha1.Endpoint) *v1alpha1.Endpoint {
	t.Helper()
	txt, err := registry.NewTXT(owner, r)
	if err != nil {
		t.Fatal(err)
	}
	return txt
}

// kuadrantTXT is the ownership TXT Kuadrant's dns-operator writes: no wish in it.
func kuadrantTXT(owner string, r *v1alpha1.Endpoint) *v1alpha1.Endpoint {
	txt := &v1alpha1.Endpoint{
		DNSName:    registry.TXTName(owner, r.RecordType, r.DNSName),
		RecordType: "TXT",
		Targets:    v1alpha1.Targets{registry.FormatValue(map[string]string{"owner": owner, "version": "1"})},
	}
	txt.SetIdentifier = r.SetIdentifier
	txt.ProviderSpecific = r.ProviderSpecific.DeepCopy()
	return txt
}

func expectLines(t testing.TB, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %s\n want %s", what, strings.Join(got, "\n      "), strings.Join(want, "\n      "))
	}
}

func expectConflicts(t testing.TB, res *Result, want ...Conflict) {
	t.Helper()
	if len(res.Conflicts) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(res.Conflicts, want) {
		t.Fatalf("conflicts:\n got  %+v\n want %+v", res.Conflicts, want)
	}
}

func TestCreate(t *testing.T) {
	z := newZone()
	a := &owner{id: "a"}
	desired := eps(rec("app.example.com", "A", 60, "1.1.1.2", "1.1.1.1"))
	res := step(t, z, a, desired)
	expectLines(t, "created", lines(res.Changes.Create), []string{
		"app.example.com A 60 1.1.1.1,1.1.1.2",
		// Byte for byte Kuadrant's claim: nobody else is at the name, so the wish is what is published.
		"kuadrant-264yzvyj-a-app.example.com TXT 60 \"heritage=external-dns,external-dns/owner=a,external-dns/version=1\"",
	})
	if len(res.Changes.UpdateNew)+len(res.Changes.Delete) != 0 {
		t.Fatalf("more than creates:\n%s", describeChanges(res.Changes))
	}
	if !reflect.DeepEqual(res.Published, desired) || !reflect.DeepEqual(res.Owners, []string{"a"}) {
		t.Fatalf("published %v, owners %v", res.Published, res.Owners)
	}
}

func lines(eps []*v1alpha1.Endpoint) []string {
	var out []string
	for _, e := range eps {
		out = append(out, line(e))
	}
	return out
}

// Owners merge their targets into A records and leave them one by one; the last one out deletes.
func TestMergeLeaveDelete(t *testing.T) {
	z := newZone()
	a, b, c := &owner{id: "a"}, &owner{id: "b"}, &owner{id: "c"}
	step(t, z, b, eps(rec("s.example.com", "A", 60, "2.2.2.2"), rec("s.example.com", "AAAA", 60, "2001:db8::2")))
	res := step(t, z, a, eps(rec("s.example.com", "A", 60, "1.1.1.1", "2.2.2.2")))
	expectLines(t, "merge", lines(res.Changes.UpdateNew), []string{"s.example.com A 60 1.1.1.1,2.2.2.2"})
	step(t, z, c, eps(rec("s.example.com", "A", 60, "3.3.3.3")))
	expectLines(t, "records", z.records(), []string{"s.example.com A 60 1.1.1.1,2.2.2.2,3.3.3.3", "s.example.com AAAA 60 2001:db8::2"})
	if !reflect.DeepEqual(res.Owners, []string{"a", "b"}) {
		t.Fatalf("owners %v", res.Owners)
	}

	// b withdraws 2.2.2.2; a still wants it.
	step(t, z, b, eps(rec("s.example.com", "A", 60, "4.4.4.4"), rec("s.example.com", "AAAA", 60, "2001:db8::2")))
	expectLines(t, "records", z.records(), []string{"s.example.com A 60 1.1.1.1,2.2.2.2,3.3.3.3,4.4.4.4", "s.example.com AAAA 60 2001:db8::2"})
	step(t, z, a, nil)
	expectLines(t, "after a left", z.records(), []string{"s.example.com A 60 3.3.3.3,4.4.4.4", "s.example.com AAAA 60 2001:db8::2"})
	res = step(t, z, c, nil)
	if !reflect.DeepEqual(res.Owners, []string{"b"}) || len(res.Published) != 0 {
		t.Fatalf("owners %v, published %v after c left", res.Owners, res.Published)
	}
	expectLines(t, "after c left", z.records(), []string{"s.example.com A 60 4.4.4.4", "s.example.com AAAA 60 2001:db8::2"})
	res = step(t, z, b, nil)
	expectLines(t, "deleted", lines(res.Changes.Delete), []string{
		"kuadrant-2i9rupgs-a-s.example.com TXT 60 \"heritage=external-dns,external-dns/claim-targets=4.4.4.4,external-dns/claim-ttl=60,external-dns/owner=b,external-dns/version=1\"",
		"kuadrant-2i9rupgs-aaaa-s.example.com TXT 60 \"heritage=external-dns,external-dns/claim-targets=2001:db8::2,external-dns/claim-ttl=60,external-dns/owner=b,external-dns/version=1\"",
		"s.example.com A 60 4.4.4.4",
		"s.example.com AAAA 60 2001:db8::2",
	})
	if len(z) != 0 {
		t.Fatalf("zone not empty: %v", z.endpoints())
	}
}

// A human's records are never changed, deleted, claimed or shadowed.
func TestHumanRecords(t *testing.T) {
	human := rec("h.example.com", "A", 300, "9.9.9.9")
	humanTXT := rec("t.example.com", "TXT", 300, `"google-site-verification=x"`)
	apexNS := rec("example.com", "NS", 172800, "ns1.example.net", "ns2.example.net")
	z := newZone(human, humanTXT, apexNS)
	a := &owner{id: "a"}

	res := step(t, z, a, eps(rec("h.example.com", "A", 60, "1.1.1.1")))
	expectConflicts(t, res, Conflict{DNSName: "h.example.com", RecordType: "A", Field: FieldTargets, Ours: "1.1.1.1", Published: "9.9.9.9"})
	if !res.Changes.Empty() || len(res.Published) != 0 {
		t.Fatalf("wrote over a human's record:\n%s", describeChanges(res.Changes))
	}

	res = step(t, z, a, eps(rec("h.example.com", "CNAME", 60, "lb.example.net")))
	expectConflicts(t, res, Conflict{DNSName: "h.example.com", RecordType: "CNAME", Field: FieldType, Ours: "CNAME", Published: "A"})
	expectLines(t, "claims", z.claims(), []string{"a h.example.com CNAME "})

	// A and TXT share a name; a CNAME would shadow the TXT.
	res = step(t, z, a, eps(rec("t.example.com", "A", 60, "1.1.1.1"), rec("x.example.com", "AAAA", 60, "2001:db8::1")))
	expectConflicts(t, res)
	res = step(t, z, a, eps(rec("t.example.com", "CNAME", 60, "lb.example.net")))
	expectConflicts(t, res, Conflict{DNSName: "t.example.com", RecordType: "CNAME", Field: FieldType, Ours: "CNAME", Published: "TXT"})
	expectLines(t, "records", z.records(), []string{
		"example.com NS 172800 ns1.example.net,ns2.example.net",
		"h.example.com A 300 9.9.9.9",
		"t.example.com TXT 300 \"google-site-verification=x\"",
	})
	// The zone's own NS at the apex is nobody's: a wish for it is a conflict, not a write.
	res = step(t, z, a, eps(rec("example.com", "NS", 300, "ns.other.net")))
	expectConflicts(t, res, Conflict{DNSName: "example.com", RecordType: "NS", Field: FieldTargets, Ours: "ns.other.net", Published: "ns1.example.net,ns2.example.net"})
	step(t, z, a, nil)
	expectLines(t, "records", z.records(), []string{
		"example.com NS 172800 ns1.example.net,ns2.example.net",
		"h.example.com A 300 9.9.9.9",
		"t.example.com TXT 300 \"google-site-verification=x\"",
	})
	expectLines(t, "claims", z.claims(), nil)
}

// loadbalanced is one owner's loadbalanced tree for app.example.com: Kuadrant's record shape with
// one geo and, optionally, the default geo.
func loadbalanced(geo, lb, ip string, defaultGeo bool) []*v1alpha1.Endpoint {
	g := strings.ToLower(geo)
	out := eps(
		rec("app.example.com", "CNAME", 300, "klb.app.example.com"),
		rec("klb.app.example.com", "CNAME", 300, g+".klb.app.example.com").WithSetIdentifier(geo).WithProviderSpecific("geo-code", geo),
		rec(g+".klb.app.example.com", "CNAME", 60, lb+".klb.app.example.com").WithSetIdentifier(lb+".klb.app.example.com").WithProviderSpecific("weight", "120"),
		rec(lb+".klb.app.example.com", "A", 60, ip),
	)
	if defaultGeo {
		out = append(out, rec("klb.app.example.com", "CNAME", 300, g+".klb.app.example.com").WithSetIdentifier("default").WithProviderSpecific("geo-code", "*"))
	}
	return out
}

// Case 1: two owners each make their own geo the default. The default published first stays
// (its owner is the incumbent), whichever owner ID is lower, and the other reports it.
func TestConflictDefaultGeo(t *testing.T) {
	ie := loadbalanced("IE", "aaaaaa-111111", "1.1.1.1", true)
	us := loadbalanced("US", "bbbbbb-222222", "2.2.2.2", true)
	geo := map[byte]string{'a': "ie", 'b': "us"}
	base := []string{
		"aaaaaa-111111.klb.app.example.com A 60 1.1.1.1",
		"app.example.com CNAME 300 klb.app.example.com",
		"bbbbbb-222222.klb.app.example.com A 60 2.2.2.2",
		"ie.klb.app.example.com CNAME [aaaaaa-111111.klb.app.example.com] 60 aaaaaa-111111.klb.app.example.com {weight=120}",
		"klb.app.example.com CNAME [IE] 300 ie.klb.app.example.com {geo-code=IE}",
		"klb.app.example.com CNAME [US] 300 us.klb.app.example.com {geo-code=US}",
		"us.klb.app.example.com CNAME [bbbbbb-222222.klb.app.example.com] 60 bbbbbb-222222.klb.app.example.com {weight=120}",
	}
	defaultTo := func(o byte) string {
		return "klb.app.example.com CNAME [default] 300 " + geo[o] + ".klb.app.example.com {geo-code=*}"
	}
	for _, order := range []string{"ab", "ba"} {
		t.Run(order, func(t *testing.T) {
			w, l := order[0], order[1] // the first to publish holds the default
			lost := Conflict{DNSName: "klb.app.example.com", RecordType: "CNAME", SetIdentifier: "default", Field: FieldTargets,
				Ours: geo[l] + ".klb.app.example.com", Published: geo[w] + ".klb.app.example.com", WinnerOwner: string(w)}
			want := append(slices.Clone(base), defaultTo(w))
			sort.Strings(want)
			z := newZone()
			owners := map[byte]*owner{'a': {id: "a"}, 'b': {id: "b"}}
			desired := map[byte][]*v1alpha1.Endpoint{'a': ie, 'b': us}
			results := map[byte]*Result{}
			// The first to plan writes Kuadrant's claims; in the second round it sees the other
			// cluster's owner at its names and states its wishes; the third changes nothing.
			for i := 0; i < 3; i++ {
				for _, o := range []byte(order) {
					results[o] = step(t, z, owners[o], desired[o])
					if i == 2 && !results[o].Changes.Empty() {
						t.Fatalf("%c still writes after convergence:\n%s", o, describeChanges(results[o].Changes))
					}
				}
			}
			expectConflicts(t, results[w])
			expectConflicts(t, results[l], lost)
			expectLines(t, "records", z.records(), want)

			// The winner leaves: its own last batch publishes the next claimant's default.
			res := step(t, z, owners[w], nil)
			expectLines(t, "the winner's last batch updates", lines(res.Changes.UpdateNew), []string{defaultTo(l)})
			// Alone again, the other only writes its claims back as Kuadrant's; its records stay.
			before := z.records()
			res = step(t, z, owners[l], desired[l])
			expectConflicts(t, res)
			if len(res.Changes.Create)+len(res.Changes.Delete) != 0 || slices.ContainsFunc(res.Changes.UpdateNew, func(e *v1alpha1.Endpoint) bool {
				return e.RecordType != "TXT" || strings.Contains(e.Targets[0], "claim-")
			}) {
				t.Fatalf("%c after %c left:\n%s", l, w, describeChanges(res.Changes))
			}
			expectLines(t, "records", z.records(), before)
			if res = step(t, z, owners[l], desired[l]); !res.Changes.Empty() {
				t.Fatalf("%c writes again:\n%s", l, describeChanges(res.Changes))
			}
		})
	}
}

// When the winner's claim goes without its own plan (its lease expired), the next owner that
// plans publishes its own wish and withdraws the dead owner's targets and claims wherever it shares
// a record with it, and the dead owner's geo from the geo set group it shares (its IE entry, which
// would keep sending IE's clients to it); what only the dead owner held stays, its IE subtree too.
func TestWinnerExpires(t *testing.T) {
	z := newZone()
	a, b := &owner{id: "a"}, &owner{id: "b"}
	step(t, z, a, loadbalanced("IE", "aaaaaa-111111", "1.1.1.1", true))
	step(t, z, b, loadbalanced("US", "bbbbbb-222222", "2.2.2.2", true))
	res := step(t, z, b, loadbalanced("US", "bbbbbb-222222", "2.2.2.2", true), "a")
	expectConflicts(t, res)
	expectLines(t, "records", z.records(), []string{
		"aaaaaa-111111.klb.app.example.com A 60 1.1.1.1",
		"app.example.com CNAME 300 klb.app.example.com",
		"bbbbbb-222222.klb.app.example.com A 60 2.2.2.2",
		"ie.klb.app.example.com CNAME [aaaaaa-111111.klb.app.example.com] 60 aaaaaa-111111.klb.app.example.com {weight=120}",
		"klb.app.example.com CNAME [US] 300 us.klb.app.example.com {geo-code=US}",
		"klb.app.example.com CNAME [default] 300 us.klb.app.example.com {geo-code=*}",
		"us.klb.app.example.com CNAME [bbbbbb-222222.klb.app.example.com] 60 bbbbbb-222222.klb.app.example.com {weight=120}",
	})
	expectLines(t, "claims", z.claims(), []string{
		"a aaaaaa-111111.klb.app.example.com A ",
		"a ie.klb.app.example.com CNAME aaaaaa-111111.klb.app.example.com",
		"b app.example.com CNAME ",
		"b bbbbbb-222222.klb.app.example.com A ",
		"b klb.app.example.com CNAME US",
		"b klb.app.example.com CNAME default",
		"b us.klb.app.example.com CNAME bbbbbb-222222.klb.app.example.com",
	})
	// A shared multi-value record loses the dead owner's targets, never its last ones.
	z = newZone()
	step(t, z, a, eps(rec("s.example.com", "A", 60, "1.1.1.1"), rec("only-a.example.com", "A", 60, "1.1.1.1")))
	step(t, z, b, eps(rec("s.example.com", "A", 60, "2.2.2.2"), rec("only-a.example.com", "AAAA", 60, "2001:db8::2")))
	step(t, z, b, eps(rec("s.example.com", "A", 60, "2.2.2.2"), rec("only-a.example.com", "AAAA", 60, "2001:db8::2")), "a")
	expectLines(t, "records", z.records(), []string{
		"only-a.example.com A 60 1.1.1.1",
		"only-a.example.com AAAA 60 2001:db8::2",
		"s.example.com A 60 2.2.2.2",
	})
	step(t, z, b, nil, "a")
	expectLines(t, "records", z.records(), []string{"only-a.example.com A 60 1.1.1.1"})
}

// Case 2: owners want different TTLs on one shared record. The TTL published first stays, whichever
// owner ID is lower; the targets merge.
func TestConflictTTL(t *testing.T) {
	ttl := map[byte]string{'a': "60", 'b': "300"}
	for _, order := range []string{"ab", "ba"} {
		t.Run(order, func(t *testing.T) {
			w, l := order[0], order[1]
			z := newZone()
			owners := map[byte]*owner{'a': {id: "a"}, 'b': {id: "b"}}
			desired := map[byte][]*v1alpha1.Endpoint{
				'a': eps(rec("s.example.com", "A", 60, "1.1.1.1")),
				'b': eps(rec("s.example.com", "A", 300, "2.2.2.2")),
			}
			var results = map[byte]*Result{}
			for i := 0; i < 2; i++ {
				for _, o := range []byte(order) {
					results[o] = step(t, z, owners[o], desired[o])
				}
			}
			expectLines(t, "records", z.records(), []string{"s.example.com A " + ttl[w] + " 1.1.1.1,2.2.2.2"})
			expectConflicts(t, results[w])
			expectConflicts(t, results[l], Conflict{DNSName: "s.example.com", RecordType: "A", Field: FieldTTL, Ours: ttl[l], Published: ttl[w], WinnerOwner: string(w)})
			if len(results[l].Published) != 1 || results[l].Published[0].RecordTTL != desired[l][0].RecordTTL {
				t.Fatalf("%c publishes %v", l, results[l].Published)
			}
		})
	}
}

// Case 3: two owners each want a single-target CNAME at one host. The target published first stays
// while its owner wants it, whichever owner ID is lower.
func TestConflictSimpleCNAME(t *testing.T) {
	for _, order := range []string{"ab", "ba"} {
		t.Run(order, func(t *testing.T) {
			w, l := order[0], order[1]
			target := map[byte]string{'a': "lb-a.example.net", 'b': "lb-b.example.net"}
			z := newZone()
			owners := map[byte]*owner{'a': {id: "a"}, 'b': {id: "b"}}
			desired := map[byte][]*v1alpha1.Endpoint{
				'a': eps(rec("www.example.com", "CNAME", 60, "lb-a.example.net")),
				'b': eps(rec("www.example.com", "CNAME", 60, "lb-b.example.net")),
			}
			results := map[byte]*Result{}
			for i := 0; i < 2; i++ {
				for _, o := range []byte(order) {
					results[o] = step(t, z, owners[o], desired[o])
				}
			}
			expectLines(t, "records", z.records(), []string{"www.example.com CNAME 60 " + target[w]})
			expectConflicts(t, results[w])
			expectConflicts(t, results[l], Conflict{DNSName: "www.example.com", RecordType: "CNAME", Field: FieldTargets, Ours: target[l], Published: target[w], WinnerOwner: string(w)})
			for _, r := range results {
				if !reflect.DeepEqual(r.Owners, []string{"a", "b"}) {
					t.Fatalf("owners %v", r.Owners)
				}
			}
		})
	}
}

// A CNAME that some owner wants with several targets (a backend that publishes weighted sets as one
// answer) is a multi-value record: the targets merge.
func TestMultiTargetCNAME(t *testing.T) {
	z := newZone()
	a, b := &owner{id: "a"}, &owner{id: "b"}
	step(t, z, a, eps(rec("www.example.com", "CNAME", 60, "lb-a1.example.net", "lb-a2.example.net")))
	res := step(t, z, b, eps(rec("www.example.com", "CNAME", 60, "lb-b.example.net")))
	expectConflicts(t, res)
	expectLines(t, "records", z.records(), []string{"www.example.com CNAME 60 lb-a1.example.net,lb-a2.example.net,lb-b.example.net"})
	step(t, z, a, nil)
	expectLines(t, "records", z.records(), []string{"www.example.com CNAME 60 lb-b.example.net"})
}

// Case 4: one owner wants a simple A at a host, another a loadbalanced CNAME. The kind published
// first stays while its owner wants it, whichever owner ID is lower; the other keeps only its claim
// and reports the record type. Once the winner leaves, the other's kind is published.
func TestConflictAAndCNAME(t *testing.T) {
	simple := eps(rec("app.example.com", "A", 60, "9.9.9.9"))
	const appA, appCNAME = "app.example.com A 60 9.9.9.9", "app.example.com CNAME 300 klb.app.example.com"
	for _, tc := range []struct {
		name          string
		simpleOwner   string
		balancedOwner string
	}{
		{"lower owner simple", "a", "b"},
		{"lower owner loadbalanced", "b", "a"},
	} {
		for _, order := range []string{"simple first", "loadbalanced first"} {
			t.Run(tc.name+", "+order, func(t *testing.T) {
				z := newZone()
				s, l := &owner{id: tc.simpleOwner}, &owner{id: tc.balancedOwner}
				balanced := loadbalanced("IE", "aaaaaa-111111", "1.1.1.1", false)
				first, second := s, l
				firstWant, secondWant := simple, balanced
				wantApp, wantAfter := appA, appCNAME
				lost := Conflict{DNSName: "app.example.com", RecordType: "CNAME", Field: FieldType, Ours: "CNAME", Published: "A", WinnerOwner: s.id}
				if order == "loadbalanced first" {
					first, second, firstWant, secondWant = l, s, balanced, simple
					wantApp, wantAfter = appCNAME, appA
					lost = Conflict{DNSName: "app.example.com", RecordType: "A", Field: FieldType, Ours: "A", Published: "CNAME", WinnerOwner: l.id}
				}
				var res *Result
				results := map[string]*Result{}
				for i := 0; i < 2; i++ {
					results[first.id] = step(t, z, first, firstWant)
					res = step(t, z, second, secondWant)
					results[second.id] = res
				}
				if !res.Changes.Empty() {
					t.Fatalf("still writing:\n%s", describeChanges(res.Changes))
				}
				got := z.records()
				expectLines(t, "app", withPrefix(got, "app.example.com "), []string{wantApp})
				if len(got) != 4 {
					t.Fatalf("the loadbalanced tree beside app is not whole: %v", got)
				}
				expectConflicts(t, results[first.id])
				expectConflicts(t, results[second.id], lost)
				for _, p := range results[second.id].Published {
					if p.DNSName == "app.example.com" {
						t.Fatalf("the loser lists %v as published", p)
					}
				}
				expectLines(t, "claims at app", containing(z.claims(), " app.example.com "), []string{
					"a app.example.com " + map[bool]string{true: "A ", false: "CNAME "}[tc.simpleOwner == "a"],
					"b app.example.com " + map[bool]string{true: "CNAME ", false: "A "}[tc.simpleOwner == "a"],
				})
				// The winner leaves: the loser's kind is published, by the winner's last batch.
				step(t, z, first, nil)
				expectLines(t, "app after the winner left", withPrefix(z.records(), "app.example.com "), []string{wantAfter})
			})
		}
	}
}

func withPrefix(lines []string, prefix string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

func containing(lines []string, s string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}

// An owner changing a host from simple to loadbalanced and back does it in one batch: a backend
// applying it atomically never leaves the name empty.
func TestTypeChangeInOneBatch(t *testing.T) {
	z := newZone()
	a := &owner{id: "a"}
	step(t, z, a, eps(rec("app.example.com", "A", 60, "1.1.1.1")))
	res := step(t, z, a, loadbalanced("IE", "aaaaaa-111111", "1.1.1.1", false))
	expectLines(t, "deleted", withPrefix(lines(res.Changes.Delete), "app.example.com "), []string{"app.example.com A 60 1.1.1.1"})
	expectLines(t, "created", withPrefix(lines(res.Changes.Create), "app.example.com "), []string{"app.example.com CNAME 300 klb.app.example.com"})
	res = step(t, z, a, eps(rec("app.example.com", "A", 60, "1.1.1.1")))
	expectLines(t, "deleted", withPrefix(lines(res.Changes.Delete), "app.example.com "), []string{"app.example.com CNAME 300 klb.app.example.com"})
	expectLines(t, "created", withPrefix(lines(res.Changes.Create), "app.example.com "), []string{"app.example.com A 60 1.1.1.1"})
	expectLines(t, "records", z.records(), []string{"app.example.com A 60 1.1.1.1"})
}

// Owners running Kuadrant's dns-operator do not say what they want. Their targets are kept, ours
// replaced; a record they win keeps its value.
func TestKuadrantOwners(t *testing.T) {
	shared := rec("s.example.com", "A", 60, "1.1.1.1", "9.9.9.9")
	cname := rec("www.example.com", "CNAME", 300, "lb-k.example.net")
	z := newZone(shared, kuadrantTXT("k", shared), mustTXT(t, "z", rec("s.example.com", "A", 60, "1.1.1.1")),
		cname, kuadrantTXT("k", cname))
	o := &owner{id: "z", published: eps(rec("s.example.com", "A", 60, "1.1.1.1"))}
	res := step(t, z, o, eps(rec("s.example.com", "A", 60, "2.2.2.2"), rec("www.example.com", "CNAME", 60, "lb-z.example.net")))
	expectLines(t, "records", z.records(), []string{"s.example.com A 60 2.2.2.2,9.9.9.9", "www.example.com CNAME 300 lb-k.example.net"})
	expectConflicts(t, res,
		Conflict{DNSName: "www.example.com", RecordType: "CNAME", Field: FieldTTL, Ours: "60", Published: "300", WinnerOwner: "k"},
		Conflict{DNSName: "www.example.com", RecordType: "CNAME", Field: FieldTargets, Ours: "lb-z.example.net", Published: "lb-k.example.net", WinnerOwner: "k"},
	)
	if !reflect.DeepEqual(res.Owners, []string{"k", "z"}) {
		t.Fatalf("owners %v", res.Owners)
	}
	step(t, z, o, nil)
	expectLines(t, "records", z.records(), []string{"s.example.com A 60 9.9.9.9", "www.example.com CNAME 300 lb-k.example.net"})
	expectLines(t, "claims", z.claims(), []string{"k s.example.com A ", "k www.example.com CNAME "})
}

// A cluster that ran Kuadrant's dns-operator under the same owner ID finds its own TXTs without a
// wish; its previous publication says which targets were its own.
func TestMigrationFromKuadrant(t *testing.T) {
	shared := rec("s.example.com", "A", 60, "1.1.1.1", "9.9.9.9")
	z := newZone(shared, kuadrantTXT("k", shared), kuadrantTXT("z", shared))
	o := &owner{id: "z", published: eps(rec("s.example.com", "A", 60, "1.1.1.1"))}
	res := step(t, z, o, eps(rec("s.example.com", "A", 60, "2.2.2.2")))
	expectLines(t, "records", z.records(), []string{"s.example.com A 60 2.2.2.2,9.9.9.9"})
	if len(res.Changes.UpdateNew) != 2 {
		t.Fatalf("want the record and our claim updated:\n%s", describeChanges(res.Changes))
	}
}

// Only expired owners hold a record, and we leave: it keeps their targets.
func TestExpiredOwnersKeepLastTargets(t *testing.T) {
	z := newZone()
	a, b := &owner{id: "a"}, &owner{id: "b"}
	step(t, z, a, eps(rec("s.example.com", "A", 60, "1.1.1.1")))
	step(t, z, b, eps(rec("s.example.com", "A", 60, "2.2.2.2")))
	step(t, z, b, nil, "a")
	expectLines(t, "records", z.records(), []string{"s.example.com A 60 1.1.1.1"})
	expectLines(t, "claims", z.claims(), []string{"a s.example.com A "})
}

func TestWildcard(t *testing.T) {
	z := newZone()
	a, b := &owner{id: "a"}, &owner{id: "b"}
	step(t, z, a, eps(rec("*.apps.example.com", "A", 60, "1.1.1.1")))
	step(t, z, b, eps(rec("*.apps.example.com", "A", 60, "2.2.2.2")))
	expectLines(t, "records", z.records(), []string{"*.apps.example.com A 60 1.1.1.1,2.2.2.2"})
	var names []string
	for _, e := range z.endpoints() {
		if e.RecordType == "TXT" {
			names = append(names, e.DNSName)
		}
	}
	expectLines(t, "TXT names", names, []string{"kuadrant-264yzvyj-a-wildcard.apps.example.com", "kuadrant-2i9rupgs-a-wildcard.apps.example.com"})
}

func TestInvalidInput(t *testing.T) {
	ok := rec("a.example.com", "A", 60, "1.1.1.1")
	for _, tc := range []struct {
		name string
		in   Input
	}{
		{"no owner", Input{ZoneName: "example.com", Desired: eps(ok)}},
		{"owner with a comma", Input{OwnerID: "a,b", ZoneName: "example.com"}},
		{"no zone", Input{OwnerID: "a", Desired: eps(ok)}},
		{"expired self", Input{OwnerID: "a", ZoneName: "example.com", Expired: []string{"a"}}},
		{"nil desired", Input{OwnerID: "a", ZoneName: "example.com", Desired: eps(nil)}},
		{"outside the zone", Input{OwnerID: "a", ZoneName: "example.com", Desired: eps(rec("a.example.org", "A", 60, "1.1.1.1"))}},
		{"suffix but not a subdomain", Input{OwnerID: "a", ZoneName: "example.com", Desired: eps(rec("badexample.com", "A", 60, "1.1.1.1"))}},
		{"empty label", Input{OwnerID: "a", ZoneName: "example.com", Desired: eps(rec("a..example.com", "A", 60, "1.1.1.1"))}},
		{"wildcard label", Input{OwnerID: "a", ZoneName: "example.com", Desired: eps(rec("wildcard.example.com", "A", 60, "1.1.1.1"))}},
		{"TXT", Input{OwnerID: "a", ZoneName: "example.com", Desired: eps(rec("a.example.com", "TXT", 60, "x"))}},
		{"MX", Input{OwnerID: "a", ZoneName: "example.com", Desired: eps(rec("a.example.com", "MX", 60, "10 mx"))}},
		{"CNAME at the apex", Input{OwnerID: "a", ZoneName: "example.com", Desired: eps(rec("example.com", "CNAME", 60, "lb.example.net"))}},
		{"no targets", Input{OwnerID: "a", ZoneName: "example.com", Desired: eps(rec("a.example.com", "A", 60))}},
		{"target with a comma", Input{OwnerID: "a", ZoneName: "example.com", Desired: eps(rec("a.example.com", "CNAME", 60, "a,b"))}},
		{"target too long for a TXT", Input{OwnerID: "a", ZoneName: "example.com", Desired: eps(rec("a.example.com", "CNAME", 60, strings.Repeat("x", 230)))}},
		{"negative TTL", Input{OwnerID: "a", ZoneName: "example.com", Desired: eps(rec("a.example.com", "A", -1, "1.1.1.1"))}},
		{"twice", Input{OwnerID: "a", ZoneName: "example.com", Desired: eps(ok, rec("A.example.com.", "A", 300, "2.2.2.2"))}},
		{"CNAME beside A", Input{OwnerID: "a", ZoneName: "example.com", Desired: eps(ok, rec("a.example.com", "CNAME", 60, "lb.example.net"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res, err := Plan(tc.in); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Plan = %v, %v; want ErrInvalid", res, err)
			}
		})
	}
}

// Output is sorted, whatever order the zone and the wishes come in.
func TestDeterministicOrder(t *testing.T) {
	desired := loadbalanced("IE", "aaaaaa-111111", "1.1.1.1", true)
	var first *Result
	for i := 0; i < 20; i++ {
		d := append([]*v1alpha1.Endpoint(nil), desired...)
		// Rotate the input by i.
		d = append(d[i%len(d):], d[:i%len(d)]...)
		res, err := Plan(Input{OwnerID: "a", ZoneName: "example.com", Desired: d})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = res
			continue
		}
		if !reflect.DeepEqual(res, first) {
			t.Fatalf("rotation %d plans differently", i)
		}
	}
	var keys []v1alpha1.EndpointKey
	for _, e := range first.Changes.Create {
		keys = append(keys, e.Key())
	}
	for i := 1; i < len(keys); i++ {
		if !keyLess(keys[i-1], keys[i]) {
			t.Fatalf("creates not sorted: %v", keys)
		}
	}
}

// Plan reads its input and never writes it: callers pass the zone they read and their status.
func TestPlanKeepsItsInput(t *testing.T) {
	a, b := &owner{id: "a"}, &owner{id: "b"}
	z := newZone(rec("h.example.com", "A", 300, "9.9.9.9"))
	step(t, z, a, append(loadbalanced("IE", "aaaaaa-111111", "1.1.1.1", true), rec("s.example.com", "A", 60, "1.1.1.1")))
	step(t, z, b, append(loadbalanced("US", "bbbbbb-222222", "2.2.2.2", true), rec("s.example.com", "A", 300, "2.2.2.2")))
	in := Input{
		OwnerID:  "a",
		ZoneName: "example.com",
		Current:  z.endpoints(),
		Previous: a.published,
		Desired:  append(loadbalanced("GB", "aaaaaa-111111", "1.1.1.3", true), rec("h.example.com", "A", 60, "1.1.1.1")),
		Expired:  []string{"b"},
	}
	before := deepCopyInput(in)
	if _, err := Plan(in); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, before) {
		t.Fatal("Plan changed its input")
	}
}

func deepCopyInput(in Input) Input {
	cp := func(eps []*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
		out := make([]*v1alpha1.Endpoint, len(eps))
		for i, e := range eps {
			out[i] = e.DeepCopy()
		}
		return out
	}
	in.Current, in.Previous, in.Desired = cp(in.Current), cp(in.Previous), cp(in.Desired)
	in.Expired = append([]string(nil), in.Expired...)
	return in
}

// A TXT in the place of our claim that is not our claim (hand-made, or an owner whose ID hashes
// like ours): we can claim nothing there, so we write nothing and say why.
func TestClaimNameTaken(t *testing.T) {
	impostor := &v1alpha1.Endpoint{DNSName: registry.TXTName("a", "A", "x.example.com"), RecordType: "TXT",
		Targets: v1alpha1.Targets{registry.FormatValue(map[string]string{"owner": "b", "version": "1"})}}
	z := newZone(impostor)
	res := step(t, z, &owner{id: "a"}, eps(rec("x.example.com", "A", 60, "1.1.1.1")))
	if !res.Changes.Empty() || len(res.Published) != 0 {
		t.Fatalf("wrote without a claim:\n%s", describeChanges(res.Changes))
	}
	expectConflicts(t, res, Conflict{DNSName: "x.example.com", RecordType: "A", Field: FieldOwnership,
		Ours:      `"heritage=external-dns,external-dns/claim-targets=1.1.1.1,external-dns/claim-ttl=60,external-dns/owner=a,external-dns/version=1"`,
		Published: `"heritage=external-dns,external-dns/owner=b,external-dns/version=1"`})
}

// A Kuadrant owner claims a record that is not published: its wish cannot be read, so ours is
// published; then the record as published is its presumed wish, which keeps it as it is.
func TestKuadrantClaimWithoutRecord(t *testing.T) {
	cname := rec("www.example.com", "CNAME", 300, "lb-k.example.net").WithSetIdentifier("IE").WithProviderSpecific("weight", "100")
	z := newZone(kuadrantTXT("k", cname))
	ours := rec("www.example.com", "CNAME", 60, "lb-z.example.net").WithSetIdentifier("IE").WithProviderSpecific("weight", "120")
	res := step(t, z, &owner{id: "z"}, eps(ours))
	expectConflicts(t, res)
	expectLines(t, "records", z.records(), []string{"www.example.com CNAME [IE] 60 lb-z.example.net {weight=120}"})
}

// An owner that claims nothing at a name does not touch its records, even where the rules would
// publish another owner's unpublished claim.
func TestNoPartyNoChange(t *testing.T) {
	claimOnly := mustTXT(t, "b", rec("x.example.com", "AAAA", 60, "2001:db8::2"))
	impostor := &v1alpha1.Endpoint{DNSName: registry.TXTName("a", "A", "x.example.com"), RecordType: "TXT", Targets: v1alpha1.Targets{`"random"`}}
	z := newZone(claimOnly, impostor)
	res := step(t, z, &owner{id: "a"}, eps(rec("x.example.com", "A", 60, "1.1.1.1")))
	if !res.Changes.Empty() {
		t.Fatalf("a changed a name it claims nothing at:\n%s", describeChanges(res.Changes))
	}
	if len(res.Conflicts) != 1 || res.Conflicts[0].Field != FieldOwnership {
		t.Fatalf("conflicts %+v", res.Conflicts)
	}
}

// Members of one weighted group (one name and type, a set identifier each) share one TTL, as Route
// 53 requires and Cloud DNS holds it: the lowest claimant's. Each owner moves only its own member; the
// other's TTL is a conflict; once the winner leaves, the next owner's TTL is the group's.
func TestWeightedMembersShareOneTTL(t *testing.T) {
	z := newZone()
	a, b := &owner{id: "a"}, &owner{id: "b"}
	member := func(id string, ttl v1alpha1.TTL, target string) []*v1alpha1.Endpoint {
		return eps(rec("ie.klb.app.example.com", "CNAME", ttl, target).WithSetIdentifier(id).WithProviderSpecific("weight", "120"))
	}
	step(t, z, a, member("leaf-a", 30, "leaf-a.klb.app.example.com"))
	res := step(t, z, b, member("leaf-b", 60, "leaf-b.klb.app.example.com"))
	if len(res.Conflicts) != 1 || res.Conflicts[0].Field != FieldTTL || res.Conflicts[0].WinnerOwner != "a" || res.Conflicts[0].Published != "30" {
		t.Fatalf("b's member of a's group: conflicts %+v, want one recordTTL conflict won by a at 30", res.Conflicts)
	}
	ttls := func() map[string]v1alpha1.TTL {
		out := map[string]v1alpha1.TTL{}
		for _, e := range z.endpoints() {
			if e.RecordType == "CNAME" {
				out[e.SetIdentifier] = e.RecordTTL
			}
		}
		return out
	}
	if got := ttls(); got["leaf-a"] != 30 || got["leaf-b"] != 30 {
		t.Fatalf("the group's TTLs: %v, want 30 for both", got)
	}
	step(t, z, a, nil) // the winner leaves
	res = step(t, z, b, member("leaf-b", 60, "leaf-b.klb.app.example.com"))
	if got := ttls(); len(res.Conflicts) != 0 || got["leaf-b"] != 60 || len(got) != 1 {
		t.Fatalf("after the winner left: %v, conflicts %+v", got, res.Conflicts)
	}
}

// The attack of issue 22: a newcomer with owner ID "000000" wants another target (and a huge TTL)
// at a name whose CNAME another owner published. The published value stays while its owner wants
// it; the newcomer keeps its claim, publishes nothing of its own there, and is told who won.
func TestIncumbentKeepsTheName(t *testing.T) {
	z := newZone()
	victim, attacker := &owner{id: "team-a"}, &owner{id: "000000"}
	good := eps(rec("www.example.com", "CNAME", 60, "lb.example.net"))
	evil := eps(rec("www.example.com", "CNAME", 2147483647, "evil.example.net"))
	step(t, z, victim, good)
	for i := 0; i < 2; i++ {
		res := step(t, z, attacker, evil)
		expectConflicts(t, res,
			Conflict{DNSName: "www.example.com", RecordType: "CNAME", Field: FieldTTL, Ours: "2147483647", Published: "60", WinnerOwner: "team-a"},
			Conflict{DNSName: "www.example.com", RecordType: "CNAME", Field: FieldTargets, Ours: "evil.example.net", Published: "lb.example.net", WinnerOwner: "team-a"})
		expectConflicts(t, step(t, z, victim, good))
	}
	expectLines(t, "records", z.records(), []string{"www.example.com CNAME 60 lb.example.net"})

	// Nor does a CNAME from a lower owner take a name whose A is published.
	z = newZone()
	step(t, z, victim, eps(rec("app.example.com", "A", 60, "192.0.2.1")))
	res := step(t, z, attacker, eps(rec("app.example.com", "CNAME", 60, "evil.example.net")))
	expectConflicts(t, res, Conflict{DNSName: "app.example.com", RecordType: "CNAME", Field: FieldType, Ours: "CNAME", Published: "A", WinnerOwner: "team-a"})
	expectConflicts(t, step(t, z, victim, eps(rec("app.example.com", "A", 60, "192.0.2.1"))))
	expectLines(t, "records", withPrefix(z.records(), "app.example.com "), []string{"app.example.com A 60 192.0.2.1"})
}

// When the incumbent changes its wish or leaves, no one holds the published value any more: the
// lowest remaining claimant's wish is published, whoever plans next.
func TestIncumbentLeavesLowestRemainingWins(t *testing.T) {
	z := newZone()
	m, hi, lo := &owner{id: "m"}, &owner{id: "z"}, &owner{id: "000000"}
	want := func(target string) []*v1alpha1.Endpoint { return eps(rec("www.example.com", "CNAME", 60, target)) }
	step(t, z, m, want("m.example.net"))
	step(t, z, hi, want("z.example.net"))
	step(t, z, lo, want("lo.example.net"))
	expectLines(t, "records", z.records(), []string{"www.example.com CNAME 60 m.example.net"})

	// The incumbent changes its wish: it holds nothing published now, and the lowest wins.
	step(t, z, m, want("m2.example.net"))
	expectLines(t, "records after the incumbent changed its wish", z.records(), []string{"www.example.com CNAME 60 lo.example.net"})
	// The new incumbent stays while it wants its value, the higher owners' wishes notwithstanding.
	step(t, z, m, want("m2.example.net"))
	step(t, z, hi, want("z.example.net"))
	expectLines(t, "records", z.records(), []string{"www.example.com CNAME 60 lo.example.net"})

	// The incumbent's record is deleted: its own last batch publishes the lowest remaining wish.
	step(t, z, lo, nil)
	expectLines(t, "records after the incumbent left", z.records(), []string{"www.example.com CNAME 60 m2.example.net"})
	res := step(t, z, hi, want("z.example.net"))
	expectConflicts(t, res, Conflict{DNSName: "www.example.com", RecordType: "CNAME", Field: FieldTargets, Ours: "z.example.net", Published: "m2.example.net", WinnerOwner: "m"})
}

// A CNAME whose targets are merged (one owner wants several) holds only its TTL: the incumbent
// keeps it while the name stays merged. Where the incumbent changes to one target and every wish is
// then for one, nobody wants the merged value exactly, so the lowest owner's target and TTL win,
// and an owner that merges targets in again finds that owner the incumbent. Which TTL the end
// holds depends on whether the change to one target or the join applied first, as when both plan
// from one view (TestConcurrentPlanners, seed 1796220101474977902).
func TestIncumbentMergedTargets(t *testing.T) {
	for _, tc := range []struct {
		order       string
		changeFirst bool
		end         string
	}{
		{"change first", true, "n0.example.com CNAME 60 lb1.example.net,lb2.example.net,lb3.example.net"},
		{"join first", false, "n0.example.com CNAME 300 lb1.example.net,lb2.example.net,lb3.example.net"},
	} {
		t.Run(tc.order, func(t *testing.T) {
			z := newZone()
			o1, o2, o3 := &owner{id: "o1"}, &owner{id: "o2"}, &owner{id: "o3"}
			want := func(ttl v1alpha1.TTL, targets ...string) []*v1alpha1.Endpoint {
				return eps(rec("n0.example.com", "CNAME", ttl, targets...))
			}
			step(t, z, o3, want(300, "lb1.example.net", "lb2.example.net"))
			step(t, z, o1, want(60, "lb2.example.net"))
			expectLines(t, "records", z.records(), []string{"n0.example.com CNAME 300 lb1.example.net,lb2.example.net"})

			wishes := map[*owner][]*v1alpha1.Endpoint{
				o1: want(60, "lb2.example.net"),
				o2: want(60, "lb1.example.net", "lb3.example.net"),
				o3: want(300, "lb2.example.net"),
			}
			change := func() { step(t, z, o3, wishes[o3]) }
			join := func() { step(t, z, o2, wishes[o2]) }
			if tc.changeFirst {
				change()
				expectLines(t, "records after the incumbent changed to one target", z.records(), []string{"n0.example.com CNAME 60 lb2.example.net"})
				join()
			} else {
				join()
				change()
			}
			for _, o := range []*owner{o1, o2, o3} {
				if res := step(t, z, o, wishes[o]); !res.Changes.Empty() {
					t.Fatalf("%s still writes:\n%s", o.id, describeChanges(res.Changes))
				}
			}
			expectLines(t, "records", z.records(), []string{tc.end})
		})
	}
}

// Two clusters, each planning for its own owner over the one zone (neither knows the other's
// requests), reach the same winner in either order: the incumbent is read from the zone. The loser
// names the winner, and neither writes once settled.
func TestIncumbentTwoClustersAgree(t *testing.T) {
	for _, order := range []string{"ab", "ba"} {
		t.Run(order, func(t *testing.T) {
			z := newZone()
			owners := map[byte]*owner{'a': {id: "aaaaaa"}, 'b': {id: "000000"}}
			target := map[byte]string{'a': "a.example.net", 'b': "b.example.net"}
			w, l := order[0], order[1]
			results := map[byte]*Result{}
			for i := 0; i < 3; i++ {
				for _, o := range []byte(order) {
					results[o] = step(t, z, owners[o], eps(rec("www.example.com", "CNAME", 60, target[o])))
					if i == 2 && !results[o].Changes.Empty() {
						t.Fatalf("%s still writes:\n%s", owners[o].id, describeChanges(results[o].Changes))
					}
				}
			}
			expectLines(t, "records", z.records(), []string{"www.example.com CNAME 60 " + target[w]})
			expectConflicts(t, results[w])
			expectConflicts(t, results[l], Conflict{DNSName: "www.example.com", RecordType: "CNAME", Field: FieldTargets,
				Ours: target[l], Published: target[w], WinnerOwner: owners[w].id})
			// Both plans over one view of the zone agree on the winner.
			view := z.endpoints()
			for _, o := range []byte("ab") {
				res, err := Plan(Input{OwnerID: owners[o].id, ZoneName: "example.com", Current: view, Previous: owners[o].published,
					Desired: eps(rec("www.example.com", "CNAME", 60, target[o]))})
				if err != nil {
					t.Fatal(err)
				}
				if !res.Changes.Empty() || o == l && (len(res.Conflicts) != 1 || res.Conflicts[0].WinnerOwner != owners[w].id) {
					t.Fatalf("%s over the shared view: conflicts %+v\n%s", owners[o].id, res.Conflicts, describeChanges(res.Changes))
				}
			}
		})
	}
}

// A gone owner's record never decides which kind a name publishes over a live owner's, however
// low its owner ID: where nobody holds the name (the gone owner's CNAME, its lease expired), a live
// owner's A takes it; the gone owner's claim stays with its lost record, as every loser's does.
func TestGoneOwnerNeverDecidesKind(t *testing.T) {
	z := newZone()
	gone, live := &owner{id: "0"}, &owner{id: "z"}
	step(t, z, gone, eps(rec("app.example.com", "CNAME", 60, "old.example.net")))
	res := step(t, z, live, eps(rec("app.example.com", "A", 60, "192.0.2.1")), "0")
	expectConflicts(t, res)
	expectLines(t, "records", withPrefix(z.records(), "app.example.com "), []string{"app.example.com A 60 192.0.2.1"})
	// While "0" is live, its CNAME holds the name.
	z = newZone()
	step(t, z, gone, eps(rec("app.example.com", "CNAME", 60, "old.example.net")))
	res = step(t, z, live, eps(rec("app.example.com", "A", 60, "192.0.2.1")))
	expectConflicts(t, res, Conflict{DNSName: "app.example.com", RecordType: "A", Field: FieldType, Ours: "A", Published: "CNAME", WinnerOwner: "0"})
}

// In a zone that keeps ownership TXTs without a TTL (an authoritative record, as Kuadrant writes
// it), claims are written with TTL 0 whatever the record's TTL, the records keep theirs, and a claim
// written with a TTL before is rewritten without, the record left alone. The zone then settles.
func TestClaimsWithoutTTL(t *testing.T) {
	app := rec("app.example.com", "A", 300, "10.0.0.1")
	old := mustTXT(t, "a", app) // TTL 300: written where claims take the record's TTL
	z := newZone(app, old)
	a := &owner{id: "a", published: eps(app), claimsWithoutTTL: true}
	res := step(t, z, a, eps(app))
	if len(res.Changes.Create)+len(res.Changes.Delete) != 0 || len(res.Changes.UpdateNew) != 1 {
		t.Fatalf("want the claim rewritten alone:\n%s", describeChanges(res.Changes))
	}
	noTTL := old.DeepCopy()
	noTTL.RecordTTL = 0
	expectLines(t, "rewritten", lines(res.Changes.UpdateNew), lines(eps(noTTL)))

	b := &owner{id: "b", claimsWithoutTTL: true}
	res = step(t, z, b, eps(rec("app.example.com", "A", 300, "10.0.0.2"), rec("b.example.com", "CNAME", 60, "lb.example.net")))
	expectLines(t, "zone", lines(z.endpoints()), []string{
		"app.example.com A 300 10.0.0.1,10.0.0.2",
		"b.example.com CNAME 60 lb.example.net",
		"kuadrant-264yzvyj-a-app.example.com TXT 0 \"heritage=external-dns,external-dns/owner=a,external-dns/version=1\"",
		"kuadrant-2i9rupgs-a-app.example.com TXT 0 \"heritage=external-dns,external-dns/claim-targets=10.0.0.2,external-dns/claim-ttl=300,external-dns/owner=b,external-dns/version=1\"",
		"kuadrant-2i9rupgs-cname-b.example.com TXT 0 \"heritage=external-dns,external-dns/owner=b,external-dns/version=1\"",
	})
	expectConflicts(t, res)
}
