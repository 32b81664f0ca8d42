package peers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/miekg/dns"

	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
)

// DefaultMaxRecords bounds the records of one export: ten times the largest zone benchmarked.
const DefaultMaxRecords = 1_000_000

// DefaultMaxBytes bounds the bytes of one transfer of an export, as received: 16 MiB holds some
// 100,000 endpoints with their ownership TXTs (the export of BenchmarkPullAndMerge's 10,000 records
// is 1.4 MB), ten times the largest zone benchmarked, and is what a pull may make this
// process hold, several times over while the records are decoded.
const DefaultMaxBytes = 16 << 20

// Peer is the embedded server of another cluster serving a zone.
type Peer struct {
	// Zone is the zone served by both.
	Zone string
	// Addr is the peer server's host:port; a host name is resolved at each pull.
	Addr string
	// Key, when set, signs the pulls (the peer must list it for its export, ExportAccess.Keys) and
	// must sign every answer; without it the peer must allow our source address.
	Key *dnsserver.TSIGKey
}

func (p Peer) String() string { return p.Zone + "@" + p.Addr }

// Reasons a pull fails, for metrics and logs.
const (
	// ReasonUnreachable: the address does not resolve, nothing answers, or the answer took too long.
	ReasonUnreachable = "unreachable"
	// ReasonRefused: the peer refused the transfer (REFUSED, NOTAUTH: our key or address is not
	// allowed, or it does not serve the zone).
	ReasonRefused = "refused"
	// ReasonTSIG: the answer is unsigned or not signed with our key.
	ReasonTSIG = "tsig"
	// ReasonGarbage: the answer is not an export of the zone.
	ReasonGarbage = "garbage"
	// ReasonOwners: the export claims owners or a lease of this cluster.
	ReasonOwners = "owners"
	// ReasonClaimed: the export claims an owner, or names a cluster, that another peer's export
	// claimed first (Pool.Merge); the earlier one keeps it.
	ReasonClaimed = "claimed"
)

// PullError is why a pull failed.
type PullError struct {
	Reason string
	Err    error
}

func (e *PullError) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *PullError) Unwrap() error { return e.Err }

