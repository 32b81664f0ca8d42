package lease

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

func TestRecordRoundTrip(t *testing.T) {
	l := Renew("3f2c8a1e-uid", time.Unix(1_700_000_017, 0), 30*time.Second, 90*time.Second)
	rec := l.Record("example.com")
	got, ok := Parse(rec)
	if !ok || got != l {
		t.Fatalf("Parse(Record) = %+v %v, want %+v", got, ok, l)
	}
	if want := "dnspolicy-lease-" + Key(l.Holder) + ".example.com"; rec.DNSName != want {
		t.Errorf("lease record at %s, want %s", rec.DNSName, want)
	}
	moved := rec.DeepCopy()
	moved.DNSName = "dnspolicy-lease-" + Key("another") + ".example.com"
	if _, ok := Parse(moved); ok {
		t.Error("a lease record whose name is not its holder's parsed")
	}
}

// Holders renew on their own clocks, readers judge on theirs; clocks are offset and drift by up to
// maxDrift, and readers see the zone through views up to maxView old. A live holder is never judged
// expired; a dead one is judged expired by every reader within the stated bound.
func TestJudgeClocksDoNotMatter(t *testing.T) {
	const (
		renewal   = 30 * time.Second
		duration  = 90 * time.Second
		tolerance = 10 * time.Second
		maxDrift  = 0.01
		maxView   = 10 * time.Second
		step      = time.Second
	)
	// The bound a dead holder is withdrawn within, in real time, from its last renewal.
	wait := float64(duration + tolerance)
	bound := time.Duration(wait/(1-maxDrift)) + maxView + 2*step
	rng := rand.New(rand.NewPCG(7, 11))
	for run := range 200 {
		type clock struct {
			offset time.Duration
			rate   float64
		}
		newClock := func() clock {
			return clock{offset: time.Duration(rng.Int64N(int64(time.Hour))) - 30*time.Minute, rate: 1 + maxDrift*(2*rng.Float64()-1)}
		}
		at := func(c clock, elapsed time.Duration) time.Time {
			return time.Unix(1_700_000_000, 0).Add(c.offset + time.Duration(float64(elapsed)*c.rate))
		}
		holderClock := newClock()
		readers := []clock{newClock(), newClock(), newClock()}
		judges := make([]Judge, len(readers))
		for i := range judges {
			judges[i].Tolerance = tolerance
		}
		dies := time.Duration(rng.Int64N(int64(2*time.Hour))) + time.Hour // real time of death
		// history[i] is the lease value at real second i.
		var history []string
		type record struct {
			ep *v1alpha1.Endpoint
			l  Lease
		}
		records := map[string]record{}
		var lastRenewal time.Duration
		for now := time.Duration(0); now < dies+2*bound; now += step {
			v := ""
			if now < dies {
				v = Renew("h", at(holderClock, now), renewal, duration).Record("z").Targets[0]
				if len(history) == 0 || history[len(history)-1] != v {
					lastRenewal = now
				}
			} else {
				v = history[len(history)-1]
			}
			history = append(history, v)
			for i, rc := range readers {
				lag := time.Duration(rng.Int64N(int64(maxView)))
				seen := history[max(0, len(history)-1-int(lag/step))]
				r, ok := records[seen]
				if !ok {
					r.ep = v1alpha1.NewEndpoint(RecordName("h", "z"), v1alpha1.RecordTypeTXT, TTL, seen)
					r.l, _ = Parse(r.ep)
					records[seen] = r
				}
				expired := judges[i].Judge("z", r.l, r.ep, at(rc, now)).Expired
				switch {
				case expired && now < dies:
					t.Fatalf("run %d: reader %d judged the live holder expired at %v", run, i, now)
				case !expired && now > lastRenewal+bound:
					t.Fatalf("run %d: reader %d still counts the holder, dead since %v (last renewal %v), at %v",
						run, i, dies, lastRenewal, now)
				}
			}
		}
	}
	t.Logf("%s bound for a dead holder, from its last renewal", fmt.Sprint(bound))
}

// A judge forgets the leases a read no longer finds (their holders left the zone), and keeps those of
// other zones.
func TestSurveyForgetsLeasesGone(t *testing.T) {
	var j Judge
	now := time.Unix(1000, 0)
	leases := func(zone string, holders ...string) []*v1alpha1.Endpoint {
		var eps []*v1alpha1.Endpoint
		for _, h := range holders {
			eps = append(eps, Renew(h, now, DefaultEvery, DefaultDuration).Record(zone))
		}
		return eps
	}
	survey := func(zoneKey, zone string, holders ...string) {
		eps := leases(zone, holders...)
		j.Survey(zoneKey, eps, registry.Read(eps), now)
	}
	survey("z1", "one.example", "a", "b", "c")
	survey("z2", "two.example", "a")
	if n := j.Len(); n != 4 {
		t.Fatalf("%d leases remembered, want 4", n)
	}
	survey("z1", "one.example", "a")
	if n := j.Len(); n != 2 {
		t.Errorf("b and c left z1: %d leases remembered, want 2", n)
	}
	survey("z1", "one.example")
	survey("z2", "two.example")
	if n := j.Len(); n != 0 {
		t.Errorf("every holder left: %d leases remembered, want none", n)
	}
}
