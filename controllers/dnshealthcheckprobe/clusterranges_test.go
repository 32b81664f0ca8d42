package dnshealthcheckprobe

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The ranges: ServiceCIDRs' ranges (the API server's Service only without them), nodes' pod
// ranges and IP addresses; sorted, deduplicated, unparsable values skipped.
func TestClusterRangesOf(t *testing.T) {
	node := corev1.Node{
		Spec: corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24", "fd00::/64", "bogus"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: "192.168.1.10"}, {Type: corev1.NodeExternalIP, Address: "::ffff:203.0.113.9"},
			{Type: corev1.NodeHostName, Address: "node-a"},
		}},
	}
	cidr := networkingv1.ServiceCIDR{Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"10.96.0.1/12"}}}
	api := &corev1.Service{Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.1", ClusterIPs: []string{"10.96.0.1"}}}
	got := rangeSources{nodes: []corev1.Node{node}, cidrs: []networkingv1.ServiceCIDR{cidr}}.ranges()
	if want := "[10.96.0.0/12 10.244.1.0/24 192.168.1.10/32 203.0.113.9/32 fd00::/64]"; fmt.Sprint(got) != want {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := (rangeSources{service: api}).ranges(); fmt.Sprint(got) != "[10.96.0.1/32]" {
		t.Errorf("from the Service: %v", got)
	}
	stripped, _ := StripNode(&corev1.Node{Spec: node.Spec, Status: corev1.NodeStatus{Addresses: node.Status.Addresses,
		Images: []corev1.ContainerImage{{Names: []string{"big"}}}}})
	if n := stripped.(*corev1.Node); len(n.Status.Images) != 0 || len(n.Spec.PodCIDRs) != 3 || len(n.Status.Addresses) != 3 {
		t.Errorf("stripped %+v", n)
	}
}
