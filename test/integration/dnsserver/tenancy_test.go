//go:build integration

package dnsserver_test

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	dnsservercontroller "github.com/dnspolicy/dnspolicy-controller/controllers/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/grant"
	"github.com/dnspolicy/dnspolicy-controller/test/bind"
)

// digShort asks the server with Debian's dig and returns its +short output, one answer a line,
// or the status line when the answer is empty; args add dig options (+tcp, +subnet=...).
func digShort(t *testing.T, addr, name, qtype string, args ...string) string {
	t.Helper()
	ap := netip.MustParseAddrPort(addr)
	full := append([]string{"@" + ap.Addr().String(), "-p", fmt.Sprint(ap.Port()), "+tries=1", "+time=5", "+ignore", name, qtype}, args...)
	out, err := exec.Command(bind.Tool(t, "dig"), full...).CombinedOutput()
	if err != nil {
		t.Fatalf("dig %s: %v\n%s", strings.Join(full, " "), err, out)
	}
	text := string(out)
	var answers []string
	inAnswer := false
	status := ""
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.Contains(line, "status: "):
			status = strings.TrimSuffix(strings.Fields(line[strings.Index(line, "status: "):])[1], ",")
		case strings.HasPrefix(line, ";; ANSWER SECTION:"):
			inAnswer = true
		case inAnswer && strings.TrimSpace(line) == "":
			inAnswer = false
		case inAnswer:
			f := strings.Fields(line)
			answers = append(answers, strings.Join(f[4:], " "))
		}
	}
	return strings.TrimSpace(status + " " + strings.Join(answers, " | "))
}

// served returns a record's Served condition, or a description of why there is none yet.
func servedCondition(t *testing.T, rec *v1alpha1.DNSRecord, want string) func() string {
	return func() string {
		var got v1alpha1.DNSRecord
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(rec), &got); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(got.Status.Conditions, dnsservercontroller.ConditionServed)
		if c == nil {
			return "no Served condition"
		}
		if desc := string(c.Status) + " " + c.Reason + ": " + c.Message; !strings.Contains(desc, want) {
			return fmt.Sprintf("Served = %q, want it to contain %q", desc, want)
		}
		return ""
	}
}

