package dnshealthcheckprobe

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
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

// Where RBAC forbids every source, the controller says so once per source and goes on with the
// static defaults: no informer is started (the cache is never touched) and no range is set.
func TestClusterRangesForbidden(t *testing.T) {
	forbidden := func(resource string) error {
		return apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("RBAC"))
	}
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return forbidden("nodes")
		},
		Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
			return forbidden("services")
		},
	}).Build()
	logged := make(chan string, 16)
	log := funcr.New(func(_, args string) { logged <- args }, funcr.Options{})
	set := make(chan []netip.Prefix, 1)
	r := &clusterRanges{reader: c, set: func(p []netip.Prefix) { set <- p }, log: log}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Start(ctx) }()
	// Nodes, ServiceCIDRs, then the kubernetes Service.
	for range 3 {
		select {
		case l := <-logged:
			if !strings.Contains(l, "RBAC forbids") {
				t.Errorf("logged %s", l)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("not logged within 20s")
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-set:
		t.Errorf("ranges set to %v with every source forbidden", p)
	case l := <-logged:
		t.Errorf("logged again: %s", l)
	default:
	}
}
