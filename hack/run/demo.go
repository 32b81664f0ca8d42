package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis"
	dnsv1 "github.com/dnspolicy/dnspolicy-controller/apis/v1"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/hack/run/demo"
	"github.com/dnspolicy/dnspolicy-controller/test/geodb"
)

// The demo a local control plane is seeded with (package demo): two Gateways standing for two
// clusters, publishing one hostname through the embedded server.
const (
	demoNamespace = demo.Namespace
	demoZone      = demo.Zone
	demoHost      = demo.Host
)

var (
	demoNetworks = demo.Networks
	demoGateways = demo.Gateways
)

// writeDemoGeoDB writes the demo MaxMind-format country database to path.
func writeDemoGeoDB(path string) error {
	var networks []geodb.Network
	for _, n := range demoNetworks {
		networks = append(networks, geodb.Network{CIDR: n.CIDR, Country: n.Country, Continent: n.Continent})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return geodb.Write(path, networks...)
}

// seedDemo creates the demo namespace, the default provider Secret (kuadrant.io/coredns, or
// kuadrant.io/rfc2136 for a BIND of the user's: rfc2136.go; it picks the backend; the namespace's
// grant of the zone is the controller's --grant, runLocal), the Gateways with the status an
// implementation would write (no Gateway implementation runs here), and a loadbalanced DNSPolicy
// per Gateway for host. Objects that exist are left as they are.
func seedDemo(ctx context.Context, cfg *rest.Config, provider *corev1.Secret, host string) error {
	c, err := client.New(cfg, client.Options{Scheme: apis.Scheme()})
	if err != nil {
		return err
	}
	create := func(obj client.Object) error {
		if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
		return nil
	}
	if err := create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demoNamespace}}); err != nil {
		return err
	}
	if err := create(provider); err != nil {
		return err
	}
	for _, g := range demoGateways {
		gw := &gatewayapiv1.Gateway{
			ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: g.Name},
			Spec: gatewayapiv1.GatewaySpec{
				GatewayClassName: "demo",
				Listeners: []gatewayapiv1.Listener{{
					Name: demo.Listener, Hostname: ptr.To(gatewayapiv1.Hostname(host)), Port: 80, Protocol: gatewayapiv1.HTTPProtocolType,
				}},
			},
		}
		if err := create(gw); err != nil {
			return err
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		gw.Status.Addresses = []gatewayapiv1.GatewayStatusAddress{{Type: ptr.To(gatewayapiv1.IPAddressType), Value: g.Address}}
		gw.Status.Listeners = []gatewayapiv1.ListenerStatus{{
			Name: demo.Listener, AttachedRoutes: 1, SupportedKinds: []gatewayapiv1.RouteGroupKind{},
			Conditions: []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed", LastTransitionTime: metav1.Now()}},
		}}
		if err := c.Status().Update(ctx, gw); err != nil {
			return fmt.Errorf("writing the status of Gateway %s: %w", g.Name, err)
		}
		p := &dnsv1.DNSPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: g.Name}}
		p.Spec.TargetRef.Group = gatewayapiv1.GroupName
		p.Spec.TargetRef.Kind = "Gateway"
		p.Spec.TargetRef.Name = gatewayapiv1.ObjectName(g.Name)
		p.Spec.LoadBalancing = g.LoadBalancing()
		if err := create(p); err != nil {
			return err
		}
	}
	return nil
}

// embeddedDNSSecret is the demo's default provider Secret without a server of the user's: the
// embedded DNS server serves demoZone.
func embeddedDNSSecret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: demoNamespace, Name: "embedded-dns",
			Labels: map[string]string{v1alpha1.DefaultProviderLabel: "true"}},
		Type:       v1alpha1.SecretTypeCoreDNS,
		StringData: map[string]string{v1alpha1.CoreDNSZonesKey: demoZone},
	}
}

// demoQueries are the dig commands printed, with the address each should answer.
func demoQueries(server netip.AddrPort) []struct{ command, subnet, want string } {
	base := fmt.Sprintf("dig @%s -p %d %s", server.Addr(), server.Port(), demoHost)
	return []struct{ command, subnet, want string }{
		{base + " +subnet=" + demoNetworks[0].Client + "/24", demoNetworks[0].Client, demoGateways[0].Address},
		{base + " +subnet=" + demoNetworks[1].Client + "/24", demoNetworks[1].Client, demoGateways[1].Address},
		{base + " +subnet=" + demoNetworks[2].Client + "/24", demoNetworks[2].Client, demoGateways[0].Address},
		{base, "", demoGateways[0].Address},
	}
}

// awaitDemo waits until the server answers every demo query as it should, then prints the dig
// commands that show it. It gives up quietly when ctx ends.
func awaitDemo(ctx context.Context, server netip.AddrPort) {
	queries := demoQueries(server)
	for {
		ok := true
		for _, q := range queries {
			if got, _ := demoAnswer(server, q.subnet); !slices.Contains(got, q.want) || len(got) != 1 {
				ok = false
				break
			}
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe embedded DNS server answers %s (namespace %s, zone %s).\n", demoHost, demoNamespace, demoZone)
	fmt.Fprintf(&b, "Demo geo database: %s is IE, %s is US, %s is DE (documentation ranges, not real data).\n",
		demoNetworks[0].CIDR, demoNetworks[1].CIDR, demoNetworks[2].CIDR)
	for i, q := range queries {
		where := []string{"a client in Ireland (IE): the EU gateway", "a client in the US: the US gateway",
			"a client in Germany, which no gateway claims: the default geo, the EU gateway",
			"no subnet, loopback is in no country: the default geo, the EU gateway"}[i]
		fmt.Fprintf(&b, "  %s   # %s, %s\n", q.command, where, q.want)
	}
	fmt.Print(b.String())
}

// demoAnswer asks the server for the demo host's addresses, from subnet when given.
func demoAnswer(server netip.AddrPort, subnet string) ([]string, error) {
	return answer(server, demoHost, subnet)
}

// answer asks the server for a host's addresses, from subnet when given.
func answer(server netip.AddrPort, host, subnet string) ([]string, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(host), dns.TypeA)
	m.SetEdns0(1232, false)
	if subnet != "" {
		m.IsEdns0().Option = append(m.IsEdns0().Option, &dns.EDNS0_SUBNET{
			Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.ParseIP(subnet),
		})
	}
	r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, server.String())
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			addrs = append(addrs, a.A.String())
		}
	}
	return addrs, nil
}
