package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// An authoritative record of a delegation primary holding three contributors: this cluster's
// record (a stated wish), another cluster's whose claim names its lease, and one in Kuadrant's
// format on the AAAA record (no wish, no lease). Each address is told by the contributor that
// wants it, an address of one family never by a claim on the other's record, and each
// contributor by what is known of it.
func TestDelegatedOrigins(t *testing.T) {
	const host, otherCluster = "app.example.com", "other-cluster-uid"
	a := v1alpha1.NewEndpoint(host, "A", 60, "10.0.0.1", "10.0.0.2")
	aaaa := v1alpha1.NewEndpoint(host, "AAAA", 60, "2001:db8::1")
	claim := func(e *v1alpha1.Endpoint, err error) *v1alpha1.Endpoint {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	endpoints := []*v1alpha1.Endpoint{
		a, aaaa,
		claim(registry.NewWishTXT("pri", "", v1alpha1.NewEndpoint(host, "A", 60, "10.0.0.1"))),
		claim(registry.NewWishTXT("sec", lease.Key(otherCluster), v1alpha1.NewEndpoint(host, "A", 60, "10.0.0.2"))),
		lease.Renew(otherCluster, time.Now(), 30*time.Second, 75*time.Second).Record(host),
		claim(registry.NewTXT("kuad", aaaa)),
	}
	records := []v1alpha1.DNSRecord{
		{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "authoritative-record-x", UID: "auth-uid", Labels: map[string]string{
				v1alpha1.AuthoritativeRecordLabel: "true", v1alpha1.ProviderNameLabel: "aws"}},
			Spec: v1alpha1.DNSRecordSpec{RootHost: host, Endpoints: endpoints},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pri", Labels: map[string]string{gatewayLabel: "gw"}},
			Spec:       v1alpha1.DNSRecordSpec{RootHost: host, Delegate: true, OwnerID: "pri"},
		},
	}
	d := delegationOf(context.Background(), &target{records: records, cluster: "this-uid"}, clusterSecretsFlags{})
	// The authoritative record's owner ID before its status says it: the controller's, from its UID.
	auth := ownerIDOf(&records[0])
	if d.merged[auth] == nil {
		t.Fatalf("no authoritative record under owner %s: %v", auth, d.merged)
	}
	row := answer{Addresses: []string{"10.0.0.1", "10.0.0.2", "2001:db8::1"}, Owners: []string{auth},
		Keys: []v1alpha1.EndpointKey{a.Key(), aaaa.Key()}}
	lines, clusters, gateways := d.origins(row)
	wantLines := []string{
		"10.0.0.1 from pri: this cluster (this-uid), ns/gw",
		"10.0.0.2 from sec: another cluster (" + otherCluster + "), no DNSRecord found with its owner ID",
		"2001:db8::1 from kuad: another cluster, no DNSRecord found with its owner ID",
	}
	if !slices.Equal(lines, wantLines) {
		t.Errorf("origins:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(wantLines, "\n"))
	}
	if want := []string{"this-uid (this cluster)", otherCluster, "unknown cluster"}; !slices.Equal(clusters, want) {
		t.Errorf("clusters %v, want %v", clusters, want)
	}
	if want := []string{"ns/gw"}; !slices.Equal(gateways, want) {
		t.Errorf("records %v, want %v", gateways, want)
	}
	// A row of an owner that is no authoritative record has no origins.
	if lines, _, _ := d.origins(answer{Addresses: []string{"10.0.0.1"}, Owners: []string{"pri"}, Keys: []v1alpha1.EndpointKey{a.Key()}}); lines != nil {
		t.Errorf("origins of a plain owner's row: %v", lines)
	}

	var b bytes.Buffer
	z := registry.Read([]*v1alpha1.Endpoint{v1alpha1.NewEndpoint(host, "A", 60, "10.0.0.1", "10.0.0.2"), claim(registry.NewTXT(auth, a))})
	explainMerged(&b, d, z.AtName(host)[0])
	for _, want := range []string{
		"  merged from authoritative record ns/authoritative-record-x (a delegation primary's; the contributors' claims there):\n",
		"    pri wants 10.0.0.1 ttl 60: this cluster (this-uid), ns/gw\n",
		"    sec wants 10.0.0.2 ttl 60: another cluster (" + otherCluster + "), no DNSRecord found with its owner ID [lease " + lease.Key(otherCluster) + "]\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("explainMerged lacks %q:\n%s", want, b.String())
		}
	}
}