// A second namespace, granted only ok.m.t.example.com and n.t.example.com in the first namespace's
// zone, writes authoritative records for a hostname of the first, a name of its own and the zone's
// NS, and holds a kuadrant.io/coredns Secret listing the zone (which once entitled it): dig answers
// are unchanged, and its records say which grant is missing. A record mixing a granted name with an
// ungranted one is served for the granted name only. A zone it declares nested in the first's is
// served only if it is granted that zone's apex, so it cannot shadow names it was not granted. The
// apex NS and SOA cannot be changed by a granted namespace either. Granting the namespace the zone
// lets its records join the zone.
func TestTenancy(t *testing.T) {
	const zone = "t.example.com"
	owner, intruder := newNamespace(t), newNamespace(t)
	www := writeAuthoritative(t, owner, zone, "www."+zone, []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www."+zone, "A", 60, "192.0.2.1")})
	apex := writeAuthoritative(t, owner, zone, zone, []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint(zone, "NS", 300, "ns.elsewhere.example.net"),
		v1alpha1.NewEndpoint(zone, "A", 60, "192.0.2.100"),
	})
	// The Secret holds no credential: any tenant can write one, so it entitles nothing.
	if err := env.Client.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: intruder, Name: "coredns"}, Type: v1alpha1.SecretTypeCoreDNS,
		StringData: map[string]string{v1alpha1.CoreDNSZonesKey: zone},
	}); err != nil {
		t.Fatal(err)
	}
	grantZones(intruder, "ok.m."+zone+",n."+zone)
	hijack := writeUngranted(t, intruder, zone, "www."+zone, []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("www."+zone, "A", 60, "203.0.113.66"),
		v1alpha1.NewEndpoint("evil.www."+zone, "A", 60, "203.0.113.66"),
	})
	redelegate := writeUngranted(t, intruder, zone, zone, []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint(zone, "NS", 300, "ns.intruder.example.net"),
	})
	mixed := writeUngranted(t, intruder, zone, "m."+zone, []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("ok.m."+zone, "A", 60, "198.51.100.7"),
		v1alpha1.NewEndpoint("m."+zone, "A", 60, "203.0.113.66"),
	})
	// A zone nested in the owner's, at a name the intruder was not granted: it would shadow www.
	shadow := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: intruder, Name: "shadow", Labels: map[string]string{
			v1alpha1.AuthoritativeRecordLabel: "true", v1alpha1.CoreDNSZoneNameLabel: "www." + zone}},
		Spec: v1alpha1.DNSRecordSpec{RootHost: "www." + zone, Endpoints: []*v1alpha1.Endpoint{
			v1alpha1.NewEndpoint("www."+zone, "A", 60, "203.0.113.66")}},
	}
	if err := env.Client.Create(context.Background(), shadow); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), shadow) })
	// A nested zone at a name it was granted is its own.
	nested := writeUngranted(t, intruder, "n."+zone, "c.n."+zone, []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("c.n."+zone, "A", 60, "198.51.100.8"),
	})
	m := startManager(t, nil, func(o *app.Options) { o.DNSNameservers = []string{"ns1.t.example.com", "ns2.t.example.com"} })
	eventually(t, 10*time.Second, m.addr, "www."+zone, dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.1")

	check := func(wantWWW, wantEvil, wantM string) {
		t.Helper()
		for _, tcp := range []string{"+notcp", "+tcp"} {
			if got := digShort(t, m.addr, "www."+zone, "A", tcp); got != wantWWW {
				t.Errorf("dig %s www: %q, want %q", tcp, got, wantWWW)
			}
			if got := digShort(t, m.addr, "evil.www."+zone, "A", tcp); got != wantEvil {
				t.Errorf("dig %s evil.www: %q, want %q", tcp, got, wantEvil)
			}
			if got := digShort(t, m.addr, zone, "NS", tcp); got != "NOERROR ns1.t.example.com. | ns2.t.example.com." {
				t.Errorf("dig %s NS: %q", tcp, got)
			}
			if got := digShort(t, m.addr, zone, "SOA", tcp); !strings.HasPrefix(got, "NOERROR ns1.t.example.com. hostmaster.t.example.com.") {
				t.Errorf("dig %s SOA: %q", tcp, got)
			}
			if got := digShort(t, m.addr, "ok.m."+zone, "A", tcp); got != "NOERROR 198.51.100.7" {
				t.Errorf("dig %s ok.m (granted): %q", tcp, got)
			}
			if got := digShort(t, m.addr, "m."+zone, "A", tcp); got != wantM {
				t.Errorf("dig %s m: %q, want %q", tcp, got, wantM)
			}
			if got := digShort(t, m.addr, "c.n."+zone, "A", tcp); got != "NOERROR 198.51.100.8" {
				t.Errorf("dig %s c.n (a granted nested zone): %q", tcp, got)
			}
		}
	}
	missing := "(grants are set by the administrator: --grant, --grants-file); nothing of this record is served"
	for _, c := range []struct {
		rec  *v1alpha1.DNSRecord
		want string
	}{
		{www, "True Served"},
		{apex, "False RecordsRefused: 1 endpoint(s)"},
		{apex, "the apex NS comes from the server's configuration"},
		{hijack, "False NotGranted: namespace " + intruder + " has no grant for www.t.example.com, evil.www.t.example.com " + missing},
		{redelegate, "False NotGranted: namespace " + intruder + " has no grant for t.example.com " + missing},
		{mixed, "False RecordsRefused: 1 endpoint(s) or record set(s) not served in zone t.example.com, the rest is: m.t.example.com A: namespace " + intruder + " has no grant for the name"},
		{shadow, "False NotGranted: zone www.t.example.com is served only when a namespace holding its records has a grant for its apex, and none has: namespace " + intruder + " has no grant for www.t.example.com"},
		{nested, "True Served"},
	} {
		waitFor(t, 10*time.Second, servedCondition(t, c.rec, c.want))
	}
	// Of m, not granted, only the granted name below it exists.
	check("NOERROR 192.0.2.1", "NXDOMAIN", "NOERROR")

	// Granted the zone, the namespace's records join it (the union of targets, DESIGN 4b), but the
	// apex NS still comes from the configuration. (Its nested zone at www would then be served: the
	// grant of the zone covers every zone below it.)
	m.stop()
	if err := env.Client.Delete(context.Background(), shadow); err != nil {
		t.Fatal(err)
	}
	m = startManager(t, nil, func(o *app.Options) {
		o.DNSNameservers = []string{"ns1.t.example.com", "ns2.t.example.com"}
		o.Grants.Grants = append(o.Grants.Grants, grant.Grant{Namespaces: []string{intruder}, Domains: []string{zone}})
	})
	eventually(t, 10*time.Second, m.addr, "evil.www."+zone, dns.TypeA, netip.Addr{}, "NOERROR 203.0.113.66")
	waitFor(t, 10*time.Second, servedCondition(t, redelegate, "False RecordsRefused"))
	waitFor(t, 10*time.Second, servedCondition(t, hijack, "True Served"))
	check("NOERROR 192.0.2.1 | 203.0.113.66", "NOERROR 203.0.113.66", "NOERROR 203.0.113.66")
}

