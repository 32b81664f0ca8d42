//go:build integration

package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/pkg/grant"
	"github.com/dnspolicy/dnspolicy-controller/providers/coredns"
	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// A record of a kuadrant.io/coredns Secret is written into its root host's authoritative record,
// and its status names that record (zoneID) and the root host (zoneDomainName), as Kuadrant's
// dns-operator writes it. --zone still takes the coredns zone the user knows (the Secret's ZONES
// entry), or the zone ID the record shows; two records with different root hosts in one coredns
// zone are one zone.
func TestPluginCoreDNSZone(t *testing.T) {
	ctx := t.Context()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "kubectl-dns-coredns-"}}
	if err := envs[0].Client.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	ns := nsObj.Name
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "coredns", Namespace: ns},
		Type:       v1alpha1.SecretTypeCoreDNS,
		Data:       map[string][]byte{"ZONES": []byte("k.example.com")},
	}
	if err := envs[0].Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	opts := dnsrecord.DefaultOptions()
	opts.MinRecheck, opts.MaxRecheck = 300*time.Millisecond, 600*time.Millisecond
	stop := testenv.StartManagerIn(t, envs[0], ns, func(mgr ctrl.Manager) error {
		// The Secret picks the backend; the grant lets the namespace publish in the zone.
		grants := app.GrantOptions{Grants: grant.Grants{{Namespaces: []string{ns}, Domains: []string{"k.example.com"}}}}
		return app.AddControllers(mgr, app.Options{EnableRecordController: true, Grants: grants}, factory(), opts)
	})
	defer stop()
	for name, host := range map[string]string{"web": "app.k.example.com", "api": "api.k.example.com"} {
		r := &v1alpha1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.DNSRecordSpec{RootHost: host, OwnerID: "owner-" + name, ProviderRef: &v1alpha1.ProviderRef{Name: "coredns"},
				Endpoints: []*v1alpha1.Endpoint{v1alpha1.NewEndpoint(host, "A", 60, "10.0.0.1")}},
		}
		if err := envs[0].Client.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{ns: ns, kubeconfig: writeKubeconfig(t, ns)}
	for _, name := range []string{"web", "api"} {
		testenv.Eventually(t, time.Minute, func() string {
			r := f.get(t, name)
			if cond := meta.FindStatusCondition(r.Status.Conditions, v1alpha1.ConditionTypeReady); cond == nil || cond.Status != metav1.ConditionTrue {
				return fmt.Sprintf("record %s not ready: %+v", name, r.Status.Conditions)
			}
			if !strings.HasPrefix(r.Status.ZoneID, "authoritative-record-") {
				return fmt.Sprintf("record %s: zoneID %q is not its authoritative record", name, r.Status.ZoneID)
			}
			return ""
		})
	}
	stop()
	web := f.get(t, "web")
	if web.Status.ZoneID != coredns.RecordName("app.k.example.com") || web.Status.ZoneDomainName != "app.k.example.com" {
		t.Fatalf("web's zone is %s (%s), want its authoritative record and root host", web.Status.ZoneDomainName, web.Status.ZoneID)
	}

	header := "zone k.example.com (k.example.com, coredns) through secret " + ns + "/coredns, "
	for _, zoneFlag := range []string{"k.example.com", "K.Example.Com.", web.Status.ZoneID, "app.k.example.com"} {
		out := f.run(t, "owners", "app.k.example.com", "--zone", zoneFlag)
		contains(t, "owners --zone "+zoneFlag, out, header+"as DNSRecord "+ns+"/web publishes app.k.example.com")
		contains(t, "owners --zone "+zoneFlag, out, "OWNER owner-web\n")
	}
	// Without a host: both records are in the one coredns zone.
	contains(t, "remove-owner --zone", f.run(t, "remove-owner", "nobody", "--zone", "k.example.com", "--dry-run"),
		"owner nobody has nothing in the zone: nothing to do")
	// A zone that holds neither record still finds none.
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"owners", "app.k.example.com", "--zone", "other.example.com", "--kubeconfig", f.kubeconfig}, &stdout, &stderr, time.Now); code != 1 ||
		!strings.Contains(stderr.String(), "no DNSRecord in namespace "+ns+" publishes app.k.example.com") {
		t.Errorf("--zone other.example.com: exit %d, stderr %q", code, stderr.String())
	}
}
