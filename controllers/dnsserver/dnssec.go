package dnsserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/internal/pass"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
)

// The keys' Secrets are read and written in the controller's own namespace only ("system" is
// replaced by kustomize and the chart): get, create and update there, no list or watch, so this
// controller can read no other Secret of that namespace in bulk, and none elsewhere beyond the
// cluster-wide get the record controller already holds.
// +kubebuilder:rbac:groups="",namespace=system,resources=secrets,verbs=get;create;update

// The Signed condition of the authoritative records of a signed zone.
const (
	ConditionSigned = "Signed"
	// ReasonSigned: the zone is signed and no rollover runs.
	ReasonSigned = "Signed"
	// ReasonRolloverInProgress: the zone is signed; a rollover runs and waits for caches.
	ReasonRolloverInProgress = "RolloverInProgress"
	// ReasonRolloverWaitingForDS: the zone is signed; a KSK or CSK rollover waits for the parent to
	// hold the new key's DS (the message gives it).
	ReasonRolloverWaitingForDS = "RolloverWaitingForDS"
	// ReasonKeysInvalid: the keys' Secret cannot be read or its keys cannot sign; the zone is served
	// with the keys last read good, or unsigned when there were none.
	ReasonKeysInvalid = "KeysInvalid"
	// ReasonKeysRefused: the server refused the keys; it serves the zone as it did before.
	ReasonKeysRefused = "KeysRefused"
	// ReasonKeysDiverge: a peer (another cluster's server of the zone, --dns-peers) serves a DNSKEY
	// set other than this cluster's keys, or none: resolvers holding one set cannot validate the
	// other's answers. The clusters' key Secrets must be the same (docs/dnssec.md).
	ReasonKeysDiverge = "KeysDiverge"
)

// Annotations of the keys' Secret.
const (
	// AnnotationRollover asks for a rollover: "zsk", or "ksk" (a CSK's rollover when the keys are
	// a CSK). The controller starts it, or refuses it with an event, and removes the annotation.
	AnnotationRollover = "dnspolicy.io/dnssec-rollover"
	// AnnotationZone names the zone whose keys the Secret holds, for people and the CLI.
	AnnotationZone = "dnspolicy.io/dnssec-zone"
)

// SecretName is the name of the Secret holding a zone's keys: "dnssec-" and the zone with dots as
// dashes. Two zones whose names meet in one Secret name are told apart by the zone in keys.json
// (Parse refuses the other's).
func SecretName(zone string) string {
	return "dnssec-" + strings.ReplaceAll(v1alpha1.NormalizeName(zone), ".", "-")
}

// Signing signs zones of the embedded server with keys kept in a Secret per zone, and moves them
// along their rollovers (package dnssec computes; this reads the clock, the parent and the Secret).
//
// Every replica runs it, leader or not, as every replica serves. So writes are made to be safe
// among replicas: a Secret is created only if absent (the one that loses the create reads the
// winner's keys and never serves its own), and updated with the resourceVersion it was read at
// (a replica whose step lost reads the Secret again and serves what the winner wrote). Replicas
// therefore always sign with the keys the Secret holds, never with keys of their own.
type Signing struct {
	// Zones are the zones to sign.
	Zones  []string
	Policy dnssec.Policy
	// Namespace holds the keys' Secrets.
	Namespace string
	// Reader reads the Secrets directly from the API server: no Secret is cached, and a cache
	// would drop the annotations that ask for rollovers (app.StripSecretMetadata).
	Reader client.Reader
	// Recorder gets an event on the Secret for each step of a rollover.
	Recorder recorder.EventRecorder
	// LookupDS asks for the zone's DS set at the parent (ResolverDS).
	LookupDS func(ctx context.Context, zone string) (dnssec.ParentDS, error)
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Recheck is how often a signed zone's Secret is read again when nothing is due sooner: a
	// rollover asked for, a Secret replaced by an administrator, is acted on within it.
	Recheck time.Duration

	mu sync.Mutex
	// good are, by zone, the keys last read good: an invalid Secret leaves the zone signed with them.
	good map[string]*dnssec.KeySet
	// asked are, by zone, when the parent was last asked for its DS set.
	asked map[string]time.Time
}

func (g *Signing) signs(zone string) bool {
	return g != nil && slices.ContainsFunc(g.Zones, func(z string) bool { return v1alpha1.NormalizeName(z) == v1alpha1.NormalizeName(zone) })
}

