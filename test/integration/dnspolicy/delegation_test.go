//go:build integration

package dnspolicy_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnspolicy"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/test/integration/internal/recordplane"
)

// startInRole starts both controllers in the delegation role, with no provider backend at all.
func startInRole(t *testing.T, role dnsrecord.DelegationRole) *cluster {
	t.Helper()
	opts := app.Options{EnableRecordController: true, EnableDNSPolicyController: true, NoHealthProbeController: true, DelegationRole: role}
	ns := recordplane.Start(t, envs[0], "deleg-", recordplane.Controller{App: opts, Factory: providers.NewFactory(), Record: recordOptions()})
	return &cluster{env: envs[0], c: envs[0].Client, ns: ns}
}

// A delegating policy is accepted and builds delegating records that name no provider. On a
// secondary, with no provider Secret, they are ready for a primary and the policy is enforced; a
// primary publishes them with the namespace's default provider, and with none Enforced says so and
// what to do.
func TestDelegatingPolicy(t *testing.T) {
	for _, tc := range []struct {
		role     dnsrecord.DelegationRole
		enforced string
	}{
		{dnsrecord.DelegationRoleSecondary, "True Enforced: DNSPolicy has been successfully enforced"},
		{dnsrecord.DelegationRolePrimary, "False Unknown: DNSPolicy has encountered some issues: policy is not enforced on any DNSRecord: not a single DNSRecord is ready: " +
			"gw-api: " + v1alpha1.ReasonProviderSecretMissing + ": provider secret missing: no providerRef and no secret labelled " +
			v1alpha1.DefaultProviderLabel + "=true in namespace %s; to fix: create the provider Secret in this namespace"},
	} {
		t.Run(string(tc.role), func(t *testing.T) {
			cl := startInRole(t, tc.role)
			cl.gateway(t, "gw", []string{"10.10.0.1"}, listener{"api", "api.deleg.example.com"})
			p := cl.newPolicy("deleg", "gw", "")
			p.Spec.Delegate = true
			cl.create(t, p)
			cl.policyIs(t, "deleg", dnspolicy.ConditionAccepted, "True Accepted: DNSPolicy has been accepted")
			enforced := tc.enforced
			if strings.Contains(enforced, "%s") {
				enforced = fmt.Sprintf(enforced, cl.ns)
			}
			cl.policyIs(t, "deleg", dnspolicy.ConditionEnforced, enforced)
			rec := cl.record(t, "gw-api")
			if rec == nil || !rec.Spec.Delegate || rec.Spec.ProviderRef != nil || len(rec.Spec.Endpoints) == 0 {
				t.Fatalf("record %+v: want delegate, no providerRef, the listener's endpoints", rec)
			}
			eventually(t, 10*time.Second, func() string {
				want := "none"
				if tc.role == dnsrecord.DelegationRoleSecondary {
					want = "True"
				}
				got := "none"
				for _, c := range cl.record(t, "gw-api").Status.Conditions {
					if c.Type == v1alpha1.ConditionTypeReadyForDelegation {
						got = string(c.Status)
					}
				}
				if got != want {
					return fmt.Sprintf("ReadyForDelegation %s, want %s", got, want)
				}
				return ""
			})
		})
	}
}
