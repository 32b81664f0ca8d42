package dnsserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/conditions"
	"github.com/dnspolicy/dnspolicy-controller/pkg/peers"
)

// peersCondition says whether every peer of a zone is live. Its message names peers and reasons
// only, never times or serials, so it changes only when a peer's state does.
func peersCondition(zone string, peers []peers.PeerStatus) metav1.Condition {
	var stale, refused, failing []string
	for _, p := range peers {
		switch {
		case p.Stale:
			stale = append(stale, fmt.Sprintf("%s (%s)", p.Peer.Addr, cmp.Or(p.Error, "its lease stopped changing")))
		case p.Refused:
			refused = append(refused, fmt.Sprintf("%s (%s)", p.Peer.Addr, p.Error))
		case p.LastPull.IsZero():
			stale = append(stale, fmt.Sprintf("%s (never pulled: %s)", p.Peer.Addr, cmp.Or(p.Error, "not yet")))
		case p.Error != "":
			failing = append(failing, fmt.Sprintf("%s (%s)", p.Peer.Addr, p.Error))
		}
	}
	refusedText := fmt.Sprintf("%d of %d peers of zone %s are refused, their exports not merged: %s", len(refused), len(peers), zone, strings.Join(refused, "; "))
	if len(stale) > 0 {
		msg := fmt.Sprintf("%d of %d peers of zone %s are stale, their owners withdrawn where live owners claim: %s", len(stale), len(peers), zone, strings.Join(stale, "; "))
		if len(refused) > 0 {
			msg += "; " + refusedText
		}
		return metav1.Condition{Type: ConditionPeers, Status: metav1.ConditionFalse, Reason: ReasonPeerStale, Message: cutMessage(msg, maxMessage)}
	}
	if len(refused) > 0 {
		return metav1.Condition{Type: ConditionPeers, Status: metav1.ConditionFalse, Reason: ReasonPeerRefused, Message: cutMessage(refusedText, maxMessage)}
	}
	msg := fmt.Sprintf("zone %s is served merged with the exports of %d peers", zone, len(peers))
	if len(failing) > 0 {
		msg += fmt.Sprintf("; the last pull of %d failed, their last exports are used within their lease: %s", len(failing), strings.Join(failing, "; "))
	}
	return metav1.Condition{Type: ConditionPeers, Status: metav1.ConditionTrue, Reason: ReasonPeersLive, Message: cutMessage(msg, maxMessage)}
}

// maxMessage bounds the messages this controller writes. A condition message may hold 32 KiB
// (conditions.MaxMessageLength); a zone's refusals or peers could fill that, and 4 KiB says enough.
const maxMessage = 4096

// cutMessage keeps msg within limit bytes, cut on a rune boundary and marked with "...". Every
// message of this package that can grow with the zone is cut by it.
func cutMessage(msg string, limit int) string {
	if len(msg) <= limit {
		return msg
	}
	const more = "..."
	cut := limit - len(more)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + more
}

