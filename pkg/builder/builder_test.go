package builder

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	dnspolicyv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/geo"
)

// The hashes in expected names were computed independently of pkg/hash, with Python's hashlib:
// base36 (0-9a-z) of the SHA-224 digest read as a big-endian integer, first six characters.
//
//	hash6("fbf71c44-6b37-4962-ace6-801912e769be") = 2q5hyv   (Kuadrant's builder test uses the same
//	hash6("TestName-TestNamespace")               = a8xcra    inputs and expects the same values)
//	hash6("7e1c0b5a-42f3-4c8e-9d0a-6b1f2e3d4c5b") = 1x8v6s
//	hash6("prod-web-gateway-system")              = 1s3imt
const (
	kuadrantClusterID = "fbf71c44-6b37-4962-ace6-801912e769be"
	otherClusterID    = "7e1c0b5a-42f3-4c8e-9d0a-6b1f2e3d4c5b"
)

func ipAddr(v string) gatewayapiv1.GatewayStatusAddress {
	t := gatewayapiv1.IPAddressType
	return gatewayapiv1.GatewayStatusAddress{Type: &t, Value: v}
}

func hostAddr(v string) gatewayapiv1.GatewayStatusAddress {
	t := gatewayapiv1.HostnameAddressType
	return gatewayapiv1.GatewayStatusAddress{Type: &t, Value: v}
}

func untyped(v string) gatewayapiv1.GatewayStatusAddress {
	return gatewayapiv1.GatewayStatusAddress{Value: v}
}

func namedAddr(v string) gatewayapiv1.GatewayStatusAddress {
	t := gatewayapiv1.NamedAddressType
	return gatewayapiv1.GatewayStatusAddress{Type: &t, Value: v}
}

// ep spells out an expected endpoint field by field; props are name, value pairs.
func ep(name, recordType string, ttl v1alpha1.TTL, setID string, targets []string, props ...string) *v1alpha1.Endpoint {
	e := &v1alpha1.Endpoint{DNSName: name, RecordType: recordType, RecordTTL: ttl, SetIdentifier: setID, Targets: targets}
	for i := 0; i < len(props); i += 2 {
		e.ProviderSpecific = append(e.ProviderSpecific, v1alpha1.ProviderSpecificProperty{Name: props[i], Value: props[i+1]})
	}
	return e
}

func lb(geo string, weight int, defaultGeo bool) *dnspolicyv1.LoadBalancingSpec {
	return &dnspolicyv1.LoadBalancingSpec{Geo: geo, Weight: weight, DefaultGeo: defaultGeo}
}