func failed(reason string, format string, args ...any) error {
	return &PullError{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// ReasonOf is the reason of a pull's error.
func ReasonOf(err error) string {
	var pe *PullError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return ReasonGarbage
}

// Pulled is one export as pulled.
type Pulled struct {
	Export dnsserver.Export
	// Serial is the export's SOA serial.
	Serial uint32
	// Records counts the records transferred, Bytes the bytes received.
	Records int
	Bytes   int64
	// Unchanged: the peer's export still has the serial asked about (Pull's have), and was not sent
	// again; Export is then empty.
	Unchanged bool
}

// Pull transfers a peer's export of its zone over TCP within timeout, and reads it. With have, the
// serial of the export last pulled (0: none), it asks by IXFR, and a peer whose export still has
// that serial answers with its SOA alone (Pulled.Unchanged); otherwise, and by AXFR without have,
// the whole export comes. The answer must be signed with the peer's key when it has one, must be a
// well-formed export of the zone, and may hold at most maxRecords records (0: DefaultMaxRecords)
// in at most maxBytes bytes (0: DefaultMaxBytes), so that a peer cannot make us hold more than
// that: the transfer is cut off at the first byte over.
func Pull(ctx context.Context, p Peer, timeout time.Duration, maxRecords int, maxBytes int64, have uint32) (*Pulled, error) {
	if maxRecords <= 0 {
		maxRecords = DefaultMaxRecords
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	deadline, _ := ctx.Deadline()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", p.Addr)
	if err != nil {
		return nil, failed(ReasonUnreachable, "%v", withoutSource(err))
	}
	defer func() { _ = conn.Close() }()
	bounded := &boundedConn{Conn: conn, left: maxBytes}
	// The deadline bounds the whole transfer, whatever the peer sends or withholds.
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	m := new(dns.Msg)
	if have != 0 {
		m.SetIxfr(dnsserver.ExportName(p.Zone), have, ".", ".")
	} else {
		m.SetAxfr(dnsserver.ExportName(p.Zone))
	}
	tr := &dns.Transfer{Conn: &dns.Conn{Conn: bounded}, ReadTimeout: timeout, WriteTimeout: timeout}
	if p.Key != nil {
		alg := p.Key.Algorithm
		if alg == "" {
			alg = dns.HmacSHA256
		}
		name := dns.CanonicalName(p.Key.Name)
		m.SetTsig(name, dns.CanonicalName(dns.Fqdn(alg)), 300, time.Now().Unix())
		tr.TsigSecret = map[string]string{name: p.Key.Secret}
	}
	tooLarge := func() error { return failed(ReasonGarbage, "the export is larger than %d bytes", maxBytes) }
	envs, err := tr.In(m, p.Addr)
	if err != nil {
		if bounded.over {
			return nil, tooLarge()
		}
		return nil, classify(err)
	}
	var rrs []dns.RR
	var soa *dns.SOA
	for env := range envs {
		if env.Error != nil {
			// Drain: the transfer goroutine ends when the channel does.
			for range envs {
			}
			if bounded.over {
				return nil, tooLarge()
			}
			return nil, classify(env.Error)
		}
		for _, rr := range env.RR {
			if s, ok := rr.(*dns.SOA); ok && soa == nil {
				soa = s
			}
		}
		rrs = append(rrs, env.RR...)
		if len(rrs) > maxRecords {
			cancel()
			for range envs {
			}
			return nil, failed(ReasonGarbage, "the export holds more than %d records", maxRecords)
		}
	}
	if soa == nil {
		return nil, failed(ReasonGarbage, "the transfer holds no SOA")
	}
	if have != 0 && len(rrs) == 1 {
		if soa.Serial != have {
			// An older serial than ours (the peer restarted with its clock behind): the IXFR client
			// takes it for current. Ask for all of it.
			return Pull(ctx, p, time.Until(deadline), maxRecords, maxBytes, 0)
		}
		return &Pulled{Serial: have, Unchanged: true}, nil
	}
	if !dns.IsSubDomain(dnsserver.ExportName(p.Zone), soa.Hdr.Name) || !dns.IsSubDomain(soa.Hdr.Name, dnsserver.ExportName(p.Zone)) {
		return nil, failed(ReasonGarbage, "the transfer is of %s, not of the export", soa.Hdr.Name)
	}
	ex, err := dnsserver.DecodeExport(p.Zone, rrs)
	if err != nil {
		return nil, failed(ReasonGarbage, "%v", err)
	}
	return &Pulled{Export: ex, Serial: soa.Serial, Records: len(rrs), Bytes: maxBytes - bounded.left}, nil
}

// boundedConn reads at most left bytes, then fails every read: a peer sending more is cut off
// before what it sends is held.
type boundedConn struct {
	net.Conn
	left int64
	// over: a read was refused for the bound.
	over bool
}

var errTooLarge = errors.New("the transfer exceeds its bound")

func (c *boundedConn) Read(b []byte) (int, error) {
	if c.left <= 0 {
		c.over = true
		return 0, errTooLarge
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.Conn.Read(b)
	c.left -= int64(n)
	return n, err
}

// classify turns a transfer error into a PullError.
func classify(err error) error {
	err = withoutSource(err)
	var ne net.Error
	switch {
	case errors.Is(err, dns.ErrSig), errors.Is(err, dns.ErrNoSig), errors.Is(err, dns.ErrSecret), errors.Is(err, dns.ErrAuth), errors.Is(err, dns.ErrKeyAlg), errors.Is(err, dns.ErrTime):
		return failed(ReasonTSIG, "%v", err)
	case errors.As(err, &ne), errors.Is(err, net.ErrClosed), errors.Is(err, context.DeadlineExceeded),
		// A connection closed or reset under the transfer (a server at its connection limit hangs
		// up at accept, one going away mid-stream) is no answer, not a bad one.
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return failed(ReasonUnreachable, "%v", err)
	}
	if strings.HasPrefix(err.Error(), "dns: bad xfr rcode") {
		return failed(ReasonRefused, "%v", err)
	}
	return failed(ReasonGarbage, "%v", err)
}

// withoutSource drops the local address from a network error: its port changes with every pull, and
// the error is shown in a status condition, which must not change when nothing else does.
func withoutSource(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Source != nil {
		c := *op
		c.Source = nil
		return &c
	}
	return err
}
