//go:build integration

package dnsrecord_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers/inmemory"
)

func keyOf(cl *cluster, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: cl.ns, Name: name}
}

// ownedRecord creates a record with an explicit owner ID, so the test can name the winner of a
// conflict in the loser's status.
func (cl *cluster) ownedRecord(t *testing.T, owner, host string, eps ...*v1alpha1.Endpoint) {
	t.Helper()
	r := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: cl.ns},
		Spec: v1alpha1.DNSRecordSpec{
			OwnerID: owner, RootHost: host, ProviderRef: &v1alpha1.ProviderRef{Name: "provider"}, Endpoints: eps,
		},
	}
	if err := cl.c.Create(t.Context(), r); err != nil {
		t.Fatal(err)
	}
}

// conflictCase is two owners with different wishes for one thing.
type conflictCase struct {
	name   string
	host   string
	winner []*v1alpha1.Endpoint // owner-b's, published first (the incumbent)
	loser  []*v1alpha1.Endpoint // owner-a's, the lower owner ID, joining later
	field  string               // what the loser reports
	// loserReady is the loser's Ready status: True when every record key it wants is published
	// (with the winner's value for the shared thing), False when one is not there at all.
	loserReady metav1.ConditionStatus
	published  []string // the zone's records while both are present
	after      []string // the zone's records once the winner left
}