// sign finds the keys of a signed zone, steps them and hands them to the server with the zone; it
// says how on the Signed condition. A zone with nothing served gets no keys.
func (r *Reconciler) sign(ctx context.Context, s *zoneScope) (ctrl.Result, bool, error) {
	g := r.Signing
	if !g.signs(s.zone) || s.endpoints == 0 {
		return pass.Continue()
	}
	now := time.Now()
	if g.Now != nil {
		now = g.Now()
	}
	keys, c, next, err := g.keys(ctx, r.Client, v1alpha1.NormalizeName(s.zone), now)
	if keys != nil {
		s.data.Signing = g.served(keys)
		if r.Peers != nil && r.Peers.HasPeers(s.zone) {
			var addrs []string
			for _, p := range r.Peers.Status(s.zone) {
				addrs = append(addrs, p.Peer.Addr)
			}
			if apart := diverging(ctx, s.zone, keys, addrs); apart != "" {
				c = metav1.Condition{Type: ConditionSigned, Status: metav1.ConditionFalse, Reason: ReasonKeysDiverge,
					Message: cutMessage(apart+"; "+c.Message, maxMessage)}
			}
		}
	}
	s.signed = &c
	after := g.Recheck
	if !next.IsZero() && next.Sub(now) < after {
		after = max(next.Sub(now), time.Second)
	}
	if err != nil {
		// The zone is still served, with the keys the Secret held when read (or the last good
		// ones): the pass goes on, and the keys are read again soon; at once after a write
		// another replica won, which has nothing to wait for.
		log.FromContext(ctx).Info("DNSSEC keys not written or not read; trying again", "zone", s.zone, "error", err.Error())
		after = min(after, time.Second)
		if !apierrors.IsConflict(err) {
			after = min(g.Recheck, 5*time.Second)
		}
	}
	if s.result.RequeueAfter == 0 || after < s.result.RequeueAfter {
		s.result.RequeueAfter = after
	}
	return pass.Continue()
}

// served is the key set as the server signs with it: the DNSKEY set's TTL is the policy's.
func (g *Signing) served(ks *dnssec.KeySet) *dnssec.KeySet {
	out := &dnssec.KeySet{Keys: slices.Clone(ks.Keys)}
	for i := range out.Keys {
		dk := *out.Keys[i].DNSKEY
		dk.Hdr.Ttl = uint32(g.Policy.DNSKEYTTL / time.Second)
		out.Keys[i].DNSKEY = &dk
	}
	return out
}

// keys reads the zone's keys, making them on first use, steps them and writes back what moved. It
// returns the keys to sign with (nil: unsigned), the Signed condition, when the keys are due again,
// and an error after which the keys are read again soon (the keys returned are still good to serve).
func (g *Signing) keys(ctx context.Context, w client.Writer, zone string, now time.Time) (*dnssec.KeySet, metav1.Condition, time.Time, error) {
	key := client.ObjectKey{Namespace: g.Namespace, Name: SecretName(zone)}
	var secret corev1.Secret
	err := g.Reader.Get(ctx, key, &secret)
	if apierrors.IsNotFound(err) {
		var created bool
		if created, err = g.create(ctx, w, zone, now, &secret); err == nil && !created {
			err = g.Reader.Get(ctx, key, &secret)
		}
	}
	if err != nil {
		return g.lastGood(zone), invalid(zone, fmt.Sprintf("Secret %s: %v", key, apierrors.ReasonForError(err))), time.Time{}, fmt.Errorf("DNSSEC keys of zone %s, Secret %s: %w", zone, key, err)
	}
	ring, err := dnssec.Parse(zone, secret.Data)
	if err == nil {
		err = ring.KeySet().Valid()
	}
	if err != nil {
		// Never overwritten: the keys may be the only copy. An administrator mends or deletes it.
		return g.lastGood(zone), invalid(zone, fmt.Sprintf("Secret %s: %v", key, err)), time.Time{}, nil
	}
	request := g.request(&secret, ring)
	parent := g.askParent(ctx, zone, ring, now)
	st, err := dnssec.StepKeys(ring, g.Policy, now, request, parent.ParentDS)
	if err != nil {
		return g.lastGood(zone), invalid(zone, fmt.Sprintf("Secret %s: %v", key, err)), time.Time{}, nil
	}
	if st.Changed || secret.Annotations[AnnotationRollover] != "" {
		if err := g.update(ctx, w, &secret, st); err != nil {
			// Another replica wrote first (or the write failed): serve the keys as read, which are
			// what the Secret held, and come back to read the winner's.
			keys := ring.KeySet()
			g.remember(zone, keys)
			return keys, signedCondition(zone, ring, dnssec.Stepped{Keys: ring}, parent), time.Time{}, err
		}
		g.report(ctx, zone, &secret, st, request)
	}
	keys := st.Keys.KeySet()
	g.remember(zone, keys)
	observeKeys(zone, st.Keys)
	return keys, signedCondition(zone, st.Keys, st, parent), st.Next, nil
}

