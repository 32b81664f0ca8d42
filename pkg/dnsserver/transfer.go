package dnsserver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"
)

const (
	// tsigReserve is room kept in a signed answer for its TSIG record (name, HMAC-SHA256 MAC, fields).
	tsigReserve = 128
	tsigFudge   = 300
	// envelopeSize bounds the records packed in one zone transfer message.
	envelopeSize = 16 * 1024
)

// tsigSigner signs the answers to a query whose TSIG verified.
type tsigSigner struct {
	key    string
	secret string
	mac    string
}

// handleSigned answers a query carrying TSIG. The query must verify against one of our keys
// (HMAC-SHA256); the answer is signed with the same key. A query that does not verify is answered
// NOTAUTH with the TSIG error (RFC 8945 5.2), so the peer learns why.
func (s *Server) handleSigned(r *responder) []byte {
	req := new(dns.Msg)
	if err := req.Unpack(r.req.msg); err != nil {
		return r.formErr()
	}
	t := req.IsTsig()
	if t == nil {
		return r.formErr()
	}
	key := dns.CanonicalName(t.Hdr.Name)
	secret, ok := s.keys[key]
	if !ok || dns.CanonicalName(t.Algorithm) != dns.HmacSHA256 {
		return tsigError(req, t, dns.RcodeBadKey, "")
	}
	if err := dns.TsigVerify(r.req.msg, secret, "", false); err != nil {
		if errors.Is(err, dns.ErrTime) {
			return tsigError(req, t, dns.RcodeBadTime, secret)
		}
		return tsigError(req, t, dns.RcodeBadSig, "")
	}
	signer := &tsigSigner{key: key, secret: secret, mac: t.MAC}
	out := r.answer(signer)
	if r.xfr != nil {
		return nil
	}
	signed, err := signer.sign(out)
	if err != nil {
		s.log.Error(err, "signing an answer", "key", key)
		return nil
	}
	return signed
}

// sign adds a TSIG record to a packed answer.
func (t *tsigSigner) sign(out []byte) ([]byte, error) {
	m := new(dns.Msg)
	if err := m.Unpack(out); err != nil {
		return nil, err
	}
	m.Compress = true
	m.SetTsig(t.key, dns.HmacSHA256, tsigFudge, time.Now().Unix())
	signed, _, err := dns.TsigGenerate(m, t.secret, t.mac, false)
	return signed, err
}

func tsigError(req *dns.Msg, t *dns.TSIG, code uint16, secret string) []byte {
	resp := new(dns.Msg)
	resp.SetRcode(req, dns.RcodeNotAuth)
	resp.Extra = nil
	// Fqdn: a garbled algorithm unpacks as "", which miekg/dns would pack with a wrong length.
	reply := &dns.TSIG{Hdr: dns.RR_Header{Name: dns.Fqdn(t.Hdr.Name), Rrtype: dns.TypeTSIG, Class: dns.ClassANY},
		Algorithm: dns.Fqdn(t.Algorithm), Fudge: t.Fudge, OrigId: req.Id, Error: code, TimeSigned: t.TimeSigned}
	mac := ""
	if code == dns.RcodeBadTime {
		// The peer's clock is off: tell it ours, signed (RFC 8945 5.2.3).
		var now [8]byte
		binary.BigEndian.PutUint64(now[:], uint64(time.Now().Unix()))
		reply.OtherLen = 6
		reply.OtherData = fmt.Sprintf("%x", now[2:])
		mac = t.MAC
	}
	resp.Extra = append(resp.Extra, reply)
	out, _, err := dns.TsigGenerate(resp, secret, mac, false)
	if err != nil {
		return nil
	}
	return out
}

// transfer is a zone transfer to stream over TCP.
type transfer struct {
	snap   *snapshot
	signer *tsigSigner
}

// transferAnswer handles AXFR and IXFR. Only peers presenting one of our TSIG keys may transfer.
// IXFR is answered with the whole zone (RFC 1995 4), or with the SOA alone when the client is
// current or asked over UDP (RFC 1995 2: it then retries over TCP).
func (r *responder) transferAnswer(snap *snapshot, signer *tsigSigner) []byte {
	q := &r.req
	if signer == nil {
		return r.finish(dns.RcodeRefused, 0)
	}
	if len(q.lname) != len(snap.apex) {
		return r.finish(dns.RcodeNotAuth, 0)
	}
	if q.qtype == dns.TypeIXFR && (!q.tcp || (q.hasIXFR && !serialNewer(snap.serial, q.ixfrSerial))) {
		r.putSet(snap.soa, headerLen, 0)
		return r.finish(dns.RcodeSuccess, flagAA)
	}
	if !q.tcp {
		return r.finish(dns.RcodeRefused, 0)
	}
	r.xfr = &transfer{snap: snap, signer: signer}
	return nil
}

// serialNewer compares serials by RFC 1982 arithmetic: is a after b?
func serialNewer(a, b uint32) bool {
	return a != b && int32(a-b) > 0
}

// stream writes the zone in envelopes, SOA first and last (RFC 5936 2.2), each signed in a chain:
// the first with the query's MAC, the next ones with the previous MAC and timers only (RFC 8945 5.3.1).
func (x *transfer) stream(w io.Writer, req *request) error {
	records := append(append([]dns.RR(nil), x.snap.transfer...), x.snap.soa.rrs[0])
	mac := x.signer.mac
	question := dns.Question{Name: x.snap.origin, Qtype: req.qtype, Qclass: dns.ClassINET}
	first := true
	for len(records) > 0 {
		n, size := 0, 0
		for n < len(records) && (n == 0 || size+dns.Len(records[n]) <= envelopeSize) {
			size += dns.Len(records[n])
			n++
		}
		m := &dns.Msg{MsgHdr: dns.MsgHdr{Id: req.id, Response: true, Authoritative: true, Opcode: dns.OpcodeQuery},
			Compress: true, Question: []dns.Question{question}, Answer: records[:n]}
		m.SetTsig(x.signer.key, dns.HmacSHA256, tsigFudge, time.Now().Unix())
		out, next, err := dns.TsigGenerate(m, x.signer.secret, mac, !first)
		if err != nil {
			return fmt.Errorf("signing a transfer of %s: %w", x.snap.origin, err)
		}
		if err := writeTCP(w, out); err != nil {
			return err
		}
		mac, first, records = next, false, records[n:]
	}
	return nil
}

func writeTCP(w io.Writer, msg []byte) error {
	buf := make([]byte, 2+len(msg))
	binary.BigEndian.PutUint16(buf, uint16(len(msg)))
	copy(buf[2:], msg)
	_, err := w.Write(buf)
	return err
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
	if s.notifyKey != "" {
		m.SetTsig(s.notifyKey, dns.HmacSHA256, tsigFudge, time.Now().Unix())
		c.TsigSecret = map[string]string{s.notifyKey: s.keys[s.notifyKey]}
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