// Each conflict converges to the value published first, though the owner joining later has the
// lower owner ID (incumbency: a chosen ID such as 000000 takes nothing), both owners stop writing,
// the loser says so (Conflicted=True naming the field and the winner; Ready says whether its
// records are published), and the loser's value takes over when the winner leaves.
func TestConflictsEnd(t *testing.T) {
	const z = "conflict.example.com"
	host := func(s string) string { return s + "." + z }
	cases := []conflictCase{
		{
			name:       "different default geo",
			host:       host("geo"),
			winner:     lbTree(host("geo"), "IE", 120, true, "aaaaaa-111111", "10.2.0.1"),
			loser:      lbTree(host("geo"), "US", 120, true, "bbbbbb-222222", "10.2.0.2"),
			field:      "targets",
			loserReady: metav1.ConditionTrue,
			published: []string{
				"aaaaaa-111111.klb.geo.conflict.example.com A 60 10.2.0.1",
				"bbbbbb-222222.klb.geo.conflict.example.com A 60 10.2.0.2",
				"geo.conflict.example.com CNAME 300 klb.geo.conflict.example.com",
				"ie.klb.geo.conflict.example.com CNAME 60 aaaaaa-111111.klb.geo.conflict.example.com set=aaaaaa-111111.klb.geo.conflict.example.com",
				"klb.geo.conflict.example.com CNAME 300 ie.klb.geo.conflict.example.com set=IE",
				"klb.geo.conflict.example.com CNAME 300 ie.klb.geo.conflict.example.com set=default",
				"klb.geo.conflict.example.com CNAME 300 us.klb.geo.conflict.example.com set=US",
				"us.klb.geo.conflict.example.com CNAME 60 bbbbbb-222222.klb.geo.conflict.example.com set=bbbbbb-222222.klb.geo.conflict.example.com",
			},
			after: []string{
				"bbbbbb-222222.klb.geo.conflict.example.com A 60 10.2.0.2",
				"geo.conflict.example.com CNAME 300 klb.geo.conflict.example.com",
				"klb.geo.conflict.example.com CNAME 300 us.klb.geo.conflict.example.com set=US",
				"klb.geo.conflict.example.com CNAME 300 us.klb.geo.conflict.example.com set=default",
				"us.klb.geo.conflict.example.com CNAME 60 bbbbbb-222222.klb.geo.conflict.example.com set=bbbbbb-222222.klb.geo.conflict.example.com",
			},
		},
		{
			name:       "different TTL on a shared record",
			host:       host("ttl"),
			winner:     []*v1alpha1.Endpoint{a(host("ttl"), 60, "10.3.0.1")},
			loser:      []*v1alpha1.Endpoint{a(host("ttl"), 300, "10.3.0.2")},
			field:      "recordTTL",
			loserReady: metav1.ConditionTrue,
			published:  []string{"ttl.conflict.example.com A 60 10.3.0.1,10.3.0.2"},
			after:      []string{"ttl.conflict.example.com A 300 10.3.0.2"},
		},
		{
			name:       "two simple CNAMEs for one host",
			host:       host("cname"),
			winner:     []*v1alpha1.Endpoint{cname(host("cname"), 60, "lb-a.example.net")},
			loser:      []*v1alpha1.Endpoint{cname(host("cname"), 60, "lb-b.example.net")},
			field:      "targets",
			loserReady: metav1.ConditionTrue,
			published:  []string{"cname.conflict.example.com CNAME 60 lb-a.example.net"},
			after:      []string{"cname.conflict.example.com CNAME 60 lb-b.example.net"},
		},
		{
			name:       "simple A against loadbalanced CNAME",
			host:       host("mixed"),
			winner:     []*v1alpha1.Endpoint{a(host("mixed"), 60, "10.4.0.1")},
			loser:      lbTree(host("mixed"), "US", 100, false, "cccccc-333333", "10.4.0.2"),
			field:      "recordType",
			loserReady: metav1.ConditionFalse,
			published: []string{
				"cccccc-333333.klb.mixed.conflict.example.com A 60 10.4.0.2",
				"klb.mixed.conflict.example.com CNAME 300 us.klb.mixed.conflict.example.com set=US",
				"mixed.conflict.example.com A 60 10.4.0.1",
				"us.klb.mixed.conflict.example.com CNAME 60 cccccc-333333.klb.mixed.conflict.example.com set=cccccc-333333.klb.mixed.conflict.example.com",
			},
			after: []string{
				"cccccc-333333.klb.mixed.conflict.example.com A 60 10.4.0.2",
				"klb.mixed.conflict.example.com CNAME 300 us.klb.mixed.conflict.example.com set=US",
				"mixed.conflict.example.com CNAME 300 klb.mixed.conflict.example.com",
				"us.klb.mixed.conflict.example.com CNAME 60 cccccc-333333.klb.mixed.conflict.example.com set=cccccc-333333.klb.mixed.conflict.example.com",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			store := inmemory.NewStore()
			cls := startClusters(t, 2, store, fastOptions(), nil)
			store.EnsureZone(z)
			for _, cl := range cls {
				cl.secret(t, z)
			}
			// The winner publishes first; the loser, with the lower owner ID, joins once it has.
			cls[0].ownedRecord(t, "owner-b", tc.host, tc.winner...)
			eventually(t, 30*time.Second, func() string {
				if w := ready(cls[0].get(t, "web")); w == nil || w.Status != metav1.ConditionTrue {
					return fmt.Sprintf("winner Ready %v", w)
				}
				return ""
			})
			cls[1].ownedRecord(t, "owner-a", tc.host, tc.loser...)

			// The loser learns it lost when its view of the zone is refreshed (publish MaxAge, 10 s).
			eventually(t, 30*time.Second, func() string {
				if msg := same(records(t, store, z), tc.published); msg != "" {
					return msg
				}
				winner, loser := cls[0].get(t, "web"), cls[1].get(t, "web")
				if w := ready(winner); w == nil || w.Status != metav1.ConditionTrue {
					return fmt.Sprintf("winner Ready %v", w)
				}
				if w := conflicted(winner); w == nil || w.Status != metav1.ConditionFalse || w.Reason != v1alpha1.ReasonNoConflict {
					return fmt.Sprintf("winner Conflicted %v, want False NoConflict", w)
				}
				if l := conflicted(loser); l == nil || l.Status != metav1.ConditionTrue || l.Reason != v1alpha1.ReasonConflicted {
					return fmt.Sprintf("loser Conflicted %v", l)
				}
				l := ready(loser)
				switch {
				case tc.loserReady == metav1.ConditionTrue && (l == nil || l.Status != metav1.ConditionTrue || l.Reason != v1alpha1.ReasonProviderSuccess):
					return fmt.Sprintf("loser Ready %v, want True ProviderSuccess: its records are published", l)
				case tc.loserReady == metav1.ConditionFalse && (l == nil || l.Status != metav1.ConditionFalse || l.Reason != v1alpha1.ReasonConflicted):
					return fmt.Sprintf("loser Ready %v, want False Conflicted: a record it wants is not published", l)
				}
				return ""
			})
			loser := cls[1].get(t, "web")
			msg := conflicted(loser).Message
			if !strings.HasPrefix(msg, "Another owner's value is published: ") || !strings.Contains(msg, "from owner owner-b") || !strings.Contains(msg, ": "+tc.field+" wants ") {
				t.Errorf("loser's Conflicted condition must name the winning owner and the field %q: %s", tc.field, msg)
			}
			if tc.loserReady == metav1.ConditionFalse {
				if m := ready(loser).Message; !strings.Contains(m, tc.host+" CNAME") || !strings.Contains(m, "from owner owner-b") {
					t.Errorf("loser's Ready must name the record that is not published and the winner: %s", m)
				}
			}
			expectEvent(t, cls[1], v1alpha1.ReasonConflicted)

			// Quiet: over at least ten further passes of each record, nobody writes.
			writes := recordBatches(t, store, z)
			p0, p1 := passes(cls[0], "web"), passes(cls[1], "web")
			eventually(t, 30*time.Second, func() string {
				if d0, d1 := passes(cls[0], "web")-p0, passes(cls[1], "web")-p1; d0 < 10 || d1 < 10 {
					return fmt.Sprintf("only %v and %v further passes", d0, d1)
				}
				return ""
			})
			if after := recordBatches(t, store, z); after != writes {
				t.Errorf("owners kept writing after converging: %d batches before, %d after:\n%s", writes, after, strings.Join(zone(t, store, z), "\n"))
			}

			// The winner leaves: the loser's wish is published with no human action. The loser's own
			// status follows once its view of the zone is refreshed (at most publish MaxAge, 10 s).
			cls[0].delete(t, "web")
			eventually(t, 25*time.Second, func() string {
				if msg := same(records(t, store, z), tc.after); msg != "" {
					return msg
				}
				if l := ready(cls[1].get(t, "web")); l == nil || l.Status != metav1.ConditionTrue {
					return fmt.Sprintf("remaining owner Ready %v", l)
				}
				if c := conflicted(cls[1].get(t, "web")); c == nil || c.Status != metav1.ConditionFalse {
					return fmt.Sprintf("remaining owner Conflicted %v, want False", c)
				}
				return ""
			})
		})
	}
}

// conflicted returns the record's Conflicted condition (nil when not set yet).
func conflicted(r *v1alpha1.DNSRecord) *metav1.Condition {
	return meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionTypeConflicted)
}

func expectEvent(t *testing.T, cl *cluster, reason string) {
	t.Helper()
	eventually(t, 10*time.Second, func() string {
		list := &corev1.EventList{}
		if err := cl.c.List(t.Context(), list, client.InNamespace(cl.ns)); err != nil {
			return err.Error()
		}
		for _, e := range list.Items {
			if e.Reason == reason && e.InvolvedObject.Name == "web" {
				return ""
			}
		}
		return fmt.Sprintf("no %s event in %s (%d events)", reason, cl.ns, len(list.Items))
	})
}
