package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/pkg/registry"
	"github.com/dnspolicy/dnspolicy-controller/pkg/zone"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// zoneFlags choose the zone a command reads: from a DNSRecord of the cluster that publishes the host
// (or the zone), or from an explicit provider Secret.
type zoneFlags struct {
	secret        string
	zone          string
	allNamespaces bool
}

func (f *zoneFlags) bind(cmd *cobra.Command, zoneUsage, found string) {
	cmd.Flags().StringVar(&f.secret, "secret", "", "provider Secret to reach the zone with, NAMESPACE/NAME (or NAME in --namespace); default: the Secret of a DNSRecord that "+found)
	cmd.Flags().StringVar(&f.zone, "zone", "", zoneUsage)
	cmd.Flags().BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "look for the DNSRecord that names the zone in every namespace")
}

// target is one zone reached through one provider Secret.
type target struct {
	secret   *corev1.Secret
	provider providers.Provider
	zone     providers.Zone
	// via says how the zone was found, for the header of every output.
	via string
	// records are this cluster's DNSRecords the zone was looked for among (none with --secret): they
	// name the Gateways of owner IDs.
	records []v1alpha1.DNSRecord
	// cluster is this cluster's ID (its kube-system namespace's UID) when it could be read: a leaf
	// of the tree is named from it.
	cluster string
	// kc is the client of this cluster the zone was found with.
	kc client.Client
}

func (t *target) header() string {
	return fmt.Sprintf("zone %s (%s, %s) through secret %s/%s, %s", t.zone.DNSName, t.zone.ID, t.provider.Name(), t.secret.Namespace, t.secret.Name, t.via)
}

// read reads the zone into the registry's view.
func (t *target) read(ctx context.Context) (*registry.Zone, providers.View, error) {
	view, err := t.provider.Records(ctx, t.zone)
	if err != nil {
		return nil, view, fmt.Errorf("reading zone %s (%s): %w", t.zone.DNSName, t.zone.ID, err)
	}
	return registry.Read(view.Endpoints), view, nil
}

