package k8gb

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

func secret(data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "k8gb"}, Type: v1alpha1.SecretTypeK8gb, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestParseOptions(t *testing.T) {
	for name, tc := range map[string]struct {
		data    map[string]string
		want    Options
		wantErr string
	}{
		"geo tag only": {
			data: map[string]string{GeoTagKey: "eu"},
			want: Options{GeoTag: "eu", Strategy: StrategyRoundRobin},
		},
		"everything": {
			data: map[string]string{GeoTagKey: " eu ", WeightsKey: "eu=3, us=1", v1alpha1.K8gbNamespaceKey: "k8gb"},
			want: Options{GeoTag: "eu", Strategy: StrategyRoundRobin, Weights: map[string]int{"eu": 3, "us": 1}, Namespace: "k8gb"},
		},
		"failover": {
			data: map[string]string{GeoTagKey: "us", StrategyKey: StrategyFailover, PrimaryGeoTagKey: "eu"},
			want: Options{GeoTag: "us", Strategy: StrategyFailover, PrimaryGeoTag: "eu"},
		},
		"geoip": {
			data: map[string]string{GeoTagKey: "us", StrategyKey: StrategyGeoIP},
			want: Options{GeoTag: "us", Strategy: StrategyGeoIP},
		},
		"no geo tag": {
			data:    map[string]string{WeightsKey: "eu=1"},
			wantErr: "provider secret ns/k8gb: key K8GB_GEO_TAG is required: this cluster's geo tag as k8gb knows it (k8gb's clusterGeoTag)",
		},
		"bad geo tag":         {data: map[string]string{GeoTagKey: "eu west"}, wantErr: "key K8GB_GEO_TAG is not a k8gb geo tag"},
		"unknown strategy":    {data: map[string]string{GeoTagKey: "eu", StrategyKey: "random"}, wantErr: "key K8GB_STRATEGY must be roundRobin, geoip or failover"},
		"failover no primary": {data: map[string]string{GeoTagKey: "eu", StrategyKey: StrategyFailover}, wantErr: "key K8GB_PRIMARY_GEO_TAG is required with K8GB_STRATEGY=failover"},
		"primary without failover": {
			data: map[string]string{GeoTagKey: "eu", PrimaryGeoTagKey: "eu"}, wantErr: "key K8GB_PRIMARY_GEO_TAG is used only with K8GB_STRATEGY=failover",
		},
		"weights with geoip": {
			data: map[string]string{GeoTagKey: "eu", StrategyKey: StrategyGeoIP, WeightsKey: "eu=1"}, wantErr: "k8gb weights round robin only",
		},
		"weights without this cluster": {data: map[string]string{GeoTagKey: "eu", WeightsKey: "us=1"}, wantErr: "has no weight for this cluster's geo tag"},
		"negative weight":              {data: map[string]string{GeoTagKey: "eu", WeightsKey: "eu=-1"}, wantErr: "the weight of eu is not a whole number of 0 or more"},
		"weight not a number":          {data: map[string]string{GeoTagKey: "eu", WeightsKey: "eu=half"}, wantErr: "the weight of eu is not a whole number"},
		"duplicate tag":                {data: map[string]string{GeoTagKey: "eu", WeightsKey: "eu=1,eu=2"}, wantErr: "geo tag eu appears twice"},
		"not a pair":                   {data: map[string]string{GeoTagKey: "eu", WeightsKey: "eu"}, wantErr: `"eu" is not <geo tag>=<weight>`},
		"bad namespace":                {data: map[string]string{GeoTagKey: "eu", v1alpha1.K8gbNamespaceKey: "K8GB"}, wantErr: "key K8GB_NAMESPACE is not a namespace name"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseOptions(secret(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