func TestBuild(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		want []*v1alpha1.Endpoint
	}{
		// Simple strategy.
		{
			name: "simple: IPs make one A record, targets sorted",
			in: Input{Hostname: "test.example.com", Addresses: []gatewayapiv1.GatewayStatusAddress{
				ipAddr("127.0.0.2"), ipAddr("127.0.0.1"), ipAddr("127.0.0.2"),
			}},
			want: []*v1alpha1.Endpoint{
				ep("test.example.com", "A", 60, "", []string{"127.0.0.1", "127.0.0.2"}),
			},
		},
		{
			name: "simple: a nil address type is IPAddress",
			in:   Input{Hostname: "test.example.com", Addresses: []gatewayapiv1.GatewayStatusAddress{untyped("10.0.0.1")}},
			want: []*v1alpha1.Endpoint{
				ep("test.example.com", "A", 60, "", []string{"10.0.0.1"}),
			},
		},
		{
			name: "simple: wildcard hostname",
			in:   Input{Hostname: "*.example.com", Addresses: []gatewayapiv1.GatewayStatusAddress{ipAddr("127.0.0.1"), ipAddr("127.0.0.2")}},
			want: []*v1alpha1.Endpoint{
				ep("*.example.com", "A", 60, "", []string{"127.0.0.1", "127.0.0.2"}),
			},
		},
		{
			name: "simple: a hostname address makes a CNAME",
			in:   Input{Hostname: "test.example.com", Addresses: []gatewayapiv1.GatewayStatusAddress{hostAddr("pat.the.cat")}},
			want: []*v1alpha1.Endpoint{
				ep("test.example.com", "CNAME", 60, "", []string{"pat.the.cat"}),
			},
		},
		{
			name: "simple: several hostnames make one multi-target CNAME, as in Kuadrant",
			in: Input{Hostname: "test.example.com", Addresses: []gatewayapiv1.GatewayStatusAddress{
				hostAddr("lb-b.example.net"), hostAddr("lb-a.example.net"), hostAddr("LB-A.example.net."),
			}},
			want: []*v1alpha1.Endpoint{
				ep("test.example.com", "CNAME", 60, "", []string{"lb-a.example.net", "lb-b.example.net"}),
			},
		},
		{
			name: "simple: address records win over a CNAME",
			in: Input{Hostname: "test.example.com", Addresses: []gatewayapiv1.GatewayStatusAddress{
				hostAddr("lb.example.net"), ipAddr("192.0.2.1"),
			}},
			want: []*v1alpha1.Endpoint{
				ep("test.example.com", "A", 60, "", []string{"192.0.2.1"}),
			},
		},
		{
			name: "simple: IPv6 goes into AAAA; mapped IPv4 into A",
			in: Input{Hostname: "test.example.com", Addresses: []gatewayapiv1.GatewayStatusAddress{
				ipAddr("2001:DB8::1"), ipAddr("::ffff:192.0.2.1"), hostAddr("lb.example.net"),
			}},
			want: []*v1alpha1.Endpoint{
				ep("test.example.com", "A", 60, "", []string{"192.0.2.1"}),
				ep("test.example.com", "AAAA", 60, "", []string{"2001:db8::1"}),
			},
		},
		{
			name: "simple: generated names are lower-cased",
			in:   Input{Hostname: "Test.Example.COM", Addresses: []gatewayapiv1.GatewayStatusAddress{ipAddr("192.0.2.1")}},
			want: []*v1alpha1.Endpoint{
				ep("test.example.com", "A", 60, "", []string{"192.0.2.1"}),
			},
		},
		{
			name: "simple: addresses of other types are left out",
			in: Input{Hostname: "test.example.com", Addresses: []gatewayapiv1.GatewayStatusAddress{
				namedAddr("my-named-address"), ipAddr("192.0.2.1"),
			}},
			want: []*v1alpha1.Endpoint{
				ep("test.example.com", "A", 60, "", []string{"192.0.2.1"}),
			},
		},

		// Load-balanced strategy: Kuadrant's own builder expectations (dns-operator pkg/builder
		// endpoints_test.go), reproduced name for name.
		{
			name: "kuadrant: IPs, geo IE, default geo",
			in: Input{
				Hostname:         "test.example.com",
				Addresses:        []gatewayapiv1.GatewayStatusAddress{ipAddr("127.0.0.1"), ipAddr("127.0.0.2")},
				GatewayName:      "TestName",
				GatewayNamespace: "TestNamespace",
				ClusterID:        kuadrantClusterID,
				LoadBalancing:    lb("IE", 120, true),
			},
			want: []*v1alpha1.Endpoint{
				ep("2q5hyv-a8xcra.klb.test.example.com", "A", 60, "", []string{"127.0.0.1", "127.0.0.2"}),
				ep("ie.klb.test.example.com", "CNAME", 60, "2q5hyv-a8xcra.klb.test.example.com",
					[]string{"2q5hyv-a8xcra.klb.test.example.com"}, "weight", "120"),
				ep("klb.test.example.com", "CNAME", 300, "IE", []string{"ie.klb.test.example.com"}, "geo-code", "IE"),
				ep("klb.test.example.com", "CNAME", 300, "default", []string{"ie.klb.test.example.com"}, "geo-code", "*"),
				ep("test.example.com", "CNAME", 300, "", []string{"klb.test.example.com"}),
			},
		},
		{
			name: "kuadrant: wildcard, geo IE, default geo",
			in: Input{
				Hostname:         "*.example.com",
				Addresses:        []gatewayapiv1.GatewayStatusAddress{ipAddr("127.0.0.1"), ipAddr("127.0.0.2")},
				GatewayName:      "TestName",
				GatewayNamespace: "TestNamespace",
				ClusterID:        kuadrantClusterID,
				LoadBalancing:    lb("IE", 120, true),
			},
			want: []*v1alpha1.Endpoint{
				ep("*.example.com", "CNAME", 300, "", []string{"klb.example.com"}),
				ep("2q5hyv-a8xcra.klb.example.com", "A", 60, "", []string{"127.0.0.1", "127.0.0.2"}),
				ep("ie.klb.example.com", "CNAME", 60, "2q5hyv-a8xcra.klb.example.com",
					[]string{"2q5hyv-a8xcra.klb.example.com"}, "weight", "120"),
				ep("klb.example.com", "CNAME", 300, "IE", []string{"ie.klb.example.com"}, "geo-code", "IE"),
				ep("klb.example.com", "CNAME", 300, "default", []string{"ie.klb.example.com"}, "geo-code", "*"),
			},
		},
		{
			name: "kuadrant: geo not checked here (CAD), no default geo",
			in: Input{
				Hostname:         "test.example.com",
				Addresses:        []gatewayapiv1.GatewayStatusAddress{ipAddr("127.0.0.1"), ipAddr("127.0.0.2")},
				GatewayName:      "TestName",
				GatewayNamespace: "TestNamespace",
				ClusterID:        kuadrantClusterID,
				LoadBalancing:    lb("CAD", 120, false),
			},
			want: []*v1alpha1.Endpoint{
				ep("2q5hyv-a8xcra.klb.test.example.com", "A", 60, "", []string{"127.0.0.1", "127.0.0.2"}),
				ep("cad.klb.test.example.com", "CNAME", 60, "2q5hyv-a8xcra.klb.test.example.com",
					[]string{"2q5hyv-a8xcra.klb.test.example.com"}, "weight", "120"),
				ep("klb.test.example.com", "CNAME", 300, "CAD", []string{"cad.klb.test.example.com"}, "geo-code", "CAD"),
				ep("test.example.com", "CNAME", 300, "", []string{"klb.test.example.com"}),
			},
		},

		// Load-balanced strategy: further shapes.
		{
			name: "hostname-only Gateway: no leaf, weighted CNAMEs point at the Gateway's hostnames",
			in: Input{
				Hostname:         "*.apps.example.com",
				Addresses:        []gatewayapiv1.GatewayStatusAddress{hostAddr("lb-b.example.net"), hostAddr("lb-a.example.net")},
				GatewayName:      "prod-web",
				GatewayNamespace: "gateway-system",
				ClusterID:        otherClusterID,
				LoadBalancing:    lb("GEO-EU", 50, false),
			},
			want: []*v1alpha1.Endpoint{
				ep("*.apps.example.com", "CNAME", 300, "", []string{"klb.apps.example.com"}),
				ep("geo-eu.klb.apps.example.com", "CNAME", 60, "lb-a.example.net", []string{"lb-a.example.net"}, "weight", "50"),
				ep("geo-eu.klb.apps.example.com", "CNAME", 60, "lb-b.example.net", []string{"lb-b.example.net"}, "weight", "50"),
				ep("klb.apps.example.com", "CNAME", 300, "GEO-EU", []string{"geo-eu.klb.apps.example.com"}, "geo-code", "GEO-EU"),
			},
		},
		{
			name: "mixed Gateway: IP leaf (A and AAAA) and hostname side by side in the weighted set",
			in: Input{
				Hostname: "shop.example.co.uk",
				Addresses: []gatewayapiv1.GatewayStatusAddress{
					hostAddr("gw.example.net"), ipAddr("2001:db8::1"), ipAddr("192.0.2.10"),
				},
				GatewayName:      "prod-web",
				GatewayNamespace: "gateway-system",
				ClusterID:        otherClusterID,
				LoadBalancing:    lb("US", 0, true),
			},
			want: []*v1alpha1.Endpoint{
				ep("1x8v6s-1s3imt.klb.shop.example.co.uk", "A", 60, "", []string{"192.0.2.10"}),
				ep("1x8v6s-1s3imt.klb.shop.example.co.uk", "AAAA", 60, "", []string{"2001:db8::1"}),
				ep("klb.shop.example.co.uk", "CNAME", 300, "US", []string{"us.klb.shop.example.co.uk"}, "geo-code", "US"),
				ep("klb.shop.example.co.uk", "CNAME", 300, "default", []string{"us.klb.shop.example.co.uk"}, "geo-code", "*"),
				ep("shop.example.co.uk", "CNAME", 300, "", []string{"klb.shop.example.co.uk"}),
				ep("us.klb.shop.example.co.uk", "CNAME", 60, "1x8v6s-1s3imt.klb.shop.example.co.uk",
					[]string{"1x8v6s-1s3imt.klb.shop.example.co.uk"}, "weight", "0"),
				ep("us.klb.shop.example.co.uk", "CNAME", 60, "gw.example.net", []string{"gw.example.net"}, "weight", "0"),
			},
		},
		{
			name: "continent with default geo, wildcard",
			in: Input{
				Hostname:         "*.example.com",
				Addresses:        []gatewayapiv1.GatewayStatusAddress{ipAddr("192.0.2.1")},
				GatewayName:      "prod-web",
				GatewayNamespace: "gateway-system",
				ClusterID:        otherClusterID,
				LoadBalancing:    lb("GEO-NA", 120, true),
			},
			want: []*v1alpha1.Endpoint{
				ep("*.example.com", "CNAME", 300, "", []string{"klb.example.com"}),
				ep("1x8v6s-1s3imt.klb.example.com", "A", 60, "", []string{"192.0.2.1"}),
				ep("geo-na.klb.example.com", "CNAME", 60, "1x8v6s-1s3imt.klb.example.com",
					[]string{"1x8v6s-1s3imt.klb.example.com"}, "weight", "120"),
				ep("klb.example.com", "CNAME", 300, "GEO-NA", []string{"geo-na.klb.example.com"}, "geo-code", "GEO-NA"),
				ep("klb.example.com", "CNAME", 300, "default", []string{"geo-na.klb.example.com"}, "geo-code", "*"),
			},
		},
		{
			name: "upper-case hostname: every generated name lower-cased, geo code kept as written",
			in: Input{
				Hostname:         "Shop.Example.COM",
				Addresses:        []gatewayapiv1.GatewayStatusAddress{ipAddr("192.0.2.1")},
				GatewayName:      "prod-web",
				GatewayNamespace: "gateway-system",
				ClusterID:        otherClusterID,
				LoadBalancing:    lb("IE", 10, false),
			},
			want: []*v1alpha1.Endpoint{
				ep("1x8v6s-1s3imt.klb.shop.example.com", "A", 60, "", []string{"192.0.2.1"}),
				ep("ie.klb.shop.example.com", "CNAME", 60, "1x8v6s-1s3imt.klb.shop.example.com",
					[]string{"1x8v6s-1s3imt.klb.shop.example.com"}, "weight", "10"),
				ep("klb.shop.example.com", "CNAME", 300, "IE", []string{"ie.klb.shop.example.com"}, "geo-code", "IE"),
				ep("shop.example.com", "CNAME", 300, "", []string{"klb.shop.example.com"}),
			},
		},

		// Excluded addresses.
		{
			name: "exclude: an exact IP, a hostname and a CIDR (Kuadrant's case)",
			in: Input{
				Hostname: "test.example.com",
				Addresses: []gatewayapiv1.GatewayStatusAddress{
					ipAddr("1.1.1.1"), hostAddr("example.com"), ipAddr("81.17.21.22"),
				},
				ExcludeAddresses: []string{"1.1.0.0/16", "10.0.0.1/32", "example.com"},
			},
			want: []*v1alpha1.Endpoint{
				ep("test.example.com", "A", 60, "", []string{"81.17.21.22"}),
			},
		},
		{
			name: "exclude: IPs by value, hostnames regardless of case, unmasked CIDRs",
			in: Input{
				Hostname: "test.example.com",
				Addresses: []gatewayapiv1.GatewayStatusAddress{
					ipAddr("2001:db8::5"), ipAddr("2001:db8:1::5"), ipAddr("192.0.2.77"), ipAddr("198.51.100.9"),
					hostAddr("Internal.LB.example.net"), hostAddr("public.lb.example.net"),
				},
				ExcludeAddresses: []string{"2001:DB8:0::5", "192.0.2.64/26", "internal.lb.example.net.", "198.51.100.1/24"},
			},
			want: []*v1alpha1.Endpoint{
				ep("test.example.com", "AAAA", 60, "", []string{"2001:db8:1::5"}),
			},
		},
		{
			name: "exclude: the IPs of a mixed Gateway, leaving the hostname in the weighted set",
			in: Input{
				Hostname:         "app.example.com",
				Addresses:        []gatewayapiv1.GatewayStatusAddress{ipAddr("10.1.2.3"), hostAddr("gw.example.net")},
				GatewayName:      "prod-web",
				GatewayNamespace: "gateway-system",
				ClusterID:        otherClusterID,
				LoadBalancing:    lb("IE", 120, false),
				ExcludeAddresses: []string{"10.0.0.0/8"},
			},
			want: []*v1alpha1.Endpoint{
				ep("app.example.com", "CNAME", 300, "", []string{"klb.app.example.com"}),
				ep("ie.klb.app.example.com", "CNAME", 60, "gw.example.net", []string{"gw.example.net"}, "weight", "120"),
				ep("klb.app.example.com", "CNAME", 300, "IE", []string{"ie.klb.app.example.com"}, "geo-code", "IE"),
			},
		},
		{
			name: "exclude: everything, so nothing to publish",
			in: Input{
				Hostname:         "app.example.com",
				Addresses:        []gatewayapiv1.GatewayStatusAddress{ipAddr("10.1.2.3"), hostAddr("gw.example.net")},
				GatewayName:      "prod-web",
				GatewayNamespace: "gateway-system",
				ClusterID:        otherClusterID,
				LoadBalancing:    lb("IE", 120, true),
				ExcludeAddresses: []string{"10.1.2.3", "gw.example.net"},
			},
		},
		{
			name: "no addresses at all, so nothing to publish",
			in:   Input{Hostname: "app.example.com"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Build(tc.in)
			if err != nil {
				t.Fatalf("Build() error = %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Build() =\n%s\nwant\n%s", render(got), render(tc.want))
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	valid := Input{
		Hostname:         "app.example.com",
		Addresses:        []gatewayapiv1.GatewayStatusAddress{ipAddr("192.0.2.1")},
		GatewayName:      "gw",
		GatewayNamespace: "ns",
		ClusterID:        otherClusterID,
		LoadBalancing:    lb("IE", 120, true),
	}
	for _, tc := range []struct {
		name    string
		change  func(*Input)
		wantErr string
	}{
		{"single label", func(in *Input) { in.Hostname = "cat" }, `invalid hostname "cat"`},
		{"empty", func(in *Input) { in.Hostname = "" }, `invalid hostname ""`},
		{"empty label", func(in *Input) { in.Hostname = "a..example.com" }, `invalid hostname "a..example.com"`},
		{"inner wildcard", func(in *Input) { in.Hostname = "a.*.example.com" }, `invalid hostname "a.*.example.com"`},
		{"bare wildcard", func(in *Input) { in.Hostname = "*." }, `invalid hostname "*."`},
		{"trailing dot", func(in *Input) { in.Hostname = "app.example.com." }, `invalid hostname "app.example.com."`},
		{"label too long", func(in *Input) { in.Hostname = strings.Repeat("a", 64) + ".example.com" }, `invalid hostname "` + strings.Repeat("a", 64) + `.example.com"`},
		{"cluster ID", func(in *Input) { in.ClusterID = "" }, "cluster ID is required"},
		{"negative weight", func(in *Input) { in.LoadBalancing.Weight = -1 }, "invalid weight expected a value >= 0"},
		{"no geo", func(in *Input) { in.LoadBalancing.Geo = "" }, "geo code is required"},
		{"geo not a label", func(in *Input) { in.LoadBalancing.Geo = "*" }, `geo code "*" cannot be used in a DNS name`},
		{"geo with a dot", func(in *Input) { in.LoadBalancing.Geo = "eu.west" }, `geo code "eu.west" cannot be used in a DNS name`},
		{"geo too long", func(in *Input) { in.LoadBalancing.Geo = strings.Repeat("x", 64) }, `geo code "` + strings.Repeat("x", 64) + `" cannot be used in a DNS name`},
		{"geo reserved", func(in *Input) { in.LoadBalancing.Geo = "default" }, `geo code "default" is reserved for the catch-all set`},
		{"bad CIDR", func(in *Input) { in.ExcludeAddresses = []string{"1.1.0.0/161", "example.com"} },
			`could not parse the CIDR from the excludeAddresses field: "1.1.0.0/161" is not a CIDR`},
		{"IP address that is not one", func(in *Input) { in.Addresses = []gatewayapiv1.GatewayStatusAddress{ipAddr("lb.example.net")} },
			`gateway address "lb.example.net" of type IPAddress is not an IP address`},
		{"IP address with a zone", func(in *Input) { in.Addresses = []gatewayapiv1.GatewayStatusAddress{ipAddr("fe80::1%eth0")} },
			`gateway address "fe80::1%eth0" of type IPAddress is not an IP address`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := valid
			l := *valid.LoadBalancing
			in.LoadBalancing = &l
			tc.change(&in)
			got, err := Build(in)
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("Build() error = %v, want %q", err, tc.wantErr)
			}
			if got != nil {
				t.Errorf("Build() returned endpoints with an error: %s", render(got))
			}
		})
	}
	in := valid
	in.LoadBalancing = lb("IE", -1, false)
	if _, err := Build(in); !errors.Is(err, geo.ErrWeight) {
		t.Errorf("negative weight error %v is not geo.ErrWeight", err)
	}
	// The simple strategy ignores what only the load-balanced one needs.
	in = valid
	in.ClusterID, in.LoadBalancing = "", nil
	if _, err := Build(in); err != nil {
		t.Errorf("simple strategy without a cluster ID: %v", err)
	}
}

// Two clusters, or two Gateways of one cluster, publishing the same hostname must produce the same
// upper names and distinct leaves, or their contributions would overwrite each other in the zone.
func TestLeavesAreDistinctPerClusterAndGateway(t *testing.T) {
	base := Input{
		Hostname:         "app.example.com",
		Addresses:        []gatewayapiv1.GatewayStatusAddress{ipAddr("192.0.2.1")},
		GatewayName:      "gw",
		GatewayNamespace: "ns",
		ClusterID:        kuadrantClusterID,
		LoadBalancing:    lb("IE", 120, false),
	}
	otherCluster, otherGateway := base, base
	otherCluster.ClusterID = otherClusterID
	otherGateway.GatewayNamespace = "ns2"

	leaves := map[string]bool{}
	for _, in := range []Input{base, otherCluster, otherGateway} {
		eps, err := Build(in)
		if err != nil {
			t.Fatal(err)
		}
		var upper []string
		for _, e := range eps {
			switch {
			case e.RecordType == "A":
				leaves[e.DNSName] = true
			case e.SetIdentifier == "" || e.DNSName == "klb.app.example.com":
				upper = append(upper, e.String())
			}
		}
		want := []string{
			`app.example.com 300 IN CNAME klb.app.example.com`,
			`klb.app.example.com 300 IN CNAME ie.klb.app.example.com (set "IE")`,
		}
		if !reflect.DeepEqual(upper, want) {
			t.Errorf("upper records differ between owners: %v", upper)
		}
	}
	if len(leaves) != 3 {
		t.Errorf("leaves are not distinct: %v", leaves)
	}
}

// FuzzBuild checks that any input either fails cleanly or yields a well-formed tree: names lower
// case and under the hostname, each (name, type, set) once, sorted, and every published address
// reachable from the hostname.
func FuzzBuild(f *testing.F) {
	f.Add("app.example.com", "192.0.2.1,lb.example.net,2001:db8::1", "IE", 120, true, true, "192.0.2.0/24")
	f.Add("*.Example.com", "lb.example.net", "GEO-EU", 0, false, true, "")
	f.Add("a.b", "10.0.0.1,10.0.0.1", "x", 1, true, false, "lb.example.net")
	f.Fuzz(func(t *testing.T, host, addrs, geoCode string, weight int, defaultGeo, loadBalanced bool, exclude string) {
		in := Input{Hostname: host, GatewayName: "gw", GatewayNamespace: "ns", ClusterID: "cluster"}
		for _, a := range strings.Split(addrs, ",") {
			if strings.ContainsAny(a, ":") || strings.Count(a, ".") == 3 && strings.Trim(a, "0123456789.") == "" {
				in.Addresses = append(in.Addresses, ipAddr(a))
			} else {
				in.Addresses = append(in.Addresses, hostAddr(a))
			}
		}
		if exclude != "" {
			in.ExcludeAddresses = strings.Split(exclude, ",")
		}
		if loadBalanced {
			in.LoadBalancing = lb(geoCode, weight, defaultGeo)
		}
		eps, err := Build(in)
		if err != nil {
			return
		}
		h := strings.ToLower(host)
		root := strings.TrimPrefix(h, "*.")
		seen := map[v1alpha1.EndpointKey]bool{}
		published := map[string]bool{}
		for i, e := range eps {
			if e.DNSName != strings.ToLower(e.DNSName) || e.DNSName != h && !strings.HasSuffix(e.DNSName, "."+root) {
				t.Fatalf("name %q is not lower case under %q", e.DNSName, h)
			}
			if seen[e.Key()] {
				t.Fatalf("%v twice", e.Key())
			}
			seen[e.Key()] = true
			if i > 0 && eps[i-1].DNSName+eps[i-1].SetIdentifier > e.DNSName+e.SetIdentifier {
				t.Fatalf("not sorted at %d: %s", i, render(eps))
			}
			if e.RecordType == "A" || e.RecordType == "AAAA" || e.RecordType == "CNAME" && !seenName(eps, e.Targets[0]) {
				for _, target := range e.Targets {
					published[target] = true
				}
			}
		}
		for target := range published {
			if !reachable(eps, h, target, 0) {
				t.Fatalf("%s is not reachable from %s:\n%s", target, h, render(eps))
			}
		}
	})
}

func seenName(eps []*v1alpha1.Endpoint, name string) bool {
	for _, e := range eps {
		if e.DNSName == name {
			return true
		}
	}
	return false
}

// reachable follows the endpoints from name, as a resolver would through CNAMEs, looking for target.
func reachable(eps []*v1alpha1.Endpoint, name, target string, depth int) bool {
	if depth > 5 {
		return false
	}
	for _, e := range eps {
		if e.DNSName != name {
			continue
		}
		for _, t := range e.Targets {
			if t == target || e.RecordType == "CNAME" && reachable(eps, t, target, depth+1) {
				return true
			}
		}
	}
	return false
}

func render(eps []*v1alpha1.Endpoint) string {
	var b strings.Builder
	for _, e := range eps {
		b.WriteString("  " + e.String())
		for _, p := range e.ProviderSpecific {
			b.WriteString(" " + p.Name + "=" + p.Value)
		}
		b.WriteString("\n")
	}
	return b.String()
}