// resolve finds the zone of host ("" when the command names only a zone): through --secret, or
// through the provider Secret and status.zoneID of the DNSRecords that publish host (or, without a
// host, whose zone is --zone), exactly as the controller picks them.
func (c *cli) resolve(ctx context.Context, kc client.Client, host string, f zoneFlags) (*target, error) {
	ns, _, err := c.namespace()
	if err != nil {
		return nil, err
	}
	host = v1alpha1.NormalizeName(host)
	if f.secret != "" {
		secretNS, name := ns, f.secret
		if before, after, ok := strings.Cut(f.secret, "/"); ok {
			secretNS, name = before, after
		}
		s := &corev1.Secret{}
		if err := kc.Get(ctx, client.ObjectKey{Namespace: secretNS, Name: name}, s); err != nil {
			return nil, fmt.Errorf("provider secret %s/%s: %w", secretNS, name, err)
		}
		return choose(ctx, kc, s, host, f.zone, "", "given by --secret")
	}

	list := &v1alpha1.DNSRecordList{}
	opts := []client.ListOption{}
	where := "namespace " + ns
	if !f.allNamespaces {
		opts = append(opts, client.InNamespace(ns))
	} else {
		where = "any namespace"
	}
	if err := kc.List(ctx, list, opts...); err != nil {
		return nil, fmt.Errorf("listing DNSRecords: %w", err)
	}
	type candidate struct {
		rec    *v1alpha1.DNSRecord
		secret *corev1.Secret
		// hostZone is the coredns zone of a record written into its root host's authoritative
		// record, "" for any other.
		hostZone string
		// zoneID is the zone the record is published in: its status's, or, for a delegation
		// primary's delegating record, that of the authoritative record it is merged into.
		zoneID string
	}
	hostZones := authoritativeZones(list.Items)
	merged := map[string]string{}
	for i := range list.Items {
		if r := &list.Items[i]; zonePublishedAuthoritative(r) {
			merged[r.Namespace+"/"+r.Name] = r.Status.ZoneID
		}
	}
	var found []candidate
	seen := map[string]bool{}
	for i := range list.Items {
		rec := &list.Items[i]
		hostZone := hostZones[rec.Namespace+"/"+rec.Status.ZoneID]
		zoneID := rec.Status.ZoneID
		if id, ok := merged[rec.Namespace+"/"+zoneID]; ok {
			zoneID = id
		}
		if !publishes(rec, host, f.zone, hostZone) {
			continue
		}
		s, err := recordSecret(ctx, kc, rec)
		if err != nil {
			return nil, fmt.Errorf("DNSRecord %s/%s publishes %s: %w", rec.Namespace, rec.Name, orZone(host, f.zone), err)
		}
		// Records of one coredns zone with different root hosts are in one zone of the Secret.
		key := s.Namespace + "/" + s.Name + " " + zoneID
		if hostZone != "" {
			key = s.Namespace + "/" + s.Name + " " + hostZone
		}
		if !seen[key] {
			seen[key] = true
			found = append(found, candidate{rec, s, hostZone, zoneID})
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no DNSRecord in %s publishes %s; name the zone's provider secret with --secret NAMESPACE/NAME (and the zone with --zone), or search every namespace with -A", where, orZone(host, f.zone))
	case 1:
		rec := found[0].rec
		want := host
		if want == "" {
			want = rec.Spec.RootHost
		}
		via := fmt.Sprintf("as DNSRecord %s/%s publishes %s", rec.Namespace, rec.Name, host)
		if host == "" {
			via = fmt.Sprintf("as DNSRecord %s/%s publishes into it", rec.Namespace, rec.Name)
		}
		zoneFlag := f.zone
		if zoneFlag != "" && found[0].hostZone != "" {
			// The Secret's backend lists the coredns zones, not the authoritative records.
			zoneFlag = found[0].hostZone
		}
		t, err := choose(ctx, kc, found[0].secret, want, zoneFlag, found[0].zoneID, via)
		if err != nil {
			return nil, err
		}
		t.records = list.Items
		// Best effort: without the right to read namespaces the answers name clusters by hash.
		kubeSystem := &corev1.Namespace{}
		if kc.Get(ctx, client.ObjectKey{Name: metav1.NamespaceSystem}, kubeSystem) == nil {
			t.cluster = string(kubeSystem.UID)
		}
		return t, nil
	default:
		var names []string
		for _, cand := range found {
			names = append(names, fmt.Sprintf("%s/%s (secret %s/%s, zone %s)", cand.rec.Namespace, cand.rec.Name, cand.secret.Namespace, cand.secret.Name, cand.rec.Status.ZoneID))
		}
		sort.Strings(names)
		return nil, fmt.Errorf("DNSRecords publish %s through different secrets or zones: %s; choose with --secret and --zone", orZone(host, f.zone), strings.Join(names, ", "))
	}
}

func orZone(host, zoneFlag string) string {
	if host != "" {
		return host
	}
	return "zone " + zoneFlag
}

// authoritativeZones maps each authoritative record among records (namespace/name) that a DNS
// server serves to the coredns zone it is served in: its zone label, else the zone its status
// names (a record Kuadrant made and has not reconciled yet). A delegation primary's, published
// into a zone, is left out: it is a record of that zone.
func authoritativeZones(records []v1alpha1.DNSRecord) map[string]string {
	zones := map[string]string{}
	for i := range records {
		r := &records[i]
		if !isAuthoritativeRecord(r) || zonePublishedAuthoritative(r) {
			continue
		}
		z := r.Labels[v1alpha1.CoreDNSZoneNameLabel]
		if z == "" {
			z = r.Status.ZoneDomainName
		}
		if z != "" {
			zones[r.Namespace+"/"+r.Name] = v1alpha1.NormalizeName(z)
		}
	}
	return zones
}

// publishes reports whether rec publishes host (its root host, or a name among its endpoints), in the
// zone named by zoneFlag when one is given: its ID or domain, as status.zoneID and zoneDomainName
// hold them, or, for a record written into its root host's authoritative record (whose name and
// root host those are), the coredns zone hostZone that record is served in.
func publishes(rec *v1alpha1.DNSRecord, host, zoneFlag, hostZone string) bool {
	if isAuthoritativeRecord(rec) && !zonePublishedAuthoritative(rec) {
		// A coredns zone's (or root host's) authoritative record holds what its contributors
		// publish; the contributors are the records that publish the host. A delegation
		// primary's publishes into its zone like any record, what other clusters' records
		// contributed too.
		return false
	}
	if zoneFlag != "" && rec.Status.ZoneID != zoneFlag && v1alpha1.NormalizeName(rec.Status.ZoneDomainName) != v1alpha1.NormalizeName(zoneFlag) &&
		(hostZone == "" || hostZone != v1alpha1.NormalizeName(zoneFlag)) {
		return false
	}
	if host == "" {
		return zoneFlag != ""
	}
	if v1alpha1.NormalizeName(rec.Spec.RootHost) == host {
		return true
	}
	return slices.ContainsFunc(slices.Concat(rec.Spec.Endpoints, rec.Status.Endpoints), func(e *v1alpha1.Endpoint) bool {
		return e != nil && v1alpha1.NormalizeName(e.DNSName) == host
	})
}

// recordSecret is the provider Secret a record publishes with, chosen as the controller chooses it:
// the one it last published with (status.providerRef), else spec.providerRef, else the one Secret of
// its namespace labelled kuadrant.io/default-provider=true.
func recordSecret(ctx context.Context, kc client.Client, rec *v1alpha1.DNSRecord) (*corev1.Secret, error) {
	name := rec.Status.ProviderRef.Name
	if name == "" && rec.Spec.ProviderRef != nil {
		name = rec.Spec.ProviderRef.Name
	}
	if name != "" {
		s := &corev1.Secret{}
		if err := kc.Get(ctx, client.ObjectKey{Namespace: rec.Namespace, Name: name}, s); err != nil {
			return nil, fmt.Errorf("provider secret %s/%s: %w", rec.Namespace, name, err)
		}
		return s, nil
	}
	list := &corev1.SecretList{}
	if err := kc.List(ctx, list, client.InNamespace(rec.Namespace), client.MatchingLabels{v1alpha1.DefaultProviderLabel: "true"}); err != nil {
		return nil, err
	}
	if len(list.Items) != 1 {
		return nil, fmt.Errorf("no providerRef and %d secrets labelled %s=true in namespace %s", len(list.Items), v1alpha1.DefaultProviderLabel, rec.Namespace)
	}
	return &list.Items[0], nil
}

// choose builds the Secret's backend and picks the zone: --zone (an ID, or a domain naming exactly
// one zone), else the zone the controller would pick for host (zone.Choose, keeping assignedID
// while it is listed).
func choose(ctx context.Context, kc client.Client, s *corev1.Secret, host, zoneFlag, assignedID, via string) (*target, error) {
	b, err := factory().New(ctx, s, providers.Env{Client: kc, Namespace: s.Namespace})
	if err != nil {
		return nil, err
	}
	p := b.Zones
	if p == nil {
		return nil, fmt.Errorf("secret %s/%s: the %s backend has no zone: it serves whole records", s.Namespace, s.Name, b.Records.Name())
	}
	zones, err := p.Zones(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the zones of secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	t := &target{secret: s, provider: p, via: via, kc: kc}
	if zoneFlag != "" {
		t.zone, err = matchZone(zones, zoneFlag)
		if err != nil {
			return nil, fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		if host != "" && !zoneHolds(t.zone, host) {
			return nil, fmt.Errorf("zone %s (%s) does not hold %s", t.zone.DNSName, t.zone.ID, host)
		}
		return t, nil
	}
	if host == "" {
		return nil, fmt.Errorf("--zone is required")
	}
	t.zone, err = zone.Choose(host, zones, p.Capabilities().ApexRecords, assignedID)
	if err != nil {
		return nil, fmt.Errorf("secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return t, nil
}

func zoneHolds(z providers.Zone, host string) bool {
	name := v1alpha1.NormalizeName(z.DNSName)
	host = strings.TrimPrefix(host, "*.")
	return host == name || strings.HasSuffix(host, "."+name)
}

// matchZone finds the zone with ID s, else the one zone named s.
func matchZone(zones []providers.Zone, s string) (providers.Zone, error) {
	for _, z := range zones {
		if z.ID == s {
			return z, nil
		}
	}
	var named []providers.Zone
	var all []string
	for _, z := range zones {
		all = append(all, fmt.Sprintf("%s (%s)", z.DNSName, z.ID))
		if v1alpha1.NormalizeName(z.DNSName) == v1alpha1.NormalizeName(s) {
			named = append(named, z)
		}
	}
	switch len(named) {
	case 1:
		return named[0], nil
	case 0:
		sort.Strings(all)
		return providers.Zone{}, fmt.Errorf("no zone with ID or name %s (zones: %s)", s, strings.Join(all, ", "))
	default:
		ids := make([]string, len(named))
		for i, z := range named {
			ids[i] = z.ID
		}
		return providers.Zone{}, fmt.Errorf("zones %s are all named %s; give --zone as one of these IDs", strings.Join(ids, ", "), s)
	}
}
