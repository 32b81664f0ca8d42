package hash

import "testing"

// The expected values are computed independently of this package (SHA-224, then base36 of the digest
// bytes as martinlindhe/base36 v1.1.1 encodes them), so a change of algorithm or library shows here.
func TestBase36(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 8, "2n6a5vwp"},
		{"abc", 6, "fxld8n"},
		{"my-gateway-my-namespace", 6, "299k3r"},
	} {
		if got := Base36(tc.in, tc.n); got != tc.want {
			t.Errorf("Base36(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
		if len(Base36(tc.in, tc.n)) != tc.n {
			t.Errorf("Base36(%q, %d) has length %d", tc.in, tc.n, len(Base36(tc.in, tc.n)))
		}
	}
}
