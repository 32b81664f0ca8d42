package main

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis"
	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/hash"
	"github.com/dnspolicy/dnspolicy-controller/pkg/lease"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
)

// Delegated answers. On a delegation primary (docs/delegation.md) the zone holds an authoritative
// record, authoritative-record-<hash> of a root host, under the primary's owner ID; the records it
// holds are the delegating records of this cluster and of the clusters the primary reads through
// kubeconfig Secrets, merged. The authoritative record's endpoints keep each contributor's claims
// (its owner ID and wish) and, for another cluster's record that carries one, the lease of that
// cluster, as a shared zone keeps owners' (controllers/dnsrecord/delegation_primary.go,
// remote_lease.go). explain reads them to say which cluster each answer comes from: a
// contributor's owner ID is matched to a DNSRecord of this cluster, or of a cluster read through
// one of the primary's kubeconfig Secrets, else named by its lease's holder.

// remoteReadTimeout bounds the reading of one other cluster.
const remoteReadTimeout = 10 * time.Second

// authoritative is an authoritative record a delegation primary publishes into the zone, and its
// endpoints read as a zone: its contributors' claims and other clusters' leases.
type authoritative struct {
	rec  *v1alpha1.DNSRecord
	zone *registry.Zone
}

// contributor is what the plugin can tell of the owner of a delegating record merged into an
// authoritative record.
type contributor struct {
	// Cluster is the cluster Secret's name for another cluster's record, "" for this cluster's or
	// when the record was not found.
	Cluster string
	// Local: the record is this cluster's.
	Local bool
	// ClusterID is the cluster's ID when known: this cluster's, or the holder of the owner lease
	// the record carries or its claims name.
	ClusterID string
	// Record is "DNSRecord namespace/name" of the delegating record with the owner's ID, or the
	// namespace/name of the Gateway it was made for; "" when not found.
	Record string
}

// label is the contributor's cluster as the answers table names it.
func (c contributor) label() string {
	switch {
	case c.Local && c.ClusterID != "":
		return c.ClusterID + " (this cluster)"
	case c.Local:
		return "this cluster"
	case c.Cluster != "":
		return c.Cluster
	case c.ClusterID != "":
		return c.ClusterID
	}
	return "unknown cluster"
}

// describe is the contributor in full: its cluster (name and ID) and record.
func (c contributor) describe() string {
	var s string
	switch {
	case c.Local:
		s = "this cluster"
	case c.Cluster != "":
		s = "cluster " + c.Cluster
	default:
		s = "another cluster"
	}
	if c.ClusterID != "" {
		s += " (" + c.ClusterID + ")"
	}
	if c.Record != "" {
		s += ", " + c.Record
	} else {
		s += ", no DNSRecord found with its owner ID"
	}
	return s
}

// delegation is what explain knows of the authoritative records in the zone and their
// contributors.
type delegation struct {
	// merged are the authoritative records published into the zone, by their owner ID.
	merged map[string]*authoritative
	// contributors are the owners of their contributors' claims, by owner ID.
	contributors map[string]contributor
	// notes say which other clusters could not be read.
	notes []string
}

// clusterSecretsFlags select the kubeconfig Secrets through which the primary reads other
// clusters, as its --cluster-secret-namespace and --cluster-secret-label do.
type clusterSecretsFlags struct {
	namespace, label string
}

// delegationOf finds, among this cluster's records, the authoritative records a delegation primary
// published into the zone, and the cluster of each of their contributors: this cluster's records,
// the records of the clusters read through the Secrets, and the leases the claims name.
func delegationOf(ctx context.Context, t *target, f clusterSecretsFlags) *delegation {
	d := &delegation{merged: map[string]*authoritative{}, contributors: map[string]contributor{}}
	namespaces := map[string]bool{}
	for i := range t.records {
		r := &t.records[i]
		if zonePublishedAuthoritative(r) {
			d.merged[ownerIDOf(r)] = &authoritative{rec: r, zone: registry.Read(r.Spec.Endpoints)}
			namespaces[r.Namespace] = true
		}
	}
	if len(d.merged) == 0 {
		return d
	}
	for i := range t.records {
		r := &t.records[i]
		if r.Spec.Delegate {
			d.contributors[ownerIDOf(r)] = contributor{Local: true, ClusterID: t.cluster, Record: recordName(r)}
		}
	}
	if t.kc != nil && f.namespace != "" {
		d.readClusters(ctx, t.kc, f, namespaces)
	}
	// The leases the claims name: the cluster of an owner no record was found for, and the ID of
	// a cluster known by name only.
	for _, a := range d.merged {
		for _, r := range a.zone.Records() {
			for _, c := range r.Claims {
				holder := leaseHolder(a.zone, c.Lease())
				if holder == "" {
					continue
				}
				info := d.contributors[c.Owner]
				if info.ClusterID == "" {
					info.ClusterID = holder
					d.contributors[c.Owner] = info
				}
			}
		}
	}
	return d
}

