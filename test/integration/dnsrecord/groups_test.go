//go:build integration

package dnsrecord_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/pkg/batch"
	"github.com/dnspolicy/dnspolicy-controller/pkg/groups"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/rfc2136"
	"github.com/dnspolicy/dnspolicy-controller/test/integration/internal/recordplane"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// setActiveGroups writes the zone's kuadrant-active-groups TXT on BIND as Kuadrant's CLI does
// (groups.Target; no groups: the TXT deleted), through the rfc2136 backend.
func setActiveGroups(t *testing.T, data map[string]string, zone string, active ...string) {
	t.Helper()
	b := bindBackend(t, data)
	z := providers.Zone{ID: zone, DNSName: zone}
	view, err := b.Zones.Records(t.Context(), z)
	if err != nil {
		t.Fatal(err)
	}
	name := groups.RecordName(zone)
	want := &v1alpha1.Endpoint{DNSName: name, RecordType: v1alpha1.RecordTypeTXT, RecordTTL: groups.RecordTTL, Targets: v1alpha1.Targets{groups.Target(active)}}
	changes := &batch.Changes{Create: []*v1alpha1.Endpoint{want}}
	for _, ep := range view.Endpoints {
		if v1alpha1.NormalizeName(ep.DNSName) == name && ep.RecordType == v1alpha1.RecordTypeTXT {
			changes = &batch.Changes{UpdateOld: []*v1alpha1.Endpoint{ep}, UpdateNew: []*v1alpha1.Endpoint{want}}
			if len(active) == 0 {
				changes = &batch.Changes{Delete: []*v1alpha1.Endpoint{ep}}
			}
		}
	}
	if err := b.Zones.Apply(t.Context(), z, view.State, changes); err != nil {
		t.Fatal(err)
	}
}

// claimLabels reads the labels of owner's ownership TXT for the A record at host from BIND.
func claimLabels(t *testing.T, data map[string]string, zone, owner, host string) map[string]string {
	t.Helper()
	b := bindBackend(t, data)
	view, err := b.Zones.Records(t.Context(), providers.Zone{ID: zone, DNSName: zone})
	if err != nil {
		t.Fatal(err)
	}
	r := registry.Read(view.Endpoints).Record(v1alpha1.EndpointKey{DNSName: host, RecordType: v1alpha1.RecordTypeA})
	if r == nil || r.Claim(owner) == nil {
		return nil
	}
	return r.Claim(owner).Labels
}

