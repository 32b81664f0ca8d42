//go:build mixedfleet

package mixedfleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// a is an A endpoint.
func a(host string, ips ...string) *v1alpha1.Endpoint {
	return &v1alpha1.Endpoint{DNSName: host, Targets: ips, RecordType: "A", RecordTTL: 60}
}

// delegating is a record of s's root host with delegate: true.
func delegating(s *space, name string, eps ...*v1alpha1.Endpoint) *v1alpha1.DNSRecord {
	return &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: s.host, Endpoints: eps, Delegate: true},
	}
}

func (f *fleet) create(t *testing.T, cl *cluster, rec *v1alpha1.DNSRecord) *v1alpha1.DNSRecord {
	t.Helper()
	if err := cl.c.Create(context.Background(), rec); err != nil {
		t.Fatalf("%s: creating DNSRecord %s/%s: %v", cl.name, rec.Namespace, rec.Name, err)
	}
	return rec
}

// get reads rec again from cl; nil when it is gone.
func (f *fleet) get(t *testing.T, cl *cluster, rec *v1alpha1.DNSRecord) *v1alpha1.DNSRecord {
	t.Helper()
	got := &v1alpha1.DNSRecord{}
	if err := cl.c.Get(context.Background(), client.ObjectKeyFromObject(rec), got); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		t.Fatal(err)
	}
	return got
}

func (f *fleet) update(t *testing.T, cl *cluster, rec *v1alpha1.DNSRecord, change func(*v1alpha1.DNSRecord)) {
	t.Helper()
	eventuallyT(t, func() string {
		got := f.get(t, cl, rec)
		if got == nil {
			t.Fatalf("%s: DNSRecord %s/%s is gone", cl.name, rec.Namespace, rec.Name)
		}
		change(got)
		if err := cl.c.Update(context.Background(), got); err != nil {
			return fmt.Sprintf("%s: updating DNSRecord %s/%s: %v", cl.name, rec.Namespace, rec.Name, err)
		}
		return ""
	})
}

func (f *fleet) delete(t *testing.T, cl *cluster, rec *v1alpha1.DNSRecord) {
	t.Helper()
	if err := cl.c.Delete(context.Background(), rec); err != nil {
		t.Fatalf("%s: deleting DNSRecord %s/%s: %v", cl.name, rec.Namespace, rec.Name, err)
	}
}

func (f *fleet) waitGone(t *testing.T, cl *cluster, rec *v1alpha1.DNSRecord) {
	t.Helper()
	eventuallyT(t, func() string {
		if got := f.get(t, cl, rec); got != nil {
			return fmt.Sprintf("%s: the deleted DNSRecord %s/%s is still there (finalizers %v, Ready %v)",
				cl.name, rec.Namespace, rec.Name, got.Finalizers, meta.FindStatusCondition(got.Status.Conditions, "Ready"))
		}
		return ""
	})
}

// waitRemoteStatus waits until rec, on the secondary, holds an entry of the first primary in
// status.remoteRecordStatuses that check accepts.
func (f *fleet) waitRemoteStatus(t *testing.T, rec *v1alpha1.DNSRecord, check func(v1alpha1.DNSRecordStatus) string) {
	t.Helper()
	f.waitRemoteStatusOf(t, f.primary, rec, check)
}

func (f *fleet) waitRemoteStatusOf(t *testing.T, p *cluster, rec *v1alpha1.DNSRecord, check func(v1alpha1.DNSRecordStatus) string) {
	t.Helper()
	eventuallyT(t, func() string {
		got := f.get(t, f.secondary, rec)
		if got == nil {
			return "the secondary's record is gone"
		}
		st, ok := got.Status.RemoteRecordStatus(p.id)
		if !ok {
			return fmt.Sprintf("the secondary's record has no entry of %s (%s) in status.remoteRecordStatuses (it has %v)", p.name, p.id, keys(got.Status.RemoteRecordStatuses))
		}
		return check(st)
	})
}

// authoritative is the first primary's authoritative record of s's root host, nil when there is
// none; it fails t when there are several.
func (f *fleet) authoritative(t *testing.T, s *space) *v1alpha1.DNSRecord {
	t.Helper()
	return authoritativeOn(t, f.primary, s)
}

