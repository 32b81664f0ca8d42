package main

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/utils/ptr"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
	"github.com/dnspolicy/dnspolicy-controller/pkg/health"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// claimed is each endpoint followed by owner's claim on it, in Kuadrant's form.
func claimed(t *testing.T, owner string, eps ...*v1alpha1.Endpoint) []*v1alpha1.Endpoint {
	t.Helper()
	var out []*v1alpha1.Endpoint
	for _, ep := range eps {
		txt, err := registry.NewTXT(owner, ep)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ep, txt)
	}
	return out
}

// lbTree is the loadbalanced tree one cluster's Gateway publishes for host, claimed by its owner
// (the cluster's name) with the owner's claims. An address that is not an IP is a hostname.
func lbTree(t *testing.T, host, cluster, geo string, weight int, defaultGeo bool, address string) []*v1alpha1.Endpoint {
	t.Helper()
	typ := gatewayapiv1.IPAddressType
	if !strings.ContainsAny(address, ":") && strings.Trim(address, "0123456789.") != "" {
		typ = gatewayapiv1.HostnameAddressType
	}
	eps, err := builder.Build(builder.Input{
		Hostname: host, Addresses: []gatewayapiv1.GatewayStatusAddress{{Type: ptr.To(typ), Value: address}},
		GatewayName: "gw", GatewayNamespace: "default", ClusterID: cluster,
		LoadBalancing: &dnsv1.LoadBalancingSpec{Weight: weight, Geo: geo, DefaultGeo: defaultGeo},
	})
	if err != nil {
		t.Fatal(err)
	}
	return claimed(t, cluster, eps...)
}

// rowText is a row without its leaf name (a hash) and notes: geo, weight, share, answer, owners.
func rowText(r answer) string {
	w := "-"
	if r.Weighted {
		w = strconv.FormatUint(r.Weight, 10)
	}
	got := strings.Join(r.Addresses, ",")
	if r.CNAME != "" {
		got = "CNAME " + r.CNAME
	}
	return fmt.Sprintf("%s %s %s %s %s", geoLabel(r.Geo), w, percent(r.Share), dash(got), dash(strings.Join(r.Owners, ",")))
}

func TestAnswers(t *testing.T) {
	const lb = "lb.example.com"
	a := func(name, typ string, targets ...string) *v1alpha1.Endpoint {
		return v1alpha1.NewEndpoint(name, typ, 60, targets...)
	}
	for _, tc := range []struct {
		name, host string
		zone       [][]*v1alpha1.Endpoint
		want       []string
		// note is a note some row must have; wildcard the wildcard that answers.
		note, wildcard string
	}{{
		name: "two clusters share a continent by weight, a third is the US and the default",
		host: lb,
		zone: [][]*v1alpha1.Endpoint{
			lbTree(t, lb, "cluster-eu1", "GEO-EU", 300, false, "10.1.0.1"),
			lbTree(t, lb, "cluster-eu2", "GEO-EU", 100, false, "10.1.0.2"),
			lbTree(t, lb, "cluster-us", "US", 120, true, "10.2.0.1"),
		},
		// Within a set, members in the order of their set identifiers (the leaf names).
		want: []string{"GEO-EU 100 25.0% 10.1.0.2 cluster-eu2", "GEO-EU 300 75.0% 10.1.0.1 cluster-eu1", "US 120 100.0% 10.2.0.1 cluster-us", "* 120 100.0% 10.2.0.1 cluster-us"},
	}, {
		name: "a simple host: every client, the addresses",
		host: "www.example.com",
		zone: [][]*v1alpha1.Endpoint{claimed(t, "owner-a", a("www.example.com", "A", "10.0.0.1"), a("www.example.com", "AAAA", "2001:db8::1"))},
		want: []string{"all - 100.0% 10.0.0.1,2001:db8::1 owner-a"},
	}, {
		name: "nothing published",
		host: "none.example.com",
		zone: [][]*v1alpha1.Endpoint{{a("www.example.com", "A", "10.0.0.1")}},
	}, {
		name: "a name only a wildcard covers", host: "x.apps.example.com", wildcard: "*.apps.example.com",
		zone: [][]*v1alpha1.Endpoint{{a("*.apps.example.com", "A", "10.0.0.5")}},
		want: []string{"all - 100.0% 10.0.0.5 -"},
	}, {
		name: "a wildcard host's own tree", host: "*.apps.example.com",
		zone: [][]*v1alpha1.Endpoint{lbTree(t, "*.apps.example.com", "cluster-a", "IE", 10, true, "10.0.0.6")},
		want: []string{"IE 10 100.0% 10.0.0.6 cluster-a", "* 10 100.0% 10.0.0.6 cluster-a"},
	}, {
		name: "a Gateway with a hostname: the chain leaves the zone", host: lb,
		zone: [][]*v1alpha1.Endpoint{lbTree(t, lb, "cluster-a", "IE", 10, true, "gw-1.elb.example.net")},
		want: []string{"IE 10 100.0% CNAME gw-1.elb.example.net cluster-a", "* 10 100.0% CNAME gw-1.elb.example.net cluster-a"},
	}, {
		name: "no default geo set", host: lb, note: "no default geo set: the embedded server answers other clients with the first set (IE)",
		zone: [][]*v1alpha1.Endpoint{lbTree(t, lb, "cluster-a", "IE", 10, false, "10.0.0.7")},
		want: []string{"IE 10 100.0% 10.0.0.7 cluster-a", "* 10 100.0% 10.0.0.7 cluster-a"},
	}, {
		name: "every weight 0: the server picks evenly", host: lb,
		zone: [][]*v1alpha1.Endpoint{lbTree(t, lb, "cluster-a", "IE", 0, true, "10.0.0.8"), lbTree(t, lb, "cluster-b", "IE", 0, false, "10.0.0.9")},
		want: []string{"IE 0 50.0% 10.0.0.8 cluster-a", "IE 0 50.0% 10.0.0.9 cluster-b", "* 0 50.0% 10.0.0.8 cluster-a", "* 0 50.0% 10.0.0.9 cluster-b"},
	}, {
		name: "an owner states its leaves fail", host: lb, note: "UNHEALTHY: cluster-b states that none of its leaves passes its health checks",
		zone: [][]*v1alpha1.Endpoint{
			lbTree(t, lb, "cluster-a", "IE", 10, true, "10.0.0.10"), lbTree(t, lb, "cluster-b", "US", 10, false, "10.0.0.11"),
			{health.Statement{Owner: "cluster-b", Healthy: false, Renewal: 3}.Record(lb), health.Statement{Owner: "cluster-a", Healthy: true, Renewal: 3}.Record(lb)},
		},
		want: []string{"IE 10 100.0% 10.0.0.10 cluster-a", "US 10 100.0% 10.0.0.11 cluster-b", "* 10 100.0% 10.0.0.10 cluster-a"},
	}, {
		name: "a CNAME to a name of the zone with nothing there", host: "a.example.com", note: "nothing is published at b.example.com: these clients get no address",
		zone: [][]*v1alpha1.Endpoint{claimed(t, "owner-a", a("a.example.com", "CNAME", "b.example.com"))},
		want: []string{"all - 100.0% - owner-a"},
	}, {
		name: "a CNAME loop", host: "a.example.com", note: "the CNAME chain is longer than 16 names",
		zone: [][]*v1alpha1.Endpoint{{a("a.example.com", "CNAME", "b.example.com"), a("b.example.com", "CNAME", "a.example.com")}},
		want: []string{"all - 100.0% - -"},
	}, {
		name: "a record type claimed and not published", host: "c.example.com", note: "AAAA c.example.com is claimed by owner-b but not published",
		zone: [][]*v1alpha1.Endpoint{claimed(t, "owner-a", a("c.example.com", "A", "10.0.0.12")), claimed(t, "owner-b", a("c.example.com", "AAAA", "2001:db8::2"))[1:]},
		want: []string{"all - 100.0% 10.0.0.12 owner-a,owner-b"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			v := answers(registry.Read(slices.Concat(tc.zone...)), "example.com", tc.host)
			var got []string
			var notes []string
			for _, r := range v.Rows {
				got = append(got, rowText(r))
				notes = append(notes, r.Notes...)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if tc.note != "" && !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, tc.note) }) {
				t.Errorf("no row notes %q: %q", tc.note, notes)
			}
			if tc.note == "" && len(notes) > 0 {
				t.Errorf("unexpected notes %q", notes)
			}
			if v.Wildcard != tc.wildcard {
				t.Errorf("answered by wildcard %q, want %q", v.Wildcard, tc.wildcard)
			}
		})
	}
}

