package main

import (
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/cmd/dnspolicy-controller/app"
)

// add-cluster-secret writes the Secret the controller reads: its defaults are the controller's.
func TestClusterSecretDefaultsAreTheControllers(t *testing.T) {
	for _, c := range []struct{ ours, controller string }{
		{defaultClusterSecretNamespace, app.DefaultClusterSecretNamespace},
		{defaultClusterSecretLabel, app.DefaultClusterSecretLabel},
		{clusterSecretKey, app.ClusterSecretKey},
	} {
		if c.ours != c.controller {
			t.Errorf("the plugin's %q is the controller's %q", c.ours, c.controller)
		}
	}
}