func authoritativeOn(t *testing.T, p *cluster, s *space) *v1alpha1.DNSRecord {
	t.Helper()
	list := &v1alpha1.DNSRecordList{}
	if err := p.c.List(context.Background(), list, client.InNamespace(s.ns),
		client.MatchingLabels{v1alpha1.AuthoritativeRecordLabel: "true"}); err != nil {
		t.Fatal(err)
	}
	var found []*v1alpha1.DNSRecord
	for i := range list.Items {
		if list.Items[i].Spec.RootHost == s.host {
			found = append(found, &list.Items[i])
		}
	}
	if len(found) > 1 {
		t.Fatalf("%d authoritative records of %s on %s, want one", len(found), s.host, p.name)
	}
	if len(found) == 0 {
		return nil
	}
	return found[0]
}

// targets are the sorted targets of rec's endpoints of name and type.
func targets(rec *v1alpha1.DNSRecord, name, typ string) []string {
	var out []string
	for _, ep := range rec.Spec.Endpoints {
		if ep.DNSName == name && ep.RecordType == typ {
			out = append(out, ep.Targets...)
		}
	}
	slices.Sort(out)
	return out
}

func conditionIs(rec *v1alpha1.DNSRecord, typ string, status metav1.ConditionStatus) bool {
	c := meta.FindStatusCondition(rec.Status.Conditions, typ)
	return c != nil && c.Status == status
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func eventuallyT(t *testing.T, cond func() string) {
	t.Helper()
	eventually(t, wait, cond)
}

// answers asks server for name and qtype and returns the answer's values of that type, sorted
// (none for NXDOMAIN, NODATA or a refused zone).
func answers(server, name string, qtype uint16) ([]string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, server)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rr := range r.Answer {
		if rr.Header().Rrtype != qtype {
			continue
		}
		switch v := rr.(type) {
		case *dns.A:
			out = append(out, v.A.String())
		case *dns.CNAME:
			out = append(out, v.Target)
		}
	}
	slices.Sort(out)
	return out, nil
}

// waitAnswers waits until the DNS server of every primary that runs one answers name and qtype
// with exactly want.
func (f *fleet) waitAnswers(t *testing.T, name string, qtype uint16, want ...string) {
	t.Helper()
	slices.Sort(want)
	eventuallyT(t, func() string {
		for _, p := range f.primaries {
			if !p.serving() {
				continue
			}
			got, err := answers(p.dns, name, qtype)
			if err != nil {
				return fmt.Sprintf("asking %s's DNS server for %s %s: %v", p.name, name, dns.TypeToString[qtype], err)
			}
			if !slices.Equal(got, want) {
				return fmt.Sprintf("%s's DNS server answers %s %s with %v, want %v", p.name, name, dns.TypeToString[qtype], got, want)
			}
		}
		return ""
	})
}

// describe is what a failed scenario leaves, to read beside the operators' logs.
func (f *fleet) describe(s *space) string {
	var b strings.Builder
	for _, cl := range f.clusters() {
		list := &v1alpha1.DNSRecordList{}
		if err := cl.c.List(context.Background(), list, client.InNamespace(s.ns)); err != nil {
			fmt.Fprintf(&b, "%s: %v\n", cl.name, err)
			continue
		}
		for _, r := range list.Items {
			r.ManagedFields = nil
			y, _ := json.MarshalIndent(r, "", "  ")
			fmt.Fprintf(&b, "--- %s (%s): DNSRecord %s/%s\n%s\n", cl.name, cl.op, r.Namespace, r.Name, y)
		}
	}
	return b.String()
}

// endpointLines are rec's endpoints, one sorted line each, to compare two primaries' records.
func endpointLines(rec *v1alpha1.DNSRecord) []string {
	var out []string
	for _, ep := range rec.Spec.Endpoints {
		ts := slices.Clone([]string(ep.Targets))
		slices.Sort(ts)
		out = append(out, fmt.Sprintf("%s %s %q ttl=%d targets=%v labels=%v specific=%v",
			ep.DNSName, ep.RecordType, ep.SetIdentifier, ep.RecordTTL, ts, ep.Labels, ep.ProviderSpecific))
	}
	slices.Sort(out)
	return out
}
