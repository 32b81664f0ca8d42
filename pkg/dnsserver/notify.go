package dnsserver

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/pkg/goroutine"
)

const notifyAttempts = 5

// notifyKey is the key that signs a zone's NOTIFY messages: its first transfer key, if any.
func (s *Server) notifyKey(origin string) *tsigKey {
	if keys := s.transferKeys[origin]; len(keys) > 0 {
		return s.keys[keys[0]]
	}
	return nil
}

// kickNotify tells a zone's notifier that the zone changed, starting it on first use. Called with
// s.mu held.
func (s *Server) kickNotify(e *zoneEntry) {
	if len(e.secondaries) == 0 {
		return
	}
	if !e.notifier {
		e.notifier = true
		s.wg.Add(1)
		go s.notifier(e)
	}
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// notifier sends a zone's NOTIFYs, one round per change. A change during a round ends it: the next
// round announces the newer serial, and secondaries only care about the latest.
func (s *Server) notifier(e *zoneEntry) {
	defer s.wg.Done()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-e.removed:
			return
		case <-e.wake:
		}
		s.mu.Lock()
		snap, secondaries := e.snap.Load(), e.secondaries
		s.mu.Unlock()
		ctx, cancel := context.WithCancel(s.ctx)
		go func() {
			select {
			case <-e.removed:
			case <-ctx.Done():
			}
			cancel()
		}()
		func() {
			// A round that panics is logged and counted; the next change starts another.
			defer goroutine.Recover(goroutine.DNSServer, s.log.WithValues("zone", snap.origin), nil)
			defer cancel()
			s.notify(ctx, e.wake, snap.origin, snap.soaRR, secondaries)
		}()
	}
}

// notify tells every secondary of a zone that it changed (RFC 1996), retrying with backoff until
// each acknowledges, the attempts run out, or a newer change arrives on wake (left there for the
// caller). Secondaries then ask for the SOA and transfer.
func (s *Server) notify(ctx context.Context, wake chan struct{}, origin string, soa dns.RR, secondaries []string) {
	serial := soa.(*dns.SOA).Serial
	pending := slices.Clone(secondaries)
	errs := make([]error, len(pending))
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return
			case <-wake:
				wake <- struct{}{}
				return
			case <-time.After(s.notifyTimeout << (attempt - 1)):
			}
		}
		var wg sync.WaitGroup
		for i, addr := range pending {
			wg.Go(func() { errs[i] = s.sendNotify(ctx, origin, soa, addr) })
		}
		wg.Wait()
		var failed []string
		for i, err := range errs[:len(pending)] {
			if err == nil {
				continue
			}
			if attempt+1 == notifyAttempts {
				s.stats.notifyFailed.Add(1)
				s.log.Error(err, "NOTIFY failed", "zone", origin, "secondary", pending[i], "serial", serial)
				continue
			}
			failed = append(failed, pending[i])
		}
		pending = failed
	}
}

func (s *Server) sendNotify(ctx context.Context, origin string, soa dns.RR, addr string) error {
	m := new(dns.Msg)
	m.SetNotify(origin)
	m.Answer = []dns.RR{soa}
	c := &dns.Client{Net: "udp", Timeout: s.notifyTimeout}
	if key := s.notifyKey(origin); key != nil {
		m.SetTsig(key.name, key.algorithm, maxFudge, s.now().Unix())
		c.TsigSecret = map[string]string{key.name: key.secret}
	}
	resp, _, err := c.ExchangeContext(ctx, m, addr)
	if err != nil {
		return err
	}
	if resp.Rcode != dns.RcodeSuccess {
		return fmt.Errorf("answered %s", dns.RcodeToString[resp.Rcode])
	}
	return nil
}
