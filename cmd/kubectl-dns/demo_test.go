package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/hack/run/demo"
	"github.com/dnspolicy/dnspolicy-controller/pkg/builder"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/providers/coredns"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata from what the tests print")

// The demo's cluster and records need IDs; a real `make run` has random ones (the kube-system
// namespace's UID, each DNSRecord's UID), so these stand for them.
const demoCluster = "6f2c1d4e-8a3b-4c5d-9e7f-0a1b2c3d4e5f"

var demoRecordUIDs = map[string]types.UID{
	"eu-gateway": "0b9d6c1a-2e3f-4a5b-8c7d-1e2f3a4b5c6d",
	"us-gateway": "7a8b9c0d-1e2f-4a3b-9c4d-5e6f7a8b9c0d",
}

// demoCluster is the cluster `make run` seeds (package demo), as its controllers leave it: the
// default provider Secret of type kuadrant.io/coredns, one DNSRecord per Gateway as the policy
// controller writes it (its endpoints from package builder, its owner ID Kuadrant's hash8 of its
// UID), and the authoritative record of the host holding both trees, each record with its owner's
// claim in Kuadrant's form, as the record controller writes them through the endpoint backend.
func demoClient(t *testing.T) client.Client {
	t.Helper()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: demo.Namespace, Name: "embedded-dns", Labels: map[string]string{v1alpha1.DefaultProviderLabel: "true"}},
		Type:       v1alpha1.SecretTypeCoreDNS,
		Data:       map[string][]byte{v1alpha1.CoreDNSZonesKey: []byte(demo.Zone)},
	}
	objs := []client.Object{secret, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metav1.NamespaceSystem, UID: demoCluster}}}
	authoritative := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: demo.Namespace, Name: coredns.RecordName(demo.Host), Labels: coredns.RecordLabels(demo.Host, demo.Zone)},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: demo.Host},
	}
	authoritative.Labels[v1alpha1.ProviderNameLabel] = coredns.ProviderName
	published := map[v1alpha1.EndpointKey]bool{}
	for _, g := range demo.Gateways {
		eps, err := builder.Build(builder.Input{
			Hostname:    demo.Host,
			Addresses:   []gatewayapiv1.GatewayStatusAddress{{Type: ptr.To(gatewayapiv1.IPAddressType), Value: g.Address}},
			GatewayName: g.Name, GatewayNamespace: demo.Namespace, ClusterID: demoCluster, LoadBalancing: g.LoadBalancing(),
		})
		if err != nil {
			t.Fatal(err)
		}
		uid := demoRecordUIDs[g.Name]
		owner := hash.Base36(string(uid), 8)
		objs = append(objs, &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Namespace: demo.Namespace, Name: g.Name + "-" + demo.Listener, UID: uid, Labels: map[string]string{gatewayLabel: g.Name}},
			Spec:       v1alpha1.DNSRecordSpec{RootHost: demo.Host, Endpoints: eps},
			Status: v1alpha1.DNSRecordStatus{OwnerID: owner, ZoneID: authoritative.Name, ZoneDomainName: demo.Host,
				ProviderRef: v1alpha1.ProviderRef{Name: secret.Name}, Endpoints: eps},
		})
		for _, ep := range eps {
			// Records both trees share (the host's CNAME) are published once, claimed by each.
			if !published[ep.Key()] {
				published[ep.Key()] = true
				authoritative.Spec.Endpoints = append(authoritative.Spec.Endpoints, ep)
			}
			claim, err := registry.NewTXT(owner, ep)
			if err != nil {
				t.Fatal(err)
			}
			authoritative.Spec.Endpoints = append(authoritative.Spec.Endpoints, claim)
		}
	}
	objs = append(objs, authoritative)
	return fake.NewClientBuilder().WithScheme(apis.Scheme()).WithObjects(objs...).Build()
}

