package dnsrecord

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord/publish"
	"github.com/dnspolicy/dnspolicy-controller/controllers/internal/pass"
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups"
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups/resolve"
)

// DefaultInactiveGroupRecheck is how often a record of an inactive group looks again whether its
// group became active (Kuadrant's InactiveGroupRequeueTime).
const DefaultInactiveGroupRecheck = 15 * time.Second

// TXTResolver looks up the TXT strings at a host, asking nameservers first (resolve.Resolver).
type TXTResolver interface {
	LookupTXT(ctx context.Context, host string, nameservers []string) ([]string, error)
}

// checkGroup puts the record in this controller's failover group (Options.Group, package groups)
// and lets it publish only while its zone lists that group as active, as Kuadrant's GroupAdapter
// does: a record of an inactive group is Ready=False MemberOfInactiveGroup and writes nothing to
// the zone (what it published while active stays), and looks again every InactiveGroupRecheck. An
// ungrouped record passes untouched. Records of a backend that serves whole records have no zone,
// and are not gated.
func (r *Reconciler) checkGroup(ctx context.Context, s *scope) (ctrl.Result, bool, error) {
	rec := s.record
	group := r.Options.Group
	rec.Status.Group = group
	if group == "" || s.backend.Records != nil {
		rec.Status.ActiveGroups = ""
		conditionOrder.Remove(&rec.Status.Conditions, v1alpha1.ConditionTypeActive)
		groupActive.DeletePartialMatch(recordLabels(rec))
		return pass.Continue()
	}
	active := r.activeGroups(ctx, s)
	r.observeGroups(s, active)
	active = r.runFailover(ctx, s, active)
	rec.Status.ActiveGroups = strings.Join(active, ",")
	groupInfo.WithLabelValues(rec.Namespace, rec.Name, group).Set(1)
	if groups.Active(group, active) {
		s.activeGroups = active
		groupActive.WithLabelValues(rec.Namespace, rec.Name, group).Set(1)
		r.setActive(s, metav1.ConditionTrue, v1alpha1.ReasonMemberOfActiveGroup, v1alpha1.MessageMemberOfActiveGroup)
		return pass.Continue()
	}
	// It publishes nothing, yet with automatic failover its cluster's lease and member record go
	// on being renewed in the zone: the other clusters judge its group by them.
	r.Publisher.Keep(s.provider, s.backend.Account, s.zone, s.key.String(), rec.Status.OwnerID)
	if len(r.Options.FailoverOrder) > 0 {
		// Its probes go on, so that its group can be judged alive again (fail-back) by whether an
		// address passes: the pass that publishes does not run.
		if res, done, err := r.ensureProbes(ctx, s); done {
			return res, done, err
		}
		if s.probing != nil {
			r.failover.setHealth(s.zone.DNSName, s.key, passing(s.probing.probes))
		}
	}
	groupActive.WithLabelValues(rec.Namespace, rec.Name, group).Set(0)
	r.setActive(s, metav1.ConditionFalse, v1alpha1.ReasonNotMemberOfActiveGroup, v1alpha1.MessageNotMemberOfActiveGroup)
	r.setReady(s, metav1.ConditionFalse, v1alpha1.ReasonMemberOfInactiveGroup, v1alpha1.MessageMemberOfInactiveGroup)
	return pass.Done(ctrl.Result{RequeueAfter: pass.Jitter(r.inactiveGroupRecheck())}, nil)
}

// activeGroups reads the active groups of the record's zone from the kuadrant-active-groups TXT,
// asking the nameservers of the provider Secret's NAMESERVERS first. A failed lookup reads as no
// active group (as Kuadrant's): the record's group is inactive until the TXT is read again.
func (r *Reconciler) activeGroups(ctx context.Context, s *scope) []string {
	host := groups.RecordName(s.record.Status.ZoneDomainName)
	values, err := r.txtResolver().LookupTXT(ctx, host, resolve.Nameservers(s.backend.Data[resolve.SecretKey]))
	if err != nil {
		logf.FromContext(ctx).Info("active groups not read: the record's group counts as inactive", "host", host, "error", err.Error())
		return nil
	}
	return groups.Parse(values)
}

func (r *Reconciler) setActive(s *scope, status metav1.ConditionStatus, reason, message string) {
	conditionOrder.Set(&s.record.Status.Conditions, s.record.Generation, metav1.Condition{
		Type: v1alpha1.ConditionTypeActive, Status: status, Reason: reason, Message: message,
	})
}

func (r *Reconciler) txtResolver() TXTResolver {
	if r.Resolver != nil {
		return r.Resolver
	}
	return &resolve.Resolver{}
}

func (r *Reconciler) inactiveGroupRecheck() time.Duration {
	if r.Options.InactiveGroupRecheck > 0 {
		return r.Options.InactiveGroupRecheck
	}
	return DefaultInactiveGroupRecheck
}

// reportCleanup says what a pass of an active group's record removed of inactive groups' records
// (publish.Request.CleanupGroups): a log line, an event naming the owners and names, the metric.
func (r *Reconciler) reportCleanup(s *scope, out publish.Outcome) {
	if len(s.activeGroups) == 0 {
		return
	}
	// The series exists from the record's first active pass, so an alert on its increase sees the
	// first cleanup.
	c := inactiveGroupCleanups.WithLabelValues(s.zone.DNSName, r.Options.Group)
	if len(out.Retired) == 0 {
		return
	}
	c.Inc()
	logf.Log.WithName("dnsrecord").WithValues("dnsrecord", s.key).Info("removed inactive failover groups' records",
		"zone", s.zone.DNSName, "owners", out.Retired, "names", out.RetiredNames, "activeGroups", s.activeGroups)
	r.Recorder.Eventf(s.record, nil, corev1.EventTypeNormal, v1alpha1.ReasonInactiveGroupsRemoved, "Publish",
		"removed from zone %s what owners %s of groups not active (active: %s) published at %s",
		s.zone.DNSName, strings.Join(out.Retired, ", "), strings.Join(s.activeGroups, ", "), strings.Join(out.RetiredNames, ", "))
}