// Three clusters publish one host into a zone on BIND: "east" and "west" run with --group, the
// third ungrouped. The active groups are read from the zone's kuadrant-active-groups TXT on the
// nameserver the provider Secret's NAMESERVERS names. With no TXT only the ungrouped cluster
// publishes, and the grouped records say MemberOfInactiveGroup with Kuadrant's messages; listing
// east publishes east's target, its claim naming its group as Kuadrant's do; listing both publishes both; listing west alone turns
// east inactive, and west's controller removes east's target and claim (the cleanup), never the
// ungrouped owner's. The group metrics follow, and go with a deleted record.
func TestFailoverGroupsGatePublishing(t *testing.T) {
	factory := providers.NewFactory()
	factory.Register(v1alpha1.SecretTypeRFC2136, rfc2136.New)
	const z, host = "groups.example.com", "app.groups.example.com"
	data := startBINDZone(t, z, "dnspolicy")
	ap := netip.AddrPortFrom(netip.MustParseAddr(data[v1alpha1.RFC2136HostKey]), 0)
	nameserver := fmt.Sprintf("%s:%s", ap.Addr(), data[v1alpha1.RFC2136PortKey])
	opts := fastOptions()
	opts.InactiveGroupRecheck = 200 * time.Millisecond
	type member struct {
		group, target string
		cl            *cluster
	}
	members := []*member{{group: "east", target: "10.9.0.1"}, {group: "west", target: "10.9.0.2"}, {target: "10.9.0.3"}}
	for i, m := range members {
		o := app.Options{EnableRecordController: true, Group: m.group}
		ns := recordplane.Start(t, envs[i], fmt.Sprintf("g%d-", i), recordplane.Controller{App: o, Factory: factory, Record: opts})
		m.cl = &cluster{name: fmt.Sprintf("cluster-%d", i), c: envs[i].Client, ns: ns}
		sd := map[string]string{"NAMESERVERS": " " + nameserver + " "}
		for k, v := range data {
			sd[k] = v
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "provider", Namespace: ns}, Type: v1alpha1.SecretTypeRFC2136, StringData: sd}
		if err := m.cl.c.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		m.cl.record(t, "web", host, a(host, 60, m.target))
	}
	inactive := func(m *member) string {
		r := m.cl.get(t, "web")
		if r.Status.Group != m.group {
			return fmt.Sprintf("%s: status.group %q", m.cl.name, r.Status.Group)
		}
		if got := condition(r, v1alpha1.ConditionTypeActive); got != "False NotMemberOfActiveGroup: Group is not included in active groups" {
			return m.cl.name + " Active " + got
		}
		if got := condition(r, v1alpha1.ConditionTypeReady); got != "False MemberOfInactiveGroup: No further actions to take while in inactive group" {
			return m.cl.name + " Ready " + got
		}
		return ""
	}
	active := func(m *member, listed string) string {
		r := m.cl.get(t, "web")
		if got := condition(r, v1alpha1.ConditionTypeActive); got != "True MemberOfActiveGroup: Group is included in active groups" {
			return m.cl.name + " Active " + got
		}
		if !strings.HasPrefix(condition(r, v1alpha1.ConditionTypeReady), "True ProviderSuccess") || r.Status.ActiveGroups != listed {
			return fmt.Sprintf("%s Ready %s, activeGroups %q", m.cl.name, condition(r, v1alpha1.ConditionTypeReady), r.Status.ActiveGroups)
		}
		return ""
	}
	ungrouped := func() string {
		r := members[2].cl.get(t, "web")
		if got := condition(r, v1alpha1.ConditionTypeActive); got != "none" || r.Status.Group != "" || r.Status.ActiveGroups != "" {
			return fmt.Sprintf("ungrouped record: Active %s, group %q, activeGroups %q", got, r.Status.Group, r.Status.ActiveGroups)
		}
		return ""
	}
	// groupMetric says what dns_record_group_info and dns_record_group_active hold for m's record.
	groupMetric := func(m *member, want float64) string {
		labels := map[string]string{"dns_record_namespace": m.cl.ns, "dns_record_name": "web", "group": m.group}
		if v, ok := testenv.Metric("dns_record_group_info", labels); !ok || v != 1 {
			return fmt.Sprintf("%s dns_record_group_info %v (present %v)", m.cl.name, v, ok)
		}
		if v, ok := testenv.Metric("dns_record_group_active", labels); !ok || v != want {
			return fmt.Sprintf("%s dns_record_group_active %v (present %v), want %v", m.cl.name, v, ok, want)
		}
		return ""
	}
	zoneHolds := func(targets string) string { return same(bindRecords(t, data, z), []string{host + " A 60 " + targets}) }

	eventually(t, 60*time.Second, func() string {
		return firstOf(zoneHolds("10.9.0.3"), inactive(members[0]), inactive(members[1]), ungrouped())
	})

	setActiveGroups(t, data, z, "east")
	eventually(t, 60*time.Second, func() string {
		return firstOf(zoneHolds("10.9.0.1,10.9.0.3"), active(members[0], "east"), inactive(members[1]), ungrouped(),
			groupMetric(members[0], 1), groupMetric(members[1], 0))
	})

	// East's claim says its group and targets as a grouped Kuadrant controller writes them; the
	// ungrouped cluster's says no group.
	if l := claimLabels(t, data, z, members[0].cl.get(t, "web").Status.OwnerID, host); l[registry.GroupKey] != "east" || l[registry.GroupTargetsKey] != "10.9.0.1" {
		t.Errorf("east's claim labels %v", l)
	}
	if l := claimLabels(t, data, z, members[2].cl.get(t, "web").Status.OwnerID, host); l == nil || l[registry.GroupKey] != "" || l[registry.GroupTargetsKey] != "" {
		t.Errorf("the ungrouped claim's labels %v", l)
	}

	setActiveGroups(t, data, z, "east", "west")
	eventually(t, 60*time.Second, func() string {
		return firstOf(zoneHolds("10.9.0.1,10.9.0.2,10.9.0.3"), active(members[0], "east,west"), active(members[1], "east,west"))
	})

	setActiveGroups(t, data, z, "west")
	// East turns inactive and writes nothing; west's controller, at its next quiet pass, removes
	// east's target and claim (Kuadrant's cleanup); the ungrouped target stays.
	eventually(t, 60*time.Second, func() string {
		return firstOf(inactive(members[0]), active(members[1], "west"), zoneHolds("10.9.0.2,10.9.0.3"))
	})
	if l := claimLabels(t, data, z, members[0].cl.get(t, "web").Status.OwnerID, host); l != nil {
		t.Errorf("east's claim is still in the zone: %v", l)
	}
	if l := claimLabels(t, data, z, members[2].cl.get(t, "web").Status.OwnerID, host); l == nil {
		t.Error("the ungrouped owner's claim is gone")
	}
	eventually(t, 20*time.Second, func() string {
		if v, ok := testenv.Metric("dns_record_inactive_group_cleanup_total", map[string]string{"zone": z, "group": "west"}); !ok || v < 1 {
			return fmt.Sprintf("dns_record_inactive_group_cleanup_total{group=west} %v (present %v)", v, ok)
		}
		return ""
	})
	// A record of an inactive group, deleted, withdraws nothing more and goes.
	members[0].cl.delete(t, "web")
	eventually(t, 60*time.Second, func() string { return zoneHolds("10.9.0.2,10.9.0.3") })
	eventually(t, 20*time.Second, func() string {
		if _, ok := testenv.Metric("dns_record_group_active", map[string]string{"dns_record_namespace": members[0].cl.ns, "dns_record_name": "web", "group": "east"}); ok {
			return "the deleted record's dns_record_group_active remains"
		}
		return ""
	})
}

func firstOf(msgs ...string) string {
	for _, m := range msgs {
		if m != "" {
			return m
		}
	}
	return ""
}