// readClusters reads the delegating records of the clusters the primary reads, through its
// kubeconfig Secrets, in the namespaces of the authoritative records (a primary merges another
// cluster's record into the authoritative record of the namespace of the same name).
func (d *delegation) readClusters(ctx context.Context, kc client.Client, f clusterSecretsFlags, namespaces map[string]bool) {
	secrets := &corev1.SecretList{}
	if err := kc.List(ctx, secrets, client.InNamespace(f.namespace), client.MatchingLabels{f.label: "true"}); err != nil {
		d.notes = append(d.notes, fmt.Sprintf("the cluster Secrets in namespace %s could not be listed (%v): other clusters' contributors are named by their leases only", f.namespace, err))
		return
	}
	sort.Slice(secrets.Items, func(i, j int) bool { return secrets.Items[i].Name < secrets.Items[j].Name })
	nss := make([]string, 0, len(namespaces))
	for ns := range namespaces {
		nss = append(nss, ns)
	}
	sort.Strings(nss)
	for i := range secrets.Items {
		s := &secrets.Items[i]
		if err := d.readCluster(ctx, s, nss); err != nil {
			d.notes = append(d.notes, fmt.Sprintf("cluster %s (secret %s/%s) could not be read from here: %v", s.Name, s.Namespace, s.Name, err))
		}
	}
}

func (d *delegation) readCluster(ctx context.Context, s *corev1.Secret, namespaces []string) error {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data[clusterSecretKey])
	if err != nil {
		return fmt.Errorf("key %s: %w", clusterSecretKey, err)
	}
	cfg.UserAgent, cfg.Timeout = "kubectl-dns", remoteReadTimeout
	c, err := client.New(cfg, client.Options{Scheme: apis.Scheme()})
	if err != nil {
		return err
	}
	for _, ns := range namespaces {
		list := &v1alpha1.DNSRecordList{}
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return err
		}
		for i := range list.Items {
			r := &list.Items[i]
			if !r.Spec.Delegate {
				continue
			}
			info := contributor{Cluster: s.Name, Record: recordName(r)}
			if l, ok := lease.ParseValue(r.Annotations[v1alpha1.OwnerLeaseAnnotation]); ok {
				info.ClusterID = l.Holder
			}
			d.contributors[ownerIDOf(r)] = info
		}
	}
	return nil
}

// zonePublishedAuthoritative reports whether rec is an authoritative record a delegation primary
// publishes into a zone of its default provider, rather than one a DNS server serves as the zone
// (the coredns backend's, labelled with its zone, or named for it by the provider label).
func zonePublishedAuthoritative(rec *v1alpha1.DNSRecord) bool {
	p := rec.Labels[v1alpha1.ProviderNameLabel]
	return isAuthoritativeRecord(rec) && rec.Labels[v1alpha1.CoreDNSZoneNameLabel] == "" && p != "" && p != "coredns"
}

// ownerIDOf is the record's owner ID as its controller derives it (controllers/dnsrecord's ownerID):
// the status says it once written, and a record's status trails what its pass published.
func ownerIDOf(rec *v1alpha1.DNSRecord) string {
	switch {
	case rec.Status.OwnerID != "":
		return rec.Status.OwnerID
	case rec.Spec.OwnerID != "":
		return rec.Spec.OwnerID
	}
	return hash.Base36(string(rec.UID), 8)
}

func isAuthoritativeRecord(rec *v1alpha1.DNSRecord) bool {
	return rec.Labels[v1alpha1.AuthoritativeRecordLabel] == "true"
}

// recordName names a record as the answers table names this cluster's: the Gateway it was made
// for, else the DNSRecord.
func recordName(r *v1alpha1.DNSRecord) string {
	if g := r.Labels[gatewayLabel]; g != "" {
		return r.Namespace + "/" + g
	}
	return "DNSRecord " + r.Namespace + "/" + r.Name
}

