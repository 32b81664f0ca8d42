package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/miekg/dns"
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