// create makes a zone's first keys and their Secret; false when another replica made it first.
func (g *Signing) create(ctx context.Context, w client.Writer, zone string, now time.Time, secret *corev1.Secret) (bool, error) {
	st, err := dnssec.StepKeys(dnssec.Keyring{Zone: zone}, g.Policy, now, "", dnssec.ParentDS{})
	if err != nil {
		return false, err
	}
	data, err := dnssec.Marshal(st.Keys)
	if err != nil {
		return false, err
	}
	*secret = corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: g.Namespace, Name: SecretName(zone), Annotations: map[string]string{AnnotationZone: zone},
			Labels: map[string]string{"app.kubernetes.io/managed-by": "dnspolicy-controller"}},
		Type: dnssec.SecretType,
		Data: data,
	}
	if err := w.Create(ctx, secret); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return false, nil
		}
		return false, err
	}
	g.report(ctx, zone, secret, st, "")
	return true, nil
}

// request is the rollover the Secret's annotation asks for; "ksk" means the CSK's of CSK keys.
func (g *Signing) request(secret *corev1.Secret, ring dnssec.Keyring) dnssec.Rollover {
	req := dnssec.Rollover(strings.ToLower(strings.TrimSpace(secret.Annotations[AnnotationRollover])))
	if req == dnssec.RollKSK && slices.ContainsFunc(ring.Keys, func(k dnssec.Key) bool { return k.Role == dnssec.CSK && k.State == dnssec.Active }) {
		return dnssec.RollCSK
	}
	return req
}

// parentView is what was asked of the parent, for the condition.
type parentView struct {
	dnssec.ParentDS
	failed bool
}

// askParent asks for the zone's DS set only while a key waits for it (a KSK or CSK published and
// not yet active), and then once every DS check interval of this replica: passes come every
// Recheck, far more often than the parent changes. Not asked, what was seen before stands.
func (g *Signing) askParent(ctx context.Context, zone string, ring dnssec.Keyring, now time.Time) parentView {
	if g.LookupDS == nil || !slices.ContainsFunc(ring.Keys, func(k dnssec.Key) bool { return k.State == dnssec.Published && k.Role != dnssec.ZSK }) {
		return parentView{}
	}
	g.mu.Lock()
	last, asked := g.asked[zone]
	if asked && now.Before(last.Add(g.Policy.DSCheckEvery)) {
		g.mu.Unlock()
		return parentView{}
	}
	if g.asked == nil {
		g.asked = map[string]time.Time{}
	}
	g.asked[zone] = now
	g.mu.Unlock()
	ds, err := g.LookupDS(ctx, zone)
	if err != nil {
		log.FromContext(ctx).Info("DNSSEC: the parent's DS set could not be looked up; asking again later", "zone", zone, "error", err.Error())
		return parentView{failed: true}
	}
	return parentView{ParentDS: ds}
}

