package dnshealthcheckprobe

import (
	"context"
	"net/netip"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The cluster's own ranges are refused to probes by default (prober.TargetRules.Cluster): the
// service range(s), from ServiceCIDR objects where the API serves them, else the API server's
// Service address; and every node's pod ranges and addresses (kubelets, node ports).
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=servicecidrs,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=services,resourceNames=kubernetes,verbs=get

// clusterRangesRefresh is how often the ranges are computed again without an event (the API
// server's Service, read directly, has none).
const clusterRangesRefresh = 5 * time.Minute

// clusterRanges keeps the prober's TargetRules.Cluster current. Nodes and ServiceCIDRs come from
// the manager's cache; a source the API does not serve, or that RBAC forbids, is left out (logged
// once), and the rules go on with the others and the static defaults.
type clusterRanges struct {
	cache  cache.Cache
	reader client.Reader
	set    func([]netip.Prefix)
	log    logr.Logger
	kick   chan struct{}
}

// Start runs until ctx ends; it is a manager Runnable.
func (c *clusterRanges) Start(ctx context.Context) error {
	c.kick = make(chan struct{}, 1)
	nodes := c.watch(ctx, &corev1.NodeList{}, &corev1.Node{}, "nodes")
	cidrs := c.watch(ctx, &networkingv1.ServiceCIDRList{}, &networkingv1.ServiceCIDR{}, "servicecidrs")
	service := true
	ticker := time.NewTicker(clusterRangesRefresh)
	defer ticker.Stop()
	var last []netip.Prefix
	for {
		var in rangeSources
		if nodes {
			var l corev1.NodeList
			if err := c.cache.List(ctx, &l); err == nil {
				in.nodes = l.Items
			}
		}
		if cidrs {
			var l networkingv1.ServiceCIDRList
			if err := c.cache.List(ctx, &l); err == nil {
				in.cidrs = l.Items
			}
		}
		if len(in.cidrs) == 0 && service {
			in.service = &corev1.Service{}
			err := c.reader.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "kubernetes"}, in.service)
			if apierrors.IsForbidden(err) {
				c.log.Info("RBAC forbids reading the kubernetes Service; health checks go on without its address in their refused ranges")
				service = false
			}
			if err != nil {
				in.service = nil
			}
		}
		if ranges := in.ranges(); !slices.Equal(ranges, last) {
			c.set(ranges)
			last = ranges
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.kick:
		case <-ticker.C:
		}
	}
}

// watch starts the cache's informer of obj when the API serves it and RBAC allows listing it, and
// says whether it did. A first list through the reader tells, so that a forbidden or missing
// resource is logged here once, not retried by an informer forever.
func (c *clusterRanges) watch(ctx context.Context, list client.ObjectList, obj client.Object, resource string) bool {
	err := c.reader.List(ctx, list, client.Limit(1))
	switch {
	case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
		return false
	case apierrors.IsForbidden(err):
		c.log.Info("RBAC forbids listing " + resource + "; health checks go on without them in their refused ranges")
		return false
	case err != nil:
		c.log.Error(err, "listing "+resource+" failed; health checks go on without them in their refused ranges")
		return false
	}
	inf, err := c.cache.GetInformer(ctx, obj)
	if err != nil {
		c.log.Error(err, "watching "+resource+" failed; health checks go on without them in their refused ranges")
		return false
	}
	kick := func() {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { kick() },
		UpdateFunc: func(any, any) { kick() },
		DeleteFunc: func(any) { kick() },
	}); err != nil {
		c.log.Error(err, "watching "+resource+" failed; health checks go on without them in their refused ranges")
		return false
	}
	return true
}

// rangeSources are what the cluster's ranges are computed from.
type rangeSources struct {
	nodes   []corev1.Node
	cidrs   []networkingv1.ServiceCIDR
	service *corev1.Service
}

// ranges are the cluster's own ranges, sorted and without duplicates: every ServiceCIDR's ranges
// (or the API server's Service address when there are none), and every node's pod ranges and IP
// addresses. What does not parse is skipped.
func (s rangeSources) ranges() []netip.Prefix {
	var out []netip.Prefix
	prefix := func(v string) {
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
		}
	}
	address := func(v string) {
		if a, err := netip.ParseAddr(v); err == nil {
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	for _, c := range s.cidrs {
		for _, v := range c.Spec.CIDRs {
			prefix(v)
		}
	}
	if s.service != nil {
		for _, v := range s.service.Spec.ClusterIPs {
			address(v)
		}
		address(s.service.Spec.ClusterIP)
	}
	for _, n := range s.nodes {
		prefix(n.Spec.PodCIDR)
		for _, v := range n.Spec.PodCIDRs {
			prefix(v)
		}
		for _, a := range n.Status.Addresses {
			address(a.Address) // hostnames do not parse and are skipped
		}
	}
	slices.SortFunc(out, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	return slices.Compact(out)
}

// StripNode is the cache transform of Nodes: the probe controller watches them for their pod
// ranges and addresses only, and a Node's images, conditions and managedFields make up most of
// its size, which a large cluster would otherwise hold in memory many times over.
func StripNode(in any) (any, error) {
	n, ok := in.(*corev1.Node)
	if !ok {
		return in, nil
	}
	return &corev1.Node{
		TypeMeta: n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Generation: n.Generation,
			DeletionTimestamp: n.DeletionTimestamp,
		},
		Spec:   corev1.NodeSpec{PodCIDR: n.Spec.PodCIDR, PodCIDRs: n.Spec.PodCIDRs},
		Status: corev1.NodeStatus{Addresses: n.Status.Addresses},
	}, nil
}
