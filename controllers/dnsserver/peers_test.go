package dnsserver

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/peers"
)

// An export's version follows its records' change time, moves by a second when the content
// changes within the same second (or a record is deleted), and stays while the content does.
func TestExportVersion(t *testing.T) {
	r := &Reconciler{}
	t0 := time.Unix(1_800_000_000, 0)
	a := []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("a.z.example.com", "A", 60, "10.0.0.1")}
	b := append(a, v1alpha1.NewEndpoint("b.z.example.com", "A", 60, "10.0.0.2"))
	steps := []struct {
		eps     []*v1alpha1.Endpoint
		changed time.Time
		want    time.Time
	}{
		{a, t0, t0},
		{a, t0, t0}, // nothing changed
		{b, t0.Add(300 * time.Millisecond), t0.Add(time.Second)}, // changed within the second
		{b, t0.Add(time.Second), t0.Add(time.Second)},            // the same content again
		{a, t0.Add(time.Second), t0.Add(2 * time.Second)},        // b deleted: the time does not move
		{b, t0.Add(10 * time.Second), t0.Add(10 * time.Second)},
	}
	for i, s := range steps {
		if got := r.exportVersion("z.example.com", s.eps, s.changed); !got.Equal(s.want) {
			t.Errorf("step %d: version %v, want %v", i, got.Unix(), s.want.Unix())
		}
	}
	if got := r.exportVersion("other.example.com", a, t0); !got.Equal(t0) {
		t.Errorf("zones share versions: %v", got.Unix())
	}
}

// The Peers condition names stale and failing peers with their reasons, and never a time, so that
// it changes only when a peer's state does.
func TestPeersCondition(t *testing.T) {
	p := func(addr string) peers.Peer { return peers.Peer{Zone: "z.example.com", Addr: addr} }
	pulled := time.Unix(1_800_000_000, 0)
	live := peers.PeerStatus{Peer: p("10.0.0.2:53"), LastPull: pulled, Serial: 7, Records: 10}
	failing := peers.PeerStatus{Peer: p("10.0.0.3:53"), LastPull: pulled, Error: "unreachable: dial tcp 10.0.0.3:53: connect: connection refused"}
	stale := peers.PeerStatus{Peer: p("10.0.0.4:53"), LastPull: pulled, Stale: true, Error: (&peers.PullError{Reason: peers.ReasonTSIG, Err: errors.New("dns: bad signature")}).Error()}
	wedged := peers.PeerStatus{Peer: p("10.0.0.5:53"), LastPull: pulled, Stale: true}
	never := peers.PeerStatus{Peer: p("10.0.0.6:53")}

	c := peersCondition("z.example.com", []peers.PeerStatus{live, failing})
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonPeersLive || !strings.Contains(c.Message, "10.0.0.3:53 (unreachable") || strings.Contains(c.Message, "10.0.0.2") {
		t.Errorf("live with one failing pull: %+v", c)
	}
	c = peersCondition("z.example.com", []peers.PeerStatus{live, stale, wedged, never})
	for _, want := range []string{"3 of 4 peers", "10.0.0.4:53 (tsig: dns: bad signature)", "10.0.0.5:53 (its lease stopped changing)", "10.0.0.6:53 (never pulled: not yet)"} {
		if c.Status != metav1.ConditionFalse || c.Reason != ReasonPeerStale || !strings.Contains(c.Message, want) {
			t.Errorf("stale: %+v, want %q in the message", c, want)
		}
	}
	// A peer refused for what its export claims is named with why, and is no failing pull.
	thief := peers.PeerStatus{Peer: p("10.0.0.7:53"), LastPull: pulled, Refused: true,
		Error: "claimed: the export claims owner o1, which peer 10.0.0.2:53 claimed first"}
	r := peersCondition("z.example.com", []peers.PeerStatus{live, failing, thief})
	if r.Status != metav1.ConditionFalse || r.Reason != ReasonPeerRefused ||
		r.Message != "1 of 3 peers of zone z.example.com are refused, their exports not merged: 10.0.0.7:53 (claimed: the export claims owner o1, which peer 10.0.0.2:53 claimed first)" {
		t.Errorf("refused: %+v", r)
	}
	if r := peersCondition("z.example.com", []peers.PeerStatus{live, stale, thief}); r.Reason != ReasonPeerStale || !strings.Contains(r.Message, "; 1 of 3 peers of zone z.example.com are refused") {
		t.Errorf("stale and refused: %+v", r)
	}
	live.LastPull, live.Serial = pulled.Add(time.Minute), 8
	if again := peersCondition("z.example.com", []peers.PeerStatus{live, stale, wedged, never}); again.Message != c.Message {
		t.Errorf("a later pull changed the message:\n%s\n%s", again.Message, c.Message)
	}
}
