package dnspolicy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
)

// Labels of the DNSRecords this controller writes.
const (
	// ListenerLabel names the listener a record publishes (Kuadrant's label).
	ListenerLabel = "kuadrant.io/listener-name"
	// GatewayLabel names the Gateway a record publishes, so the Gateway's pass finds the records it
	// must delete after their policy or listener went away.
	GatewayLabel = "gateway.networking.k8s.io/gateway-name"
)

// judgeInput is everything one Gateway's pass decides from.
type judgeInput struct {
	// gatewayAPI is false while the Gateway API CRDs are not installed.
	gatewayAPI bool
	// name is the Gateway's name; gateway is nil when it does not exist.
	name    string
	gateway *gatewayapiv1.Gateway
	// policies are the live DNSPolicies of the namespace whose targetRef names this Gateway.
	policies []*dnsv1.DNSPolicy
	// clusterID is the UID of the kube-system Namespace; clusterIDErr says why it is unknown.
	clusterID    string
	clusterIDErr error
}

// verdict is what a pass decides for one policy.
type verdict struct {
	policy *dnsv1.DNSPolicy
	// reason and message of the Accepted condition; reason Accepted when the policy is accepted.
	reason, message string
	// listeners are the listeners this policy publishes, in the Gateway's order. An accepted policy
	// gets a plan for each; a policy that won listeners but is invalid keeps its records unchanged.
	listeners []*listenerPlan
}

func (v *verdict) accepted() bool { return v.reason == ReasonAccepted }

// listenerPlan is what a pass does with one listener of the policy that publishes it.
type listenerPlan struct {
	listener string
	// record is the desired DNSRecord; nil when there is nothing to publish or it cannot be built.
	record *v1alpha1.DNSRecord
	// current is the DNSRecord as it stands after the pass, when it exists (kept ones included).
	current *v1alpha1.DNSRecord
	// skipped says why the listener has nothing to publish; that is no fault.
	skipped string
	// problem says why the listener is not published as desired; the record published before, if
	// any, is kept.
	problem string
	// keep leaves the record published before untouched: the policy is invalid, or the listener's
	// endpoints cannot be built. An edit mistake must not take a hostname out of DNS.
	keep bool
}

// judge decides, for one Gateway, which policies are accepted, which listeners each publishes and
// the DNSRecord of each listener. It is a function of its input only.
//
// Attachment goes by targetRef and age alone, as in Kuadrant: a listener-level policy (sectionName)
// takes its listener from a Gateway-level one, and of two policies with the same targetRef the
// oldest (creationTimestamp, then name) wins while the other is Conflicted. Validity does not move
// listeners between policies, so fixing a typo never hands a hostname to another policy and back.
func judge(in judgeInput) []*verdict {
	verdicts := make([]*verdict, len(in.policies))
	for i, p := range in.policies {
		verdicts[i] = &verdict{policy: p}
	}
	if !in.gatewayAPI {
		for _, v := range verdicts {
			v.reason, v.message = ReasonMissingDependency, msgMissingGatewayAPI
		}
		return verdicts
	}

	// Each targetRef (Gateway, or one listener of it) goes to its oldest policy.
	winners := map[string]*verdict{}
	for _, v := range oldestFirst(verdicts) {
		ref := v.policy.Spec.TargetRef
		section := sectionOf(v.policy)
		switch {
		case string(ref.Group) != gatewayapiv1.GroupName || ref.Kind != "Gateway":
			// The CRD rejects this; a CRD installed from an older version may not.
			v.reason, v.message = ReasonInvalid, fmt.Sprintf(msgInvalid, fmt.Sprintf("targetRef must be a Gateway of group %s, not %s %s", gatewayapiv1.GroupName, ref.Kind, ref.Group))
		case in.gateway == nil:
			v.reason, v.message = ReasonTargetNotFound, fmt.Sprintf(msgTargetNotFound, in.name)
		case section != "" && listenerOf(in.gateway, section) == nil:
			v.reason, v.message = ReasonTargetNotFound, fmt.Sprintf(msgTargetNotFound+": Gateway %s has no listener %q", in.name, in.name, section)
		case winners[section] != nil:
			w := winners[section].policy
			v.reason, v.message = ReasonConflicted, fmt.Sprintf(msgConflicted, types.NamespacedName{Namespace: w.Namespace, Name: w.Name}, targetText(in.name, section))
		default:
			winners[section] = v
			v.reason, v.message = ReasonAccepted, msgAccepted
			if err := validatePolicy(v.policy); err != nil {
				v.reason, v.message = ReasonInvalid, fmt.Sprintf(msgInvalid, err)
			}
		}
	}
	if in.gateway == nil {
		return verdicts
	}

	for _, l := range in.gateway.Spec.Listeners {
		v := winners[string(l.Name)]
		if v == nil {
			v = winners[""]
		}
		if v == nil {
			continue
		}
		lp := &listenerPlan{listener: string(l.Name)}
		if v.accepted() {
			planListener(lp, in, v.policy, l)
		} else {
			lp.keep = true
		}
		v.listeners = append(v.listeners, lp)
	}
	return verdicts
}

