//go:build integration || tenancy

package install_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dnspolicy/dnspolicy-controller/test/testenv"
)

// metricsToken is the token of a new ServiceAccount of namespace monitoring, bound to the
// metrics-reader ClusterRole when reader (as docs/install.md tells a scraper's to be).
func (cp *controlPlane) metricsToken(t *testing.T, name string, reader bool) string {
	t.Helper()
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cp.cfg)
	if err != nil {
		t.Fatal(err)
	}
	cp.namespaces(t, "monitoring")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "monitoring", Name: name}}
	if err := cp.c.Create(ctx, sa); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("monitoring").CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo(int64(600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if reader {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-dnspolicy-metrics"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "dnspolicy-controller-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "monitoring", Name: name}},
		}
		if err := cp.c.Create(ctx, binding); err != nil {
			t.Fatal(err)
		}
	}
	return tr.Status.Token
}

// getMetrics reads the controller's secure metrics endpoint at addr with the token (none when
// empty). The certificate is self-signed, made by the controller at start (as the ServiceMonitor's
// insecureSkipVerify says).
func getMetrics(addr, token string) (int, string, error) {
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// scrapeMetrics reads the controller's secure metrics endpoint at addr as docs/install.md tells a
// scraper to: no token is refused, a ServiceAccount not bound to the metrics-reader ClusterRole is
// forbidden, and one bound to it reads the metrics. The controller checks both with the reviews its
// ServiceAccount may create (config/rbac/base/metrics_auth_role.yaml).
func scrapeMetrics(t *testing.T, cp *controlPlane, addr string) {
	t.Helper()
	reader, stranger := cp.metricsToken(t, "prometheus", true), cp.metricsToken(t, "stranger", false)
	cases := []struct {
		who, token string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"a ServiceAccount without the metrics-reader role", stranger, http.StatusForbidden},
		{"a ServiceAccount bound to the metrics-reader role", reader, http.StatusOK},
	}
	for _, tc := range cases {
		testenv.Eventually(t, 30*time.Second, func() string {
			code, body, err := getMetrics(addr, tc.token)
			switch {
			case err != nil:
				return fmt.Sprintf("%s: %v", tc.who, err)
			case code != tc.want:
				return fmt.Sprintf("%s: HTTP %d, want %d", tc.who, code, tc.want)
			case code == http.StatusOK && !strings.Contains(body, "dnspolicy_goroutine_panics_total"):
				return fmt.Sprintf("%s: the metrics lack the controller's own", tc.who)
			case code != http.StatusOK && strings.Contains(body, "dnspolicy_"):
				return fmt.Sprintf("%s: HTTP %d with metrics in the body", tc.who, code)
			}
			return ""
		})
	}
}
