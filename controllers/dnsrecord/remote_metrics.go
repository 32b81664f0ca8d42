package dnsrecord

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// Kuadrant's metrics of a primary's remote clusters (its RemoteClusterCollector), with its names,
// help and labels: "cluster" is the cluster's name, that of its kubeconfig Secret.
var (
	remoteRecords = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "dns_provider_remote_records",
		Help: "Reports the delegated dns records on a remote cluster",
	}, []string{"cluster"})
	remoteReconciles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dns_provider_remote_record_reconcile_count",
		Help: "Reports the reconcile count for a remote DNSRecord (collector pattern)",
	}, []string{"cluster", "dns_record_name", "dns_record_namespace"})
	activeClusters = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "dns_provider_active_multi_cluster_count",
		Help: "Reports the number of secrets configured for multi cluster configuration",
	})
)

func init() {
	metrics.Registry.MustRegister(remoteRecords, remoteReconciles, activeClusters)
}

// countRemoteRecords sets the count of a cluster's delegating records, from its cache, as
// Kuadrant counts them on every remote pass.
func countRemoteRecords(ctx context.Context, cluster string, c client.Client) {
	list := &v1alpha1.DNSRecordList{}
	if err := c.List(ctx, list); err != nil {
		return
	}
	n := 0
	for i := range list.Items {
		if list.Items[i].Spec.Delegate {
			n++
		}
	}
	remoteRecords.WithLabelValues(cluster).Set(float64(n))
}

// clusterCounter counts the clusters the provider engaged (dns_provider_active_multi_cluster_count),
// and drops a cluster's series when it is disengaged (its Secret deleted).
type clusterCounter struct{}

var _ multicluster.Aware = clusterCounter{}

// Start implements manager.Runnable: the counting happens in Engage.
func (clusterCounter) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// Engage implements multicluster.Aware; ctx ends when the cluster is disengaged.
func (clusterCounter) Engage(ctx context.Context, name multicluster.ClusterName, _ cluster.Cluster) error {
	activeClusters.Inc()
	go func() {
		<-ctx.Done()
		activeClusters.Dec()
		remoteRecords.DeleteLabelValues(string(name))
		remoteReconciles.DeletePartialMatch(prometheus.Labels{"cluster": string(name)})
	}()
	return nil
}
