package dnsserver

import (
	"fmt"
	"hash/maphash"
	"net/netip"
	"sync"
	"time"
)

// RateLimit configures response rate limiting (RRL) over UDP, per client prefix, as BIND's
// rate-limit and Knot's rrl module do: a spoofed flood aimed at a victim through us gets at most
// ResponsesPerSecond answers a second per prefix, and every Slip-th answer held back is sent
// truncated instead, so a real client behind that prefix retries over TCP and is answered there.
// TCP is never limited: its handshake proves the source address.
type RateLimit struct {
	// ResponsesPerSecond per prefix; 0 turns rate limiting off (BIND responses-per-second, Knot
	// rrl rate-limit).
	ResponsesPerSecond int
	// Burst is how many answers a prefix may get at once after being quiet; default ResponsesPerSecond.
	Burst int
	// Slip: every Slip-th limited answer is sent truncated, the others dropped; 0 drops them all, 1
	// truncates them all. BIND and Knot default to 2; so does the flag.
	Slip int
	// IPv4PrefixLength and IPv6PrefixLength group clients; defaults 24 and 56 (BIND's).
	IPv4PrefixLength int
	IPv6PrefixLength int
}

type rrlAction int

const (
	rrlAllow rrlAction = iota
	rrlSlip
	rrlDrop
)

// rrlShards spreads prefixes over locks, so readers on different cores rarely meet.
const rrlShards = 64

// rrlShardEntries bounds one shard's table; when full, prefixes idle for a second (their bucket
// full again, so forgetting them changes nothing) are swept.
const rrlShardEntries = 4096

type rateLimiter struct {
	rate, burst float64
	slip        int
	v4, v6      int
	seed        maphash.Seed
	shards      [rrlShards]rrlShard
}

type rrlShard struct {
	mu      sync.Mutex
	buckets map[netip.Prefix]*rrlBucket
	_       [40]byte // keep shards on their own cache lines
}

type rrlBucket struct {
	tokens float64
	last   int64 // unix nanoseconds
	held   int   // answers held back, to pick every Slip-th
}

func newRateLimiter(o RateLimit) (*rateLimiter, error) {
	if o.ResponsesPerSecond == 0 {
		return nil, nil
	}
	if o.ResponsesPerSecond < 0 || o.Burst < 0 || o.Slip < 0 || o.IPv4PrefixLength < 0 || o.IPv4PrefixLength > 32 ||
		o.IPv6PrefixLength < 0 || o.IPv6PrefixLength > 128 {
		return nil, fmt.Errorf("rate limit %+v: values must be positive and prefix lengths fit their family", o)
	}
	l := &rateLimiter{rate: float64(o.ResponsesPerSecond), burst: float64(o.Burst), slip: o.Slip,
		v4: o.IPv4PrefixLength, v6: o.IPv6PrefixLength, seed: maphash.MakeSeed()}
	if l.burst == 0 {
		l.burst = l.rate
	}
	if l.v4 == 0 {
		l.v4 = 24
	}
	if l.v6 == 0 {
		l.v6 = 56
	}
	for i := range l.shards {
		l.shards[i].buckets = map[netip.Prefix]*rrlBucket{}
	}
	return l, nil
}

// check takes one answer's token from the client's prefix and says what to do with the answer.
func (l *rateLimiter) check(client netip.Addr, now time.Time) rrlAction {
	if !client.IsValid() {
		return rrlAllow
	}
	client = client.Unmap()
	bits := l.v6
	if client.Is4() {
		bits = l.v4
	}
	p, _ := client.Prefix(bits)
	sh := &l.shards[maphash.Comparable(l.seed, p)%rrlShards]
	t := now.UnixNano()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := sh.buckets[p]
	if b == nil {
		if len(sh.buckets) >= rrlShardEntries {
			l.sweep(sh, t)
		}
		b = &rrlBucket{tokens: l.burst, last: t}
		sh.buckets[p] = b
	}
	if elapsed := t - b.last; elapsed > 0 {
		b.tokens = min(l.burst, b.tokens+float64(elapsed)*l.rate/float64(time.Second))
		b.last = t
	}
	if b.tokens >= 1 {
		b.tokens--
		return rrlAllow
	}
	b.held++
	if l.slip > 0 && b.held%l.slip == 0 {
		return rrlSlip
	}
	return rrlDrop
}

// sweep forgets prefixes whose bucket has refilled; if none has, the table starts over, which at
// worst lets the prefixes in it a fresh burst.
func (l *rateLimiter) sweep(sh *rrlShard, now int64) {
	refill := int64(l.burst / l.rate * float64(time.Second))
	for p, b := range sh.buckets {
		if now-b.last > refill {
			delete(sh.buckets, p)
		}
	}
	if len(sh.buckets) >= rrlShardEntries {
		clear(sh.buckets)
	}
}
