package app

import (
	"strings"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
)

// --delegation-role: primary by default (Kuadrant's), set by the flag, by Kuadrant's variable
// DELEGATION_ROLE, or by DNSPOLICY_DELEGATION_ROLE, which wins over Kuadrant's; the command line
// wins over both; anything but primary or secondary is refused.
func TestParseDelegationRole(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want dnsrecord.DelegationRole
	}{
		{"default", nil, nil, dnsrecord.DelegationRolePrimary},
		{"flag", []string{"--delegation-role=secondary"}, nil, dnsrecord.DelegationRoleSecondary},
		{"kuadrant variable", nil, map[string]string{"DELEGATION_ROLE": "secondary"}, dnsrecord.DelegationRoleSecondary},
		{"our variable", nil, map[string]string{"DNSPOLICY_DELEGATION_ROLE": "secondary"}, dnsrecord.DelegationRoleSecondary},
		{"ours wins over kuadrant's", nil, map[string]string{"DELEGATION_ROLE": "secondary", "DNSPOLICY_DELEGATION_ROLE": "primary"}, dnsrecord.DelegationRolePrimary},
		{"command line wins", []string{"--delegation-role=primary"}, map[string]string{"DELEGATION_ROLE": "secondary"}, dnsrecord.DelegationRolePrimary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.args, env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if o.DelegationRole != tc.want {
				t.Errorf("role %q, want %q", o.DelegationRole, tc.want)
			}
		})
	}
	if _, err := Parse([]string{"--delegation-role=tertiary"}, env(nil)); err == nil || !strings.Contains(err.Error(), "primary or secondary") {
		t.Errorf("--delegation-role=tertiary: err %v", err)
	}
	if _, err := Parse(nil, env(map[string]string{"DELEGATION_ROLE": "Secondary"})); err == nil || !strings.Contains(err.Error(), "DELEGATION_ROLE") {
		t.Errorf("DELEGATION_ROLE=Secondary: err %v", err)
	}
}

// The kubeconfig Secrets of other clusters: Kuadrant's defaults, flags and variables
// (CLUSTER_SECRET_NAMESPACE, CLUSTER_SECRET_LABEL), ours winning over Kuadrant's.
func TestParseClusterSecrets(t *testing.T) {
	for _, tc := range []struct {
		name            string
		args            []string
		env             map[string]string
		wantNS, wantLbl string
	}{
		{"default", nil, nil, "dns-operator-system", "kuadrant.io/multicluster-kubeconfig"},
		{"flags", []string{"--cluster-secret-namespace=fleet", "--cluster-secret-label=example.com/kubeconfig"}, nil, "fleet", "example.com/kubeconfig"},
		{"kuadrant variables", nil, map[string]string{"CLUSTER_SECRET_NAMESPACE": "fleet", "CLUSTER_SECRET_LABEL": "example.com/kubeconfig"}, "fleet", "example.com/kubeconfig"},
		{"ours wins", nil, map[string]string{"CLUSTER_SECRET_NAMESPACE": "fleet", "DNSPOLICY_CLUSTER_SECRET_NAMESPACE": "ours"}, "ours", "kuadrant.io/multicluster-kubeconfig"},
		{"off", []string{"--cluster-secret-namespace="}, nil, "", "kuadrant.io/multicluster-kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.args, env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if o.ClusterSecretNamespace != tc.wantNS || o.ClusterSecretLabel != tc.wantLbl {
				t.Errorf("namespace %q, label %q; want %q, %q", o.ClusterSecretNamespace, o.ClusterSecretLabel, tc.wantNS, tc.wantLbl)
			}
		})
	}
}

// A label that is not a label key is refused at start, not when the first Secret is looked for.
func TestParseClusterSecretLabelInvalid(t *testing.T) {
	if _, err := Parse([]string{"--cluster-secret-label=not a label"}, env(nil)); err == nil || !strings.Contains(err.Error(), "--cluster-secret-label") {
		t.Errorf("err %v, want one naming --cluster-secret-label", err)
	}
}
