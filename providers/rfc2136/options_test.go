package rfc2136

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

const testSecret = "c2VjcmV0LXZhbHVlLW9mLXRoZS10ZXN0LWtleQ=="

func unitSecret(data map[string]string) *corev1.Secret {
	d := map[string]string{
		v1alpha1.RFC2136HostKey:        "ns1.example.internal",
		v1alpha1.RFC2136ZoneKey:        "Apps.Example.Internal., other.example.internal",
		v1alpha1.RFC2136TSIGKeyNameKey: "dnspolicy",
		v1alpha1.RFC2136TSIGSecretKey:  testSecret,
	}
	for k, v := range data {
		d[k] = v
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "dns"}, Type: v1alpha1.SecretTypeRFC2136, Data: map[string][]byte{}}
	for k, v := range d {
		if v != "" {
			s.Data[k] = []byte(v)
		}
	}
	return s
}

func TestParseOptions(t *testing.T) {
	opts, err := ParseOptions(unitSecret(nil))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Server != "ns1.example.internal:53" || opts.Transport != TransportTCP || opts.Algorithm != dns.HmacSHA256 ||
		opts.BatchChangeSize != DefaultBatchChangeSize || !opts.SignedTransfer || strings.Join(opts.Zones, ",") != "apps.example.internal,other.example.internal" {
		t.Errorf("defaults: %+v", opts)
	}
	opts, err = ParseOptions(unitSecret(map[string]string{
		v1alpha1.RFC2136HostKey: "::1", v1alpha1.RFC2136TransportKey: "TLS", v1alpha1.RFC2136TSIGSecretAlgKey: "hmac-sha512.",
		v1alpha1.RFC2136BatchChangeSizeKey: "200", v1alpha1.RFC2136TSIGAXFRKey: "false",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Server != "[::1]:853" || opts.TLS == nil || opts.Algorithm != dns.HmacSHA512 || opts.BatchChangeSize != 200 || opts.SignedTransfer {
		t.Errorf("set: %+v", opts)
	}

	for key, value := range map[string]string{
		v1alpha1.RFC2136HostKey:            "",
		v1alpha1.RFC2136PortKey:            "70000",
		v1alpha1.RFC2136ZoneKey:            " , ",
		v1alpha1.RFC2136TSIGKeyNameKey:     "",
		v1alpha1.RFC2136TSIGSecretKey:      "not base64!",
		v1alpha1.RFC2136TSIGSecretAlgKey:   "hmac-md5",
		v1alpha1.RFC2136TransportKey:       "quic",
		v1alpha1.RFC2136TLSCAKey:           "no pem",
		v1alpha1.RFC2136BatchChangeSizeKey: "-5",
		v1alpha1.RFC2136TSIGAXFRKey:        "maybe",
	} {
		_, err := ParseOptions(unitSecret(map[string]string{key: value}))
		if err == nil {
			t.Errorf("%s=%q: accepted", key, value)
			continue
		}
		if !strings.Contains(err.Error(), "team-a/dns") || !strings.Contains(err.Error(), key) ||
			(value != "" && strings.Contains(err.Error(), value)) || strings.Contains(err.Error(), testSecret) {
			t.Errorf("%s=%q: %v, want the Secret and the key named and no value", key, value, err)
		}
	}
}

func TestAdjustEndpoints(t *testing.T) {
	p := NewWithOptions(Options{BatchChangeSize: 50})
	got, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("A.Example.Internal.", v1alpha1.RecordTypeA, 0, "192.0.2.1", "192.0.2.1"),
		v1alpha1.NewEndpoint("c.example.internal", v1alpha1.RecordTypeCNAME, 60, "Target.Example.NET."),
		v1alpha1.NewEndpoint("t.example.internal", v1alpha1.RecordTypeTXT, 60, `some "text"`, `"heritage=external-dns,external-dns/owner=a"`),
		v1alpha1.NewEndpoint("m.example.internal", "MX", 60, "10 mail.example.internal"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`a.example.internal 300 IN A 192.0.2.1`,
		`c.example.internal 60 IN CNAME target.example.net`,
		`t.example.internal 60 IN TXT "heritage=external-dns,external-dns/owner=a","some \"text\""`,
		`m.example.internal 60 IN MX 10 mail.example.internal`,
	}
	for i, ep := range got {
		if ep.String() != want[i] {
			t.Errorf("adjusted %d = %s, want %s", i, ep, want[i])
		}
	}
	again, err := p.AdjustEndpoints(got)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if !again[i].SameValues(got[i]) || again[i].String() != got[i].String() {
			t.Errorf("adjusting again changed %s to %s", got[i], again[i])
		}
	}

	// A TXT value longer than one character string (255 bytes) is split, and reads back the same.
	long := strings.Repeat("x", 300)
	split, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{v1alpha1.NewEndpoint("l.example.internal", v1alpha1.RecordTypeTXT, 60, long)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `"` + long[:255] + `" "` + long[255:] + `"`; split[0].Targets[0] != want {
		t.Errorf("a 300-byte TXT value adjusted to %q, want two strings", split[0].Targets[0])
	}
	rr, err := parseRR("l.example.internal", v1alpha1.RecordTypeTXT, 60, split[0].Targets[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := endpointsOf([]dns.RR{rr})[0].Targets[0]; got != split[0].Targets[0] {
		t.Errorf("read back as %q, want %q", got, split[0].Targets[0])
	}

	for _, bad := range []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("w.example.internal", v1alpha1.RecordTypeA, 60, "192.0.2.1").
			WithSetIdentifier("a").WithProviderSpecific(v1alpha1.ProviderSpecificWeight, "10"),
		v1alpha1.NewEndpoint("g.example.internal", v1alpha1.RecordTypeCNAME, 60, "x.example.net").
			WithProviderSpecific(v1alpha1.ProviderSpecificGeoCode, "GEO-EU"),
		v1alpha1.NewEndpoint("a.example.internal", v1alpha1.RecordTypeA, 60, "not-an-address"),
		v1alpha1.NewEndpoint("a.example.internal", "NOSUCHTYPE", 60, "x"),
		v1alpha1.NewEndpoint("c.example.internal", v1alpha1.RecordTypeCNAME, 60, "x.example.net", "y.example.net"),
	} {
		if _, err := p.AdjustEndpoints([]*v1alpha1.Endpoint{bad}); providers.KindOf(err) != providers.Permanent || err == nil {
			t.Errorf("AdjustEndpoints(%s) = %v, want a Permanent error", bad, err)
		}
	}
}

// The update of a batch states what it assumes of the zone, so a concurrent writer's change fails
// it: the old values of what it deletes and updates, and the absence of what it creates (and of a
// CNAME beside a created set).
func TestUpdateMessageCarriesPrerequisites(t *testing.T) {
	old := v1alpha1.NewEndpoint("u.example.internal", v1alpha1.RecordTypeA, 60, "192.0.2.1")
	updated := v1alpha1.NewEndpoint("u.example.internal", v1alpha1.RecordTypeA, 60, "192.0.2.2")
	gone := v1alpha1.NewEndpoint("d.example.internal", v1alpha1.RecordTypeTXT, 60, `"x"`)
	created := v1alpha1.NewEndpoint("c.example.internal", v1alpha1.RecordTypeA, 60, "192.0.2.3")
	alias := v1alpha1.NewEndpoint("n.example.internal", v1alpha1.RecordTypeCNAME, 60, "t.example.net")
	required := v1alpha1.NewEndpoint("r.example.internal", v1alpha1.RecordTypeA, 60, "192.0.2.4")
	m, err := updateMessage("example.internal", &providers.Changes{
		UpdateOld: []*v1alpha1.Endpoint{old}, UpdateNew: []*v1alpha1.Endpoint{updated},
		Delete: []*v1alpha1.Endpoint{gone}, Create: []*v1alpha1.Endpoint{created, alias}, Require: []*v1alpha1.Endpoint{required},
	})
	if err != nil {
		t.Fatal(err)
	}
	var prereqs, updates []string
	for _, rr := range m.Answer {
		prereqs = append(prereqs, strings.Join(strings.Fields(rr.String()), " "))
	}
	for _, rr := range m.Ns {
		updates = append(updates, strings.Join(strings.Fields(rr.String()), " "))
	}
	wantPrereqs := []string{
		`d.example.internal. 0 IN TXT "x"`,
		`u.example.internal. 0 IN A 192.0.2.1`,
		`r.example.internal. 0 IN A 192.0.2.4`,
		`c.example.internal. 0 NONE A`,
		`c.example.internal. 0 NONE CNAME`,
		`n.example.internal. 0 NONE CNAME`,
		`n.example.internal. 0 NONE ANY`,
	}
	wantUpdates := []string{
		`d.example.internal. 0 CLASS255 TXT`,
		`u.example.internal. 0 CLASS255 A`,
		`u.example.internal. 60 IN A 192.0.2.2`,
		`c.example.internal. 60 IN A 192.0.2.3`,
		`n.example.internal. 60 IN CNAME t.example.net.`,
	}
	if strings.Join(prereqs, "\n") != strings.Join(wantPrereqs, "\n") {
		t.Errorf("prerequisites:\n%s\nwant\n%s", strings.Join(prereqs, "\n"), strings.Join(wantPrereqs, "\n"))
	}
	if strings.Join(updates, "\n") != strings.Join(wantUpdates, "\n") {
		t.Errorf("updates:\n%s\nwant\n%s", strings.Join(updates, "\n"), strings.Join(wantUpdates, "\n"))
	}
}