// notServed is a Served condition saying that the record, or some of it, is not served.
func notServed(reason, msg string) metav1.Condition {
	return metav1.Condition{Type: ConditionServed, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
}

func keyOf(source string) client.ObjectKey {
	ns, name, _ := strings.Cut(source, "/")
	return client.ObjectKey{Namespace: ns, Name: name}
}

// refusedMessage lists the first refusals, sorted so that every replica writes the same text.
func refusedMessage(zone string, reasons []string) string {
	reasons = slices.Clone(reasons)
	slices.Sort(reasons)
	shown := reasons[:min(len(reasons), maxMessageReasons)]
	msg := fmt.Sprintf("%d endpoint(s) or record set(s) not served in zone %s, the rest is: %s", len(reasons), zone, strings.Join(shown, "; "))
	if len(reasons) > len(shown) {
		msg += fmt.Sprintf("; and %d more", len(reasons)-len(shown))
	}
	return cutMessage(msg, maxMessage)
}

// report writes each record's Served condition where it differs from what the record shows, by
// server-side apply of that one condition. Replicas compute the same condition, so once one has
// written it the others find nothing to do.
// zone are the zone's conditions (Peers, Signed), written beside Served on every served record.
func (r *Reconciler) report(ctx context.Context, records []v1alpha1.DNSRecord, verdicts map[client.ObjectKey]metav1.Condition, zone []metav1.Condition) error {
	var errs []error
	for i := range records {
		rec := &records[i]
		served, ok := verdicts[client.ObjectKeyFromObject(rec)]
		if !ok {
			continue
		}
		wants := []metav1.Condition{served}
		if served.Reason != ReasonNotGranted {
			wants = append(wants, zone...)
		}
		// Written only when a verdict changes, not for every new generation: each status write
		// moves the record's resourceVersion, and its writers (the coredns backend, dns-operator)
		// write with the version they read, so every needless write costs them a retry. A
		// condition this controller no longer sends (Peers, once the zone has none) is dropped by
		// the apply.
		same := true
		for _, t := range []string{ConditionPeers, ConditionSigned} {
			sent := slices.ContainsFunc(wants, func(c metav1.Condition) bool { return c.Type == t })
			same = same && sent == (conditions.Get(rec.Status.Conditions, t) != nil)
		}
		var conds []any
		for _, want := range wants {
			c, unchanged := applied(conditions.Get(rec.Status.Conditions, want.Type), want, rec.Generation)
			same = same && unchanged
			conds = append(conds, map[string]any{
				"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message,
				"observedGeneration": c.ObservedGeneration, "lastTransitionTime": c.LastTransitionTime.UTC().Format(time.RFC3339),
			})
		}
		if same {
			continue
		}
		if err := r.applyConditions(ctx, rec, conds); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// applied is want as the apply writes it over have, the record's condition of its type (nil for
// none), and whether it says what have says. The transition time moves only when the status
// flips, as with pkg/conditions. Unlike conditions.Set, observedGeneration stays the generation the
// verdict was last written for while its reason and message hold (so that a new generation
// changing no verdict writes nothing), and the message is written as made: it names records and
// endpoints, never request IDs or times.
func applied(have *metav1.Condition, want metav1.Condition, generation int64) (metav1.Condition, bool) {
	want.ObservedGeneration = generation
	unchanged := have != nil && have.Status == want.Status && have.Reason == want.Reason && have.Message == want.Message
	want.LastTransitionTime = metav1.Now()
	if have != nil && have.Status == want.Status {
		want.LastTransitionTime = have.LastTransitionTime
		if have.Reason == want.Reason && have.Message == want.Message {
			want.ObservedGeneration = have.ObservedGeneration
		}
	}
	return want, unchanged
}

// applyConditions writes a record's conditions of this controller by server-side apply, as their
// field owner, so it never overwrites the record controller's conditions.
func (r *Reconciler) applyConditions(ctx context.Context, rec *v1alpha1.DNSRecord, conds []any) error {
	patch := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "DNSRecord",
		"metadata":   map[string]any{"name": rec.Name, "namespace": rec.Namespace},
		"status":     map[string]any{"conditions": conds},
	}}
	// The response is read as metadata only: the API server would otherwise send the whole
	// record back, spec included, and a record of many targets cost more to decode than
	// its zone costs to build. So client.Apply through Patch, not Client.Apply: only Patch reads
	// the response into another object than the one sent.
	apply := client.Apply //nolint:staticcheck // see above
	if err := r.Client.Status().Patch(ctx, rec.Metadata(), apply, client.FieldOwner(fieldOwner), client.ForceOwnership,
		client.WithSubResourceBody(patch)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("DNSRecord %s/%s: writing the %s condition: %w", rec.Namespace, rec.Name, ConditionServed, err)
	}
	return nil
}
