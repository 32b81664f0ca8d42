package app

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/providers/kubeconfig"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
)

// Kuadrant's defaults of the kubeconfig Secrets through which a primary reaches other clusters, and
// the key of the kubeconfig in them.
const (
	DefaultClusterSecretNamespace = "dns-operator-system"
	DefaultClusterSecretLabel     = "kuadrant.io/multicluster-kubeconfig"
	ClusterSecretKey              = "kubeconfig"
)

// Reading those Secrets' data takes get, list and watch on Secrets in --cluster-secret-namespace
// only: a RoleBinding there of the ClusterRole dnspolicy-controller-provider-secrets (the chart's
// delegation.clusterSecretNamespace makes it). The installs run with the namespace empty until it is
// granted (config/rbac/README.md); a primary started with a namespace it may not read reads no other
// cluster and logs why (clusterSecretsReadable), rather than stopping at the cache-sync timeout.

// clusterSecretVerbs are what the Secret cache of --cluster-secret-namespace needs.
var clusterSecretVerbs = []string{"get", "list", "watch"}

// clusterSecretsReadable returns the verbs of clusterSecretVerbs this process is not allowed on
// Secrets in ns, asking the API server (a SelfSubjectAccessReview each). Without all of them the
// cache of kubeconfig Secrets would never sync, and the manager, waiting for it, would stop.
func clusterSecretsReadable(ctx context.Context, cfg *rest.Config, ns string) (denied []string, err error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	for _, verb := range clusterSecretVerbs {
		review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Verb: verb, Resource: "secrets",
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("asking whether Secrets in %s may be %s: %w", ns, verb, err)
		}
		if !review.Status.Allowed {
			denied = append(denied, verb)
		}
	}
	return denied, nil
}

// addRemoteClusters adds, on a primary, the controller of other clusters' delegating records:
// multicluster-runtime's kubeconfig provider engages a cluster for each labelled Secret of
// --cluster-secret-namespace, and dnsrecord.RemoteReconciler publishes its delegating records.
//
// The provider reads the Secrets' data through the manager it is given. The manager's own cache of
// Secrets is metadata only, cluster-wide, and stripped (StripSecretMetadata): the provider gets a
// manager whose cache and client are those of a cluster of their own, which caches only the
// labelled Secrets of that one namespace (as Kuadrant scopes its Secret cache), so no other Secret's
// contents are ever held.
func addRemoteClusters(mgr ctrl.Manager, o Options, r *dnsrecord.Reconciler, id *clusterID) error {
	selector := labels.SelectorFromSet(labels.Set{o.ClusterSecretLabel: "true"})
	secrets, err := cluster.New(mgr.GetConfig(), func(co *cluster.Options) {
		co.Scheme = mgr.GetScheme()
		co.Logger = mgr.GetLogger().WithName("cluster-secrets")
		co.Cache = cache.Options{
			DefaultNamespaces: map[string]cache.Config{o.ClusterSecretNamespace: {}},
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Secret{}: {Label: selector, Transform: StripSecretMetadata},
			},
		}
	})
	if err != nil {
		return fmt.Errorf("the cache of kubeconfig secrets: %w", err)
	}
	if err := mgr.Add(secrets); err != nil {
		return err
	}
	provider := kubeconfig.New(kubeconfig.Options{
		Namespace:             o.ClusterSecretNamespace,
		KubeconfigSecretLabel: o.ClusterSecretLabel,
		KubeconfigSecretKey:   ClusterSecretKey,
		ClusterOptions: []cluster.Option{func(co *cluster.Options) {
			co.Scheme = mgr.GetScheme()
			co.Logger = mgr.GetLogger().WithName("remote-cluster")
			// Only DNSRecords are read from another cluster; they are cached as this cluster's are.
			co.Cache = cache.Options{ByObject: map[client.Object]cache.ByObject{
				&v1alpha1.DNSRecord{}: {Transform: StripRecordMetadata},
			}}
		}},
	})
	mcmgr, err := mcmanager.WithMultiCluster(&secretsHost{Manager: mgr, secrets: secrets}, provider)
	if err != nil {
		return err
	}
	if err := provider.SetupWithManager(context.Background(), mcmgr); err != nil {
		return err
	}
	rr := &dnsrecord.RemoteReconciler{Records: r, ClusterID: id.Get}
	return rr.SetupWithManager(mcmgr)
}

// secretsHost is the manager the kubeconfig provider is given: the process's manager, whose cache
// and client are those of the cluster that caches the kubeconfig Secrets alone.
type secretsHost struct {
	ctrl.Manager
	secrets cluster.Cluster
}

func (h *secretsHost) GetCache() cache.Cache    { return h.secrets.GetCache() }
func (h *secretsHost) GetClient() client.Client { return h.secrets.GetClient() }