// planListener builds the desired DNSRecord of one listener, or says why there is none.
func planListener(lp *listenerPlan, in judgeInput, p *dnsv1.DNSPolicy, l gatewayapiv1.Listener) {
	if l.Hostname == nil || *l.Hostname == "" {
		lp.skipped = fmt.Sprintf("listener %s has no hostname", l.Name)
		return
	}
	if attachedRoutes(in.gateway, l.Name) == 0 {
		lp.skipped = fmt.Sprintf("listener %s has no attached routes", l.Name)
		return
	}
	if p.Spec.LoadBalancing != nil && in.clusterIDErr != nil {
		lp.problem, lp.keep = fmt.Sprintf("listener %s: cannot read the cluster ID (the UID of Namespace kube-system): %v", l.Name, in.clusterIDErr), true
		return
	}
	endpoints, err := builder.Build(builder.Input{
		Hostname:         string(*l.Hostname),
		Addresses:        in.gateway.Status.Addresses,
		GatewayName:      in.gateway.Name,
		GatewayNamespace: in.gateway.Namespace,
		ClusterID:        in.clusterID,
		LoadBalancing:    p.Spec.LoadBalancing,
		ExcludeAddresses: p.Spec.ExcludeAddresses,
	})
	if err != nil {
		lp.problem, lp.keep = fmt.Sprintf("listener %s: %v", l.Name, err), true
		return
	}
	if len(endpoints) == 0 {
		lp.skipped = fmt.Sprintf("listener %s: the Gateway has no addresses to publish", l.Name)
		if len(p.Spec.ExcludeAddresses) > 0 {
			lp.skipped += " once excludeAddresses are removed"
		}
		return
	}
	lp.record = desiredRecord(in.gateway, l, p, endpoints)
}

// desiredRecord is the DNSRecord of one listener: named <gateway>-<listener> in the policy's
// namespace, controlled by the policy.
//
// The Gateway owns it too (not as controller). The garbage collector deletes a dependent only when
// every owner is gone, so when a policy is deleted and another policy takes over the listener, the
// collector cannot delete the record before the new policy adopts it in place; the controller
// deletes records no policy wants itself.
func desiredRecord(gw *gatewayapiv1.Gateway, l gatewayapiv1.Listener, p *dnsv1.DNSPolicy, endpoints []*v1alpha1.Endpoint) *v1alpha1.DNSRecord {
	rec := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{
			Name:      recordName(gw.Name, string(l.Name)),
			Namespace: p.Namespace,
			Labels:    map[string]string{ListenerLabel: string(l.Name), GatewayLabel: gw.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: dnsv1.GroupVersion.String(), Kind: policyKind, Name: p.Name, UID: p.UID,
				Controller: new(true), BlockOwnerDeletion: new(true),
			}, {
				APIVersion: gatewayapiv1.GroupVersion.String(), Kind: "Gateway", Name: gw.Name, UID: gw.UID,
			}},
		},
		Spec: v1alpha1.DNSRecordSpec{
			RootHost:    string(*l.Hostname),
			Endpoints:   endpoints,
			HealthCheck: p.Spec.HealthCheck.DeepCopy(),
		},
	}
	// A delegating policy's records name no provider: a primary cluster publishes them
	// (docs/delegation.md). The API refuses delegate with providerRefs.
	rec.Spec.Delegate = p.Spec.Delegate
	// One Secret per policy today; Kuadrant reads the first entry the same way.
	if len(p.Spec.ProviderRefs) > 0 {
		rec.Spec.ProviderRef = p.Spec.ProviderRefs[0].DeepCopy()
	}
	return rec
}

func recordName(gateway, listener string) string { return gateway + "-" + listener }

// validatePolicy runs the policy's own fields (excludeAddresses, loadBalancing) through the builder
// with a stand-in listener and no addresses, so a fault of the policy is told apart from a fault of
// one listener or of the Gateway's addresses, and the message is the builder's.
func validatePolicy(p *dnsv1.DNSPolicy) error {
	_, err := builder.Build(builder.Input{
		Hostname:         "policy.check",
		ClusterID:        "policy-check",
		LoadBalancing:    p.Spec.LoadBalancing,
		ExcludeAddresses: p.Spec.ExcludeAddresses,
	})
	return err
}

// oldestFirst orders by creationTimestamp, then name: the order in which policies win a targetRef.
func oldestFirst(verdicts []*verdict) []*verdict {
	out := slices.Clone(verdicts)
	slices.SortStableFunc(out, func(a, b *verdict) int {
		return cmp.Or(
			a.policy.CreationTimestamp.Compare(b.policy.CreationTimestamp.Time),
			strings.Compare(a.policy.Name, b.policy.Name))
	})
	return out
}

func sectionOf(p *dnsv1.DNSPolicy) string {
	if p.Spec.TargetRef.SectionName == nil {
		return ""
	}
	return string(*p.Spec.TargetRef.SectionName)
}

func targetText(gateway, section string) string {
	if section == "" {
		return "Gateway " + gateway
	}
	return fmt.Sprintf("listener %s of Gateway %s", section, gateway)
}

func listenerOf(gw *gatewayapiv1.Gateway, name string) *gatewayapiv1.Listener {
	for i := range gw.Spec.Listeners {
		if string(gw.Spec.Listeners[i].Name) == name {
			return &gw.Spec.Listeners[i]
		}
	}
	return nil
}

func attachedRoutes(gw *gatewayapiv1.Gateway, listener gatewayapiv1.SectionName) int32 {
	for _, s := range gw.Status.Listeners {
		if s.Name == listener {
			return s.AttachedRoutes
		}
	}
	return 0
}