// A grant by namespace label: the namespace's records are served while its labels match, and
// stop being served as soon as the label is taken away (the zone is rebuilt on the namespace's
// change, not at the next record change), and come back when it is put back.
func TestGrantByNamespaceLabel(t *testing.T) {
	ctx := context.Background()
	const zone = "s.example.com"
	ns := newNamespace(t)
	setLabel := func(value string) {
		t.Helper()
		var obj corev1.Namespace
		if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, &obj); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(obj.DeepCopy())
		if obj.Labels == nil {
			obj.Labels = map[string]string{}
		}
		if value == "" {
			delete(obj.Labels, "dns.example.com/tier")
		} else {
			obj.Labels["dns.example.com/tier"] = value
		}
		if err := env.Client.Patch(ctx, &obj, patch); err != nil {
			t.Fatal(err)
		}
	}
	setLabel("gold")
	rec := writeUngranted(t, ns, zone, "www."+zone, []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www."+zone, "A", 60, "192.0.2.7")})
	m := startManager(t, nil, func(o *app.Options) {
		o.Grants.Grants = append(o.Grants.Grants, grant.Grant{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"dns.example.com/tier": "gold"}}, Domains: []string{zone}})
	})
	eventually(t, 10*time.Second, m.addr, "www."+zone, dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.7")
	waitFor(t, 10*time.Second, servedCondition(t, rec, "True Served"))

	setLabel("silver")
	eventually(t, 10*time.Second, m.addr, "www."+zone, dns.TypeA, netip.Addr{}, "REFUSED")
	waitFor(t, 10*time.Second, servedCondition(t, rec, "False NotGranted: zone s.example.com is served only when"))

	setLabel("gold")
	eventually(t, 10*time.Second, m.addr, "www."+zone, dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.7")
}

// A record set of 5,000 addresses and a TXT of over 64 KiB: the process stays up, dig over UDP and
// TCP gets SERVFAIL for those names (a clear refusal, well-formed), the records' status says why,
// and the other names of the zone keep answering.
func TestOversizedRecords(t *testing.T) {
	const zone = "o.example.com"
	ns := newNamespace(t)
	var many []string
	for i := range 5000 {
		many = append(many, fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256))
	}
	big := writeAuthoritative(t, ns, zone, "big."+zone, []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("big."+zone, "A", 60, many...)})
	txt := writeAuthoritative(t, ns, zone, "txt."+zone, []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("txt."+zone, "TXT", 60, strings.Repeat("x", 70*1024))})
	www := writeAuthoritative(t, ns, zone, "www."+zone, []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www."+zone, "A", 60, "192.0.2.1")})
	m := startManager(t, nil)
	eventually(t, 10*time.Second, m.addr, "www."+zone, dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.1")
	for _, tcp := range []string{"+notcp", "+tcp"} {
		for _, q := range [][2]string{{"big." + zone, "A"}, {"txt." + zone, "TXT"}} {
			if got := digShort(t, m.addr, q[0], q[1], tcp); got != "SERVFAIL" {
				t.Errorf("dig %s %s %s: %q, want SERVFAIL", tcp, q[0], q[1], got)
			}
		}
		if got := digShort(t, m.addr, "www."+zone, "A", tcp); got != "NOERROR 192.0.2.1" {
			t.Errorf("dig %s www: %q", tcp, got)
		}
	}
	waitFor(t, 10*time.Second, servedCondition(t, big, "False RecordsRefused"))
	// An authoritative record gets the target cap of any record (v1alpha1.MaxTargets) before its
	// size is measured; sets too large for one message are pinned in pkg/dnsserver's unit tests.
	waitFor(t, 10*time.Second, servedCondition(t, big, "more than the 1000 one endpoint may have"))
	waitFor(t, 10*time.Second, servedCondition(t, txt, "is 71973 bytes of record data"))
	waitFor(t, 10*time.Second, servedCondition(t, www, "True Served"))
	// Still the same process, serving.
	eventually(t, time.Second, m.addr, "www."+zone, dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.1")
	var rec v1alpha1.DNSRecord
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(big), &rec); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(rec.Status.Conditions, dnsservercontroller.ConditionServed); c == nil || c.ObservedGeneration != rec.Generation ||
		c.LastTransitionTime.IsZero() || len(c.Message) > 4096 {
		t.Errorf("condition %+v", c)
	} else if c.Status != metav1.ConditionFalse {
		t.Errorf("status %s", c.Status)
	}
}
