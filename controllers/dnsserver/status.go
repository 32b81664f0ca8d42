package dnsserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
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
		return metav1.Condition{Type: ConditionPeers, Status: metav1.ConditionFalse, Reason: ReasonPeerStale, Message: limitMessage(msg)}
	}
	if len(refused) > 0 {
		return metav1.Condition{Type: ConditionPeers, Status: metav1.ConditionFalse, Reason: ReasonPeerRefused, Message: limitMessage(refusedText)}
	}
	msg := fmt.Sprintf("zone %s is served merged with the exports of %d peers", zone, len(peers))
	if len(failing) > 0 {
		msg += fmt.Sprintf("; the last pull of %d failed, their last exports are used within their lease: %s", len(failing), strings.Join(failing, "; "))
	}
	return metav1.Condition{Type: ConditionPeers, Status: metav1.ConditionTrue, Reason: ReasonPeersLive, Message: limitMessage(msg)}
}

// limitMessage keeps a Peers message within 4 KiB.
func limitMessage(msg string) string {
	if len(msg) > 4096 {
		return msg[:4093] + "..."
	}
	return msg
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
	// A condition message holds at most 32 KiB.
	const maxLen = 4096
	if len(msg) > maxLen {
		msg = msg[:maxLen-3] + "..."
	}
	return msg
}

// report writes each record's Served condition where it differs from what the record shows, by
// server-side apply of that one condition. Replicas compute the same condition, so once one has
// written it the others find nothing to do.
// peers, when set, is the zone's Peers condition, written beside Served on every served record.
func (r *Reconciler) report(ctx context.Context, records []v1alpha1.DNSRecord, verdicts map[client.ObjectKey]metav1.Condition, peers *metav1.Condition) error {
	var errs []error
	for i := range records {
		rec := &records[i]
		served, ok := verdicts[client.ObjectKeyFromObject(rec)]
		if !ok {
			continue
		}
		wants := []metav1.Condition{served}
		if peers != nil && served.Reason != ReasonNotGranted {
			wants = append(wants, *peers)
		}
		// Written only when a verdict changes, not for every new generation: each status write
		// moves the record's resourceVersion, and its writers (the coredns backend, dns-operator)
		// write with the version they read, so every needless write costs them a retry.
		// observedGeneration is the generation the verdict was last written for. A condition
		// this controller no longer sends (Peers, once the zone has none) is dropped by the apply.
		same := (len(wants) == 2) == (meta.FindStatusCondition(rec.Status.Conditions, ConditionPeers) != nil)
		var conditions []any
		for _, want := range wants {
			want.ObservedGeneration = rec.Generation
			have := meta.FindStatusCondition(rec.Status.Conditions, want.Type)
			if have == nil || have.Status != want.Status || have.Reason != want.Reason || have.Message != want.Message {
				same = false
			}
			want.LastTransitionTime = metav1.Now()
			if have != nil && have.Status == want.Status {
				want.LastTransitionTime = have.LastTransitionTime
				if have.Reason == want.Reason && have.Message == want.Message {
					want.ObservedGeneration = have.ObservedGeneration
				}
			}
			conditions = append(conditions, map[string]any{
				"type": want.Type, "status": string(want.Status), "reason": want.Reason, "message": want.Message,
				"observedGeneration": want.ObservedGeneration, "lastTransitionTime": want.LastTransitionTime.UTC().Format(time.RFC3339),
			})
		}
		if same {
			continue
		}
		patch := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(),
			"kind":       "DNSRecord",
			"metadata":   map[string]any{"name": rec.Name, "namespace": rec.Namespace},
			"status":     map[string]any{"conditions": conditions},
		}}
		// The response is read as metadata only: the API server would otherwise send the whole
		// record back, spec included, and a record of many targets cost more to decode than
		// its zone costs to build.
		if err := r.Client.Status().Patch(ctx, rec.Metadata(), client.Apply, client.FieldOwner(fieldOwner), client.ForceOwnership,
			client.WithSubResourceBody(patch)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("DNSRecord %s/%s: writing the %s condition: %w", rec.Namespace, rec.Name, ConditionServed, err))
		}
	}
	return errors.Join(errs...)
}
