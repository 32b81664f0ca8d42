package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"sigs.k8s.io/yaml"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// The NS set names every server; glue is given for the names in the parent zone only, A and AAAA;
// every line reads back as a DNS record.
func TestDelegation(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"-zone", "GSLB.example.com.", "-parent", "example.com", "-ttl", "600",
		"-servers", "ns1.example.com=192.0.2.1, ns1.example.com=2001:db8::1,ns2.example.com=198.51.100.1,ns3.other.net=203.0.113.1"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		rr, err := dns.NewRR(line)
		if err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, strings.ReplaceAll(rr.String(), "\t", " "))
	}
	want := []string{
		"gslb.example.com. 600 IN NS ns1.example.com.",
		"gslb.example.com. 600 IN NS ns2.example.com.",
		"gslb.example.com. 600 IN NS ns3.other.net.",
		"ns1.example.com. 600 IN A 192.0.2.1",
		"ns1.example.com. 600 IN AAAA 2001:db8::1",
		"ns2.example.com. 600 IN A 198.51.100.1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, bad := range [][]string{
		{"-zone", "gslb.example.org", "-parent", "example.com", "-servers", "ns1.example.com=192.0.2.1"},
		{"-zone", "gslb.example.com", "-parent", "example.com", "-servers", "ns1.example.com"},
		{"-zone", "gslb.example.com", "-parent", "example.com"},
	} {
		if err := run(bad, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// -format dnsrecord prints a DNSRecord for the parent zone holding the same records, which reads
// back as one.
func TestDelegationRecord(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-format", "dnsrecord", "-namespace", "dns", "-secret", "route53", "-zone", "gslb.example.com", "-parent", "example.com",
		"-servers", "ns1.example.com=192.0.2.1,ns2.example.com=198.51.100.1"}, &out); err != nil {
		t.Fatal(err)
	}
	var rec v1alpha1.DNSRecord
	if err := yaml.UnmarshalStrict(out.Bytes(), &rec); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if rec.Kind != "DNSRecord" || rec.Name != "delegation-gslb" || rec.Namespace != "dns" || rec.Spec.RootHost != "example.com" ||
		rec.Spec.ProviderRef == nil || rec.Spec.ProviderRef.Name != "route53" {
		t.Errorf("record %+v", rec)
	}
	var got []string
	for _, e := range rec.Spec.Endpoints {
		got = append(got, e.DNSName+" "+e.RecordType+" "+strings.Join(e.Targets, ","))
	}
	want := "gslb.example.com NS ns1.example.com,ns2.example.com|ns1.example.com A 192.0.2.1|ns2.example.com A 198.51.100.1"
	if strings.Join(got, "|") != want {
		t.Errorf("endpoints %v, want %s", got, want)
	}
	if err := run([]string{"-format", "dnsrecord", "-zone", "gslb.example.com", "-parent", "example.com", "-servers", "ns1.example.com=192.0.2.1"}, &bytes.Buffer{}); err == nil {
		t.Error("-format dnsrecord without -secret accepted")
	}
}
