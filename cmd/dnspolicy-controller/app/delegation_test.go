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
