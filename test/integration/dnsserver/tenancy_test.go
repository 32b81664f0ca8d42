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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	dnsservercontroller "github.com/dnspolicy/dnspolicy-controller/controllers/dnsserver"
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

// A second namespace, not entitled to the zone, writes authoritative records for a hostname of the
// first, a name of its own and the zone's NS: dig answers are unchanged, and its records say why.
// The apex NS and SOA cannot be changed by an entitled namespace either. Entitling the namespace
// with a provider Secret lets it in; an explicit allow-list keeps it out again.
func TestTenancy(t *testing.T) {
	const zone = "t.example.com"
	owner, intruder := newNamespace(t), newNamespace(t)
	www := writeAuthoritative(t, owner, zone, "www."+zone, []*v1alpha1.Endpoint{v1alpha1.NewEndpoint("www."+zone, "A", 60, "192.0.2.1")})
	apex := writeAuthoritative(t, owner, zone, zone, []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint(zone, "NS", 300, "ns.elsewhere.example.net"),
		v1alpha1.NewEndpoint(zone, "A", 60, "192.0.2.100"),
	})
	hijack := writeUnentitled(t, intruder, zone, "www."+zone, []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("www."+zone, "A", 60, "203.0.113.66"),
		v1alpha1.NewEndpoint("evil.www."+zone, "A", 60, "203.0.113.66"),
	})
	redelegate := writeUnentitled(t, intruder, zone, zone, []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint(zone, "NS", 300, "ns.intruder.example.net"),
	})
	m := startManager(t, nil, func(o *app.Options) { o.DNSNameservers = []string{"ns1.t.example.com", "ns2.t.example.com"} })
	eventually(t, 10*time.Second, m.addr, "www."+zone, dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.1")

	check := func(wantWWW, wantEvil string) {
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
		}
	}
	check("NOERROR 192.0.2.1", "NXDOMAIN")
	for _, c := range []struct {
		rec  *v1alpha1.DNSRecord
		want string
	}{
		{www, "True Served"},
		{apex, "False RecordsRefused: 1 endpoint(s)"},
		{apex, "the apex NS comes from the server's configuration"},
		{hijack, "False NotEntitled: namespace " + intruder + " may not serve records in zone t.example.com: no kuadrant.io/coredns Secret"},
		{redelegate, "False NotEntitled"},
	} {
		waitFor(t, 10*time.Second, servedCondition(t, c.rec, c.want))
	}

	// A provider Secret listing the zone entitles the namespace: its records join the zone (the
	// union of targets, DESIGN 4b), but the apex NS still comes from the configuration.
	entitle(t, intruder, zone)
	eventually(t, 10*time.Second, m.addr, "evil.www."+zone, dns.TypeA, netip.Addr{}, "NOERROR 203.0.113.66")
	check("NOERROR 192.0.2.1 | 203.0.113.66", "NOERROR 203.0.113.66")
	waitFor(t, 10*time.Second, servedCondition(t, redelegate, "False RecordsRefused"))

	// An explicit allow-list for the zone overrides Secrets.
	m.stop()
	listed := startManager(t, nil, func(o *app.Options) {
		o.DNSNameservers = []string{"ns1.t.example.com", "ns2.t.example.com"}
		o.DNSServer.ZoneNamespaces = map[string][]string{zone: {owner}}
	})
	m = listed
	eventually(t, 10*time.Second, m.addr, "www."+zone, dns.TypeA, netip.Addr{}, "NOERROR 192.0.2.1")
	check("NOERROR 192.0.2.1", "NXDOMAIN")
	waitFor(t, 10*time.Second, servedCondition(t, hijack, "False NotEntitled: namespace "+intruder+" may not serve records in zone t.example.com: the zone's namespaces are listed in --dns-zone-namespaces"))
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