// demoTarget finds and reads the demo's zone as `kubectl dns explain api.demo.example.com -n
// dnspolicy-demo` does against `make run`: through the DNSRecord that publishes the host, its
// default provider Secret and the coredns backend.
func demoTarget(t *testing.T) (*target, *registry.Zone) {
	t.Helper()
	config := clientcmd.NewDefaultClientConfig(*clientcmdapi.NewConfig(), &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: demo.Namespace}})
	c := &cli{config: config}
	tg, err := c.resolve(t.Context(), demoClient(t), demo.Host, zoneFlags{})
	if err != nil {
		t.Fatal(err)
	}
	z, _, err := tg.read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return tg, z
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s ./cmd/kubectl-dns/ -update to write it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("kubectl dns explain output differs from %s (if the change is meant, rewrite it with -update and review the diff):\n%s", path, got)
	}
}

// The answers of the make-run demo, in each format, are pinned: a client in Ireland and every client
// no other set takes (the default geo) get the EU Gateway, a client in the US the US one.
func TestExplainDemo(t *testing.T) {
	tg, z := demoTarget(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	out := map[string][]byte{}
	for _, format := range []string{"table", "svg", "html"} {
		var b bytes.Buffer
		if err := explainAs(format, &b, tg, z, nil, demo.Host, now); err != nil {
			t.Fatal(err)
		}
		out[format] = b.Bytes()
	}
	golden(t, "explain-demo.txt", out["table"])
	golden(t, "explain-demo.svg", out["svg"])
	golden(t, "explain-demo.html", out["html"])

	// What the golden files say, checked in words: each geo's one leaf and its address.
	view, _ := answersOf(tg, z, nil, demo.Host)
	want := map[string]string{"IE": "172.31.1.10", "US": "172.31.2.10", "*": "172.31.1.10"}
	if len(view.Rows) != len(want) {
		t.Fatalf("demo answers: %+v", view.Rows)
	}
	for _, r := range view.Rows {
		if len(r.Addresses) != 1 || r.Addresses[0] != want[r.Geo] || r.Share != 1 || r.Weight != demo.Weight {
			t.Errorf("demo answer for geo %q: %+v, want %s", r.Geo, r, want[r.Geo])
		}
	}
	for _, line := range []string{
		"  IE   120     100.0%  172.31.1.10  ",
		"  US   120     100.0%  172.31.2.10  ",
		"  *    120     100.0%  172.31.1.10  ",
		demoCluster + " (this cluster)  dnspolicy-demo/eu-gateway  ",
	} {
		if !strings.Contains(string(out["table"]), line) {
			t.Errorf("explain lacks %q:\n%s", line, out["table"])
		}
	}

	checkSelfContained(t, "svg", out["svg"])
	checkSelfContained(t, "html", out["html"])
	checkXML(t, out["svg"])
	checkHTML(t, out["html"])
}

// checkSelfContained: the picture and the page reach nothing outside themselves.
func checkSelfContained(t *testing.T, what string, b []byte) {
	t.Helper()
	s := strings.ReplaceAll(string(b), `xmlns="http://www.w3.org/2000/svg"`, "")
	for _, bad := range []string{"<script", "href", "src=", "url(", "@import", "http:", "https:"} {
		if strings.Contains(s, bad) {
			t.Errorf("%s holds %q: it must be self-contained", what, bad)
		}
	}
}

// checkXML: the SVG is well-formed XML with an svg root.
func checkXML(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var root string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Errorf("the SVG's root element is %q", root)
	}
}

// checkHTML: the page tokenizes without error, and holds the picture and a table of the three
// answers (a header row and one row each).
func checkHTML(t *testing.T, b []byte) {
	t.Helper()
	checkHTMLParses(t, b)
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for n := range doc.Descendants() {
		if n.Type == html.ElementNode {
			count[n.Data]++
		}
	}
	if count["svg"] != 1 || count["table"] != 1 || count["tr"] != 4 || count["title"] < 1 {
		t.Errorf("the page holds %v elements; want one svg, one table of four rows", count)
	}
}

// checkHTMLParses: the page tokenizes to its end without error.
func checkHTMLParses(t *testing.T, b []byte) {
	t.Helper()
	z := html.NewTokenizer(bytes.NewReader(b))
	for z.Next() != html.ErrorToken {
	}
	if !errors.Is(z.Err(), io.EOF) {
		t.Fatalf("the page does not parse: %v", z.Err())
	}
}