// leaseHolder is the holder of the lease record of key among z's records, "" when there is none.
func leaseHolder(z *registry.Zone, key string) string {
	if key == "" {
		return ""
	}
	for _, r := range z.Records() {
		if l, ok := lease.Parse(r.Endpoint); ok && lease.Key(l.Holder) == key {
			return l.Holder
		}
	}
	return ""
}

// merging is one contributor's claim on a record of an authoritative record.
type merging struct {
	owner string
	claim *registry.Claim
	info  contributor
}

// mergedAt lists the claims on key of the authoritative records among owners (the zone's
// claimants of key), sorted by owner.
func (d *delegation) mergedAt(owners []string, key v1alpha1.EndpointKey) (*authoritative, []merging) {
	if d == nil {
		return nil, nil
	}
	for _, o := range owners {
		a := d.merged[o]
		if a == nil {
			continue
		}
		var out []merging
		for _, r := range a.zone.AtName(key.DNSName) {
			if r.Key != key {
				continue
			}
			for _, c := range r.Claims {
				out = append(out, merging{owner: c.Owner, claim: c, info: d.contributors[c.Owner]})
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].owner < out[j].owner })
		return a, out
	}
	return nil, nil
}

// wants reports whether the contributor's claim covers target: its wish lists it, or it states no
// wish (Kuadrant's format), so it is taken to want the record as published.
func (m merging) wants(target string) bool {
	if m.claim.Wish == nil {
		return true
	}
	return slices.ContainsFunc(m.claim.Wish.Targets, func(t string) bool {
		return strings.EqualFold(v1alpha1.NormalizeName(t), v1alpha1.NormalizeName(target))
	})
}

// origins says, for an answer row that an authoritative record holds, which contributor each of
// its targets comes from, and the clusters and records of those contributors.
func (d *delegation) origins(r answer) (lines, clusters, records []string) {
	targets := r.Addresses
	if r.CNAME != "" {
		targets = []string{r.CNAME}
	}
	for _, key := range r.Keys {
		_, ms := d.mergedAt(r.Owners, key)
		for _, target := range targets {
			if !ofType(key.RecordType, target) {
				continue
			}
			var from []string
			for _, m := range ms {
				if !m.wants(target) {
					continue
				}
				from = append(from, m.owner+": "+m.info.describe())
				clusters = appendNew(clusters, m.info.label())
				if m.info.Record != "" {
					rec := m.info.Record
					if m.info.Cluster != "" {
						rec = m.info.Cluster + ": " + rec
					}
					records = appendNew(records, rec)
				}
			}
			if len(from) > 0 {
				lines = append(lines, target+" from "+strings.Join(from, "; "))
			}
		}
	}
	return lines, clusters, records
}

// ofType reports whether target can be a target of a record of type: an A record's targets are
// IPv4 addresses, an AAAA record's IPv6 ones.
func ofType(recordType, target string) bool {
	ip, err := netip.ParseAddr(target)
	switch recordType {
	case v1alpha1.RecordTypeA:
		return err == nil && ip.Is4()
	case v1alpha1.RecordTypeAAAA:
		return err == nil && ip.Is6()
	}
	return true
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// explainMerged prints, under a record of the zone that an authoritative record holds, the
// contributors merged into it: each one's wish and its cluster and record.
func explainMerged(w io.Writer, d *delegation, r *registry.Record) {
	a, ms := d.mergedAt(r.Owners(), r.Key)
	if a == nil {
		return
	}
	fmt.Fprintf(w, "  merged from authoritative record %s/%s (a delegation primary's; the contributors' claims there):\n", a.rec.Namespace, a.rec.Name)
	if len(ms) == 0 {
		fmt.Fprintln(w, "    no contributor claims it there")
	}
	for _, m := range ms {
		wish := "(Kuadrant-format claim: wish not recorded)"
		if m.claim.Wish != nil {
			wish = "wants " + valueString(m.claim.Wish)
		}
		line := fmt.Sprintf("    %s %s: %s", m.owner, wish, m.info.describe())
		if l := m.claim.Lease(); l != "" {
			line += " [lease " + l + "]"
		}
		fmt.Fprintln(w, line)
	}
}