// update writes the stepped keys back and takes the rollover request away, at the resourceVersion
// the Secret was read at.
func (g *Signing) update(ctx context.Context, w client.Writer, secret *corev1.Secret, st dnssec.Stepped) error {
	data, err := dnssec.Marshal(st.Keys)
	if err != nil {
		return err
	}
	secret.Data = data
	delete(secret.Annotations, AnnotationRollover)
	if err := w.Update(ctx, secret); err != nil {
		return fmt.Errorf("writing the DNSSEC keys to Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	return nil
}

// report tells of each key's move, by the replica that wrote it: an event on the Secret, a log
// line and the rollover counter; and of a refused request. Key IDs and tags only, never key
// material.
func (g *Signing) report(ctx context.Context, zone string, secret *corev1.Secret, st dnssec.Stepped, request dnssec.Rollover) {
	logger := log.FromContext(ctx)
	for _, c := range st.Changes {
		logger.Info("DNSSEC key "+strings.ToLower(c.What), "zone", zone, "key", c.Key, "role", c.Role, "detail", c.Message)
		if g.Recorder != nil {
			g.Recorder.Eventf(secret, nil, corev1.EventTypeNormal, "DNSSECKey"+c.What, "Rollover", "zone %s: key %s: %s", zone, c.Key, c.Message)
		}
		if c.What == "RolloverStarted" {
			rollovers.WithLabelValues(zone, string(c.Role)).Inc()
		}
	}
	if st.Refused != "" {
		logger.Info("DNSSEC rollover refused", "zone", zone, "request", request, "reason", st.Refused)
		if g.Recorder != nil {
			g.Recorder.Eventf(secret, nil, corev1.EventTypeWarning, "DNSSECRolloverRefused", "Rollover", "zone %s: %s", zone, st.Refused)
		}
	}
}

func (g *Signing) remember(zone string, keys *dnssec.KeySet) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.good == nil {
		g.good = map[string]*dnssec.KeySet{}
	}
	g.good[zone] = keys
}

func (g *Signing) lastGood(zone string) *dnssec.KeySet {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.good[zone]
}

// invalid is the Signed condition of keys that cannot be used.
func invalid(zone, why string) metav1.Condition {
	return metav1.Condition{Type: ConditionSigned, Status: metav1.ConditionFalse, Reason: ReasonKeysInvalid,
		Message: cutMessage(fmt.Sprintf("the DNSSEC keys of zone %s cannot be used, the zone is served with the keys this replica last read good, or unsigned: %s", zone, why), maxMessage)}
}

// signedCondition says with which keys a zone is signed, the DS records the parent should hold
// and what a rollover waits for. No times: it changes only when a key's state or a wait does.
func signedCondition(zone string, ring dnssec.Keyring, st dnssec.Stepped, parent parentView) metav1.Condition {
	reason := ReasonSigned
	switch {
	case st.WaitingForDS:
		reason = ReasonRolloverWaitingForDS
	case st.Waiting != "":
		reason = ReasonRolloverInProgress
	}
	msg := fmt.Sprintf("zone %s is signed; keys: %s; DS for the parent: %s", zone, ring.Describe(), strings.Join(ring.DSRecords(), ", "))
	if st.Waiting != "" {
		msg += "; " + st.Waiting
	}
	if parent.failed {
		msg += "; the parent's DS set could not be looked up, asking again"
	}
	if st.Mismatch != "" {
		msg += "; " + st.Mismatch
	}
	return metav1.Condition{Type: ConditionSigned, Status: metav1.ConditionTrue, Reason: reason, Message: cutMessage(msg, maxMessage)}
}

// diverging asks each peer's server (host:port) for the zone's DNSKEY set and names those whose set
// is not the DNSKEY set of keys, and how; "" when all agree. A peer that does not answer is left out:
// the Peers condition tells of it. Only key tags are named, which are public.
func diverging(ctx context.Context, zone string, keys *dnssec.KeySet, addrs []string) string {
	ours := map[string]uint16{}
	for _, k := range keys.Published() {
		ours[dnskeyText(k.DNSKEY)] = k.KeyTag()
	}
	var apart []string
	for _, addr := range slices.Sorted(slices.Values(addrs)) {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(zone), dns.TypeDNSKEY)
		m.SetEdns0(4096, false)
		resp, _, err := (&dns.Client{Timeout: 2 * time.Second}).ExchangeContext(ctx, m, addr)
		if err == nil && resp.Truncated {
			resp, _, err = (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).ExchangeContext(ctx, m, addr)
		}
		if err != nil || resp.Rcode != dns.RcodeSuccess {
			continue
		}
		theirs := map[string]uint16{}
		for _, rr := range resp.Answer {
			if k, ok := rr.(*dns.DNSKEY); ok {
				theirs[dnskeyText(k)] = k.KeyTag()
			}
		}
		if len(theirs) == 0 {
			apart = append(apart, fmt.Sprintf("peer %s serves zone %s unsigned", addr, zone))
			continue
		}
		lacks, extra := tagsMissing(ours, theirs), tagsMissing(theirs, ours)
		if len(lacks)+len(extra) > 0 {
			apart = append(apart, fmt.Sprintf("peer %s serves other DNSKEYs for zone %s (lacks tags %v, has tags %v not ours)", addr, zone, lacks, extra))
		}
	}
	if len(apart) == 0 {
		return ""
	}
	return strings.Join(apart, "; ") + ": every cluster serving the zone must hold the same keys' Secret"
}

