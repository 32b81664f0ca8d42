package dnsserver

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/miekg/dns"
)

// envelopeSize bounds the records packed in one zone transfer message.
const envelopeSize = 16 * 1024

// transfer is a zone transfer to stream over TCP.
type transfer struct {
	entry  *zoneEntry
	snap   *snapshot
	signer *tsigSigner
}

// transferAnswer handles AXFR and IXFR. Only peers presenting a TSIG key allowed for the zone may
// transfer; others are REFUSED (signed, when they signed with another of our keys).
// IXFR is answered with the whole zone (RFC 1995 4), or with the SOA alone when the client is
// current or asked over UDP (RFC 1995 2: it then retries over TCP).
func (r *responder) transferAnswer(snap *snapshot, signer *tsigSigner) []byte {
	q := &r.req
	allowed := signer != nil && r.s.transferAllowed(snap.origin, signer.key.name)
	if r.entry.export {
		allowed = r.s.exportAllowed(snap.origin, signer, q.client)
	}
	if !allowed {
		r.refusal = refusedTransfer
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
	r.xfr = &transfer{entry: r.entry, snap: snap, signer: signer}
	return nil
}

// serialNewer compares serials by RFC 1982 arithmetic: is a after b?
func serialNewer(a, b uint32) bool {
	return a != b && int32(a-b) > 0
}

// stream writes the zone in envelopes, SOA first and last (RFC 5936 2.2), each signed in a chain:
// the first with the query's MAC, the next ones with the previous MAC and timers only (RFC 8945 5.3.1).
// Each envelope gets its own write deadline: a secondary reading slowly but steadily finishes a
// large zone, one that stops reading is cut off after one timeout.
func (x *transfer) stream(c net.Conn, req *request, now func() time.Time, timeout time.Duration) error {
	records, err := x.snap.transferRecords()
	if err != nil {
		return err
	}
	records = append(records, x.snap.soaRR)
	var mac string
	if x.signer != nil {
		mac = x.signer.mac
	}
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
		var out []byte
		var next string
		var err error
		if x.signer == nil {
			// Unsigned: an export pulled from an allowed source prefix.
			out, err = m.Pack()
		} else {
			m.SetTsig(x.signer.key.name, x.signer.key.algorithm, maxFudge, now().Unix())
			out, next, err = dns.TsigGenerate(m, x.signer.key.secret, mac, !first)
		}
		if err != nil {
			return fmt.Errorf("signing a transfer of %s: %w", x.snap.origin, err)
		}
		_ = c.SetWriteDeadline(time.Now().Add(timeout))
		if err := writeTCP(c, out); err != nil {
			return err
		}
		mac, first, records = next, false, records[n:]
	}
	return nil
}

// writeTCP sends a message with its length in front, in one write (writev) and without copying it.
func writeTCP(w io.Writer, msg []byte) error {
	if len(msg) > dns.MaxMsgSize {
		return fmt.Errorf("message of %d bytes is over the %d a TCP frame can carry", len(msg), dns.MaxMsgSize)
	}
	var length [2]byte
	binary.BigEndian.PutUint16(length[:], uint16(len(msg)))
	bufs := net.Buffers{length[:], msg}
	_, err := bufs.WriteTo(w)
	return err
}
