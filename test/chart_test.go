package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/providers/builtin"
)

// The chart's values schema lists the backends `providers` may name; a backend the binary has but the
// schema lacks cannot be enabled through the chart (helm refuses the value), so the two lists must
// be the same.
func TestChartNamesEveryBackend(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "charts", "dnspolicy-controller", "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties struct {
			Providers struct {
				Items struct {
					Enum []string `json:"enum"`
				} `json:"items"`
			} `json:"providers"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	got := slices.Sorted(slices.Values(schema.Properties.Providers.Items.Enum))
	if want := builtin.Names(); !slices.Equal(got, want) {
		t.Errorf("values.schema.json allows providers %v, the binary has %v", got, want)
	}
}