func dnskeyText(k *dns.DNSKEY) string {
	return fmt.Sprintf("%d %d %s", k.Flags, k.Algorithm, k.PublicKey)
}

// tagsMissing are the tags of the keys of a that b lacks, sorted.
func tagsMissing(a, b map[string]uint16) []uint16 {
	var out []uint16
	for k, tag := range a {
		if _, ok := b[k]; !ok {
			out = append(out, tag)
		}
	}
	slices.Sort(out)
	return out
}

// keysRefused is the Signed condition when the server refused the keys.
func keysRefused(zone string, err error) metav1.Condition {
	return metav1.Condition{Type: ConditionSigned, Status: metav1.ConditionFalse, Reason: ReasonKeysRefused,
		Message: cutMessage(fmt.Sprintf("the server refused the DNSSEC keys of zone %s and serves it as before: %v", zone, err), maxMessage)}
}

// ResolverDS looks up a zone's DS set by asking server (host:port) as a resolver; "" asks the
// system's resolvers (/etc/resolv.conf) in turn. A name the parent does not know has no DS.
func ResolverDS(server string, timeout time.Duration) func(ctx context.Context, zone string) (dnssec.ParentDS, error) {
	return func(ctx context.Context, zone string) (dnssec.ParentDS, error) {
		servers := []string{server}
		if server == "" {
			conf, err := dns.ClientConfigFromFile("/etc/resolv.conf")
			if err != nil {
				return dnssec.ParentDS{}, fmt.Errorf("the system resolver: %w", err)
			}
			servers = nil
			for _, s := range conf.Servers {
				servers = append(servers, dnsJoin(s, conf.Port))
			}
		}
		var last error
		for _, s := range servers {
			ds, err := askDS(ctx, s, zone, timeout)
			if err == nil {
				return ds, nil
			}
			last = err
		}
		return dnssec.ParentDS{}, last
	}
}

func dnsJoin(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

func askDS(ctx context.Context, server, zone string, timeout time.Duration) (dnssec.ParentDS, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(zone), dns.TypeDS)
	m.SetEdns0(1232, false)
	c := &dns.Client{Timeout: timeout}
	resp, _, err := c.ExchangeContext(ctx, m, server)
	if err == nil && resp.Truncated {
		c.Net = "tcp"
		resp, _, err = c.ExchangeContext(ctx, m, server)
	}
	if err != nil {
		return dnssec.ParentDS{}, fmt.Errorf("asking %s for the DS of %s: %w", server, zone, err)
	}
	if resp.Rcode != dns.RcodeSuccess && resp.Rcode != dns.RcodeNameError {
		return dnssec.ParentDS{}, fmt.Errorf("asking %s for the DS of %s: %s", server, zone, dns.RcodeToString[resp.Rcode])
	}
	out := dnssec.ParentDS{Asked: true}
	for _, rr := range resp.Answer {
		if ds, ok := rr.(*dns.DS); ok && dns.CanonicalName(ds.Hdr.Name) == dns.CanonicalName(zone) {
			out.DS = append(out.DS, ds)
		}
	}
	return out, nil
}

// The DNSSEC metrics: each key's state, and the rollovers begun (by the replica that wrote them).
var (
	keyState = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dnspolicy_dnssec_key_state",
		Help: "1 for each DNSSEC key of a signed zone, labelled with its role and state (published, active, retired, removed).",
	}, []string{"zone", "key", "role", "state"})
	rollovers = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dnspolicy_dnssec_rollovers_total",
		Help: "DNSSEC key rollovers begun, by zone and role of the key rolled.",
	}, []string{"zone", "role"})
)

// observeKeys sets the key state metric of a zone: one series per key, in its state; the series of
// keys forgotten, or of a key's earlier state, go.
func observeKeys(zone string, ring dnssec.Keyring) {
	keyState.DeletePartialMatch(prometheus.Labels{"zone": zone})
	for _, k := range ring.Keys {
		keyState.WithLabelValues(zone, k.ID, string(k.Role), string(k.State)).Set(1)
	}
}

// registerSigningMetrics registers the DNSSEC metrics, once per process.
func registerSigningMetrics() error {
	for _, c := range []prometheus.Collector{keyState, rollovers} {
		if err := metrics.Registry.Register(c); err != nil && !errors.As(err, &prometheus.AlreadyRegisteredError{}) {
			return err
		}
	}
	return nil
}
