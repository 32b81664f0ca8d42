package dnshealthcheckprobe

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// Headers come only from Opaque Secrets: a typed Secret (a ServiceAccount's token, a provider's
// credentials, registry or TLS keys) is refused with a reason that names its type, never its data.
func TestHeadersOnlyFromOpaqueSecrets(t *testing.T) {
	secretTypes := []corev1.SecretType{corev1.SecretTypeOpaque, corev1.SecretTypeServiceAccountToken, "kuadrant.io/aws",
		"kuadrant.io/coredns", corev1.SecretTypeDockerConfigJson, corev1.SecretTypeTLS, corev1.SecretTypeBasicAuth}
	c := fake.NewClientBuilder().Build()
	for _, ty := range secretTypes {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: strings.NewReplacer("/", "-", ".", "-").Replace(strings.ToLower(string(ty)))},
			Type: ty, Data: map[string][]byte{"Authorization": []byte("Bearer s3cret")}}
		if err := c.Create(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		h := readHeaders(context.Background(), c, types.NamespacedName{Namespace: s.Namespace, Name: s.Name})
		if ty == corev1.SecretTypeOpaque {
			if h.unusable != "" || h.headers.Get("Authorization") != "Bearer s3cret" {
				t.Errorf("Opaque: %+v", h)
			}
			continue
		}
		want := ReasonHeadersSecretNotAllowed + ": Additional headers Secret tenant/" + s.Name + " is of type " + string(ty) + "; only Opaque Secrets are read for headers"
		if h.unusable != want || h.headers != nil {
			t.Errorf("%s: %+v, want %q and no headers", ty, h, want)
		}
	}
}
