//go:build integration

package main

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsservercontroller "github.com/dnspolicy/dnspolicy-controller/controllers/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/dnssec"
)

// The dnssec commands run as a user runs them (kubeconfig, -n the controller's namespace) against
// a keys' Secret as the controller writes it: status lists the keys and the DS, ds prints the DS,
// rollover leaves the annotation the controller consumes and refuses a second request, and a
// Secret that cannot be read is an error naming the key, never its material.
func TestDNSSECCommands(t *testing.T) {
	ctx := t.Context()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "dnssec-"}}
	if err := envs[0].Client.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	ns := nsObj.Name
	kubeconfig := writeKubeconfig(t, "default")
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	policy := keysPolicy
	policy.Split = true
	st, err := dnssec.StepKeys(dnssec.Keyring{Zone: "example.com"}, policy, now, "", dnssec.ParentDS{})
	if err != nil {
		t.Fatal(err)
	}
	ring := st.Keys
	data, err := dnssec.Marshal(ring)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dnsservercontroller.SecretName("example.com")},
		Type: dnssec.SecretType, Data: data}
	if err := envs[0].Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	plugin := func(args ...string) (string, string, int) {
		var stdout, stderr bytes.Buffer
		code := run(ctx, append(args, "--kubeconfig", kubeconfig, "-n", ns), &stdout, &stderr, time.Now)
		t.Logf("kubectl dns %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		return stdout.String(), stderr.String(), code
	}

	out, _, code := plugin("dnssec", "status", "example.com")
	ksk, zsk := ring.Keys[0], ring.Keys[1]
	if code != 0 {
		t.Fatalf("status: exit %d", code)
	}
	contains(t, "status", out, "zone example.com., keys in Secret "+ns+"/dnssec-example-com")
	for _, want := range []string{
		fmt.Sprintf("%s KSK %d ECDSAP256SHA256 active yes 2026-12-01T12:00:00Z -", ksk.ID, ksk.KeyTag()),
		fmt.Sprintf("%s ZSK %d ECDSAP256SHA256 active no 2026-12-01T12:00:00Z -", zsk.ID, zsk.KeyTag()),
	} {
		if !slices.ContainsFunc(strings.Split(out, "\n"), func(line string) bool { return strings.Join(strings.Fields(line), " ") == want }) {
			t.Errorf("status lacks the row %q:\n%s", want, out)
		}
	}
	contains(t, "status", out, "DS for the parent:\n  "+ring.DSRecords()[0])
	for name, v := range data {
		if strings.HasSuffix(name, ".private") && strings.Contains(out, string(v[40:80])) {
			t.Fatal("status prints private key material")
		}
	}

	out, _, code = plugin("dnssec", "ds", "example.com")
	if code != 0 || strings.TrimSpace(out) != ring.DSRecords()[0] {
		t.Fatalf("ds: exit %d, %q, want %q", code, out, ring.DSRecords()[0])
	}

	if _, _, code = plugin("dnssec", "rollover", "example.com", "--ksk"); code != 0 {
		t.Fatalf("rollover: exit %d", code)
	}
	got := &corev1.Secret{}
	if err := envs[0].Client.Get(ctx, client.ObjectKeyFromObject(secret), got); err != nil {
		t.Fatal(err)
	}
	if a := got.Annotations[dnsservercontroller.AnnotationRollover]; a != "ksk" {
		t.Fatalf("annotation %q after rollover --ksk", a)
	}
	out, _, _ = plugin("dnssec", "status", "example.com")
	contains(t, "status with a request", out, "rollover asked for: ksk (not yet taken up by the controller)")
	if _, stderr, code := plugin("dnssec", "rollover", "example.com", "--zsk"); code == 0 || !strings.Contains(stderr, "a ksk rollover of zone example.com. was asked for already") {
		t.Fatalf("a second request: exit %d, %s", code, stderr)
	}

	// A rollover under way (the controller took the request and published a new KSK): refused.
	rolling, err := dnssec.StepKeys(ring, policy, now.Add(time.Minute), dnssec.RollKSK, dnssec.ParentDS{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data, err = dnssec.Marshal(rolling.Keys); err != nil {
		t.Fatal(err)
	}
	delete(got.Annotations, dnsservercontroller.AnnotationRollover)
	if err := envs[0].Client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := plugin("dnssec", "rollover", "example.com", "--zsk"); code == 0 || !strings.Contains(stderr, "is under way (key "+rolling.Keys.Keys[2].ID+" is published)") {
		t.Fatalf("a request during a rollover: exit %d, %s", code, stderr)
	}
	out, _, _ = plugin("dnssec", "ds", "example.com")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 {
		t.Fatalf("ds during a KSK rollover printed %q, want the old and the new key's DS", out)
	}

	// A broken Secret: the error names the Secret and the key.
	got.Data[zsk.ID+".private"] = []byte("garbage")
	if err := envs[0].Client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := plugin("dnssec", "status", "example.com"); code == 0 || !strings.Contains(stderr, "key "+zsk.ID+": "+zsk.ID+".private: not a PEM block") {
		t.Fatalf("status of a broken Secret: exit %d, %s", code, stderr)
	}
	// CSK keys have no ZSK to roll.
	csk, err := dnssec.StepKeys(dnssec.Keyring{Zone: "example.net"}, keysPolicy, now, "", dnssec.ParentDS{})
	if err != nil {
		t.Fatal(err)
	}
	cskData, err := dnssec.Marshal(csk.Keys)
	if err != nil {
		t.Fatal(err)
	}
	if err := envs[0].Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: dnsservercontroller.SecretName("example.net")},
		Type: dnssec.SecretType, Data: cskData}); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := plugin("dnssec", "rollover", "example.net", "--zsk"); code == 0 || !strings.Contains(stderr, "zone example.net. has no active ZSK (its keys are a CSK, which rolls with --ksk)") {
		t.Fatalf("a ZSK rollover of a CSK: exit %d, %s", code, stderr)
	}
	if _, stderr, code := plugin("dnssec", "status", "example.org"); code == 0 || !strings.Contains(stderr, "no Secret "+ns+"/dnssec-example-org") {
		t.Fatalf("status of a zone not signed: exit %d, %s", code, stderr)
	}
}