// The renderers show what the rows say: a weighted geo's boxes split its column by share, a row's
// notes mark its box and follow it in the table, and an empty view says so in every format.
func TestAnswersRendering(t *testing.T) {
	const lb = "lb.example.com"
	z := registry.Read(slices.Concat(
		lbTree(t, lb, "cluster-a", "IE", 300, true, "10.0.0.1"), lbTree(t, lb, "cluster-b", "IE", 100, false, "10.0.0.2"),
		[]*v1alpha1.Endpoint{health.Statement{Owner: "cluster-b", Renewal: 1}.Record(lb)}))
	v := answers(z, "example.com", lb)
	wh := describeOwners(z, "example.com", []string{"cluster-a", "cluster-b"}, nil, "cluster-a")

	var table bytes.Buffer
	printAnswers(&table, v, wh)
	for _, want := range []string{
		"  IE   300     75.0%  10.0.0.1   cluster-a  cluster-a (this cluster)  -        ",
		"  IE   100     25.0%  10.0.0.2   cluster-b  hash ",
		"    ! UNHEALTHY: cluster-b states that none of its leaves passes its health checks",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}

	var svg bytes.Buffer
	if err := writeSVG(&svg, "Who answers "+lb, v, wh); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`width="340" height="225.0" fill="#cfe2f3" stroke="#333333"`,
		`y="329.0" width="340" height="75.0" fill="#d9ead3" stroke="#cc0000" stroke-width="1.5" stroke-dasharray="6 3"`,
	} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("svg lacks %q:\n%s", want, svg.String())
		}
	}
	checkXML(t, svg.Bytes())

	empty := answers(z, "example.com", "none.example.com")
	var out bytes.Buffer
	printAnswers(&out, empty, wh)
	if want := "answers: nothing is published at none.example.com: every client gets no address (NXDOMAIN or no data)\n"; out.String() != want {
		t.Errorf("empty table: %q", out.String())
	}
	out.Reset()
	if err := writeHTML(&out, "Who answers none.example.com", "zone example.com", empty, wh); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "nothing is published at none.example.com: every client gets no address") || strings.Contains(out.String(), "<table>") {
		t.Errorf("empty page:\n%s", out.String())
	}
	checkHTMLParses(t, out.Bytes())
}
