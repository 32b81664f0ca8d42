package geo

import (
	"errors"
	"slices"
	"testing"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

func TestValidateCode(t *testing.T) {
	for _, tc := range []struct {
		code    string
		wantErr string
	}{
		{code: "IE"},
		{code: "US"},
		{code: "AX"},
		{code: "ZW"},
		{code: "*"},
		{code: "GEO-EU"},
		{code: "GEO-AF"},
		{code: "GEO-AN"},
		{code: "GEO-AS"},
		{code: "GEO-NA"},
		{code: "GEO-OC"},
		{code: "GEO-SA"},
		{code: "ie", wantErr: "unexpected geo code. Prefix with GEO- for continents or use ISO_3166 Alpha 2 supported code for countries"},
		{code: "CAD", wantErr: "unexpected geo code. Prefix with GEO- for continents or use ISO_3166 Alpha 2 supported code for countries"},
		{code: "UK", wantErr: "unexpected geo code. Prefix with GEO- for continents or use ISO_3166 Alpha 2 supported code for countries"},
		{code: "", wantErr: "unexpected geo code. Prefix with GEO- for continents or use ISO_3166 Alpha 2 supported code for countries"},
		{code: "us-east1", wantErr: "unexpected geo code. Prefix with GEO- for continents or use ISO_3166 Alpha 2 supported code for countries"},
		{code: "EU", wantErr: "unexpected geo code. Prefix with GEO- for continents or use ISO_3166 Alpha 2 supported code for countries"},
		{code: "GEO-XX", wantErr: "unexpected continent code. XX"},
		{code: "GEO-eu", wantErr: "unexpected continent code. eu"},
		{code: "GEO-", wantErr: "unexpected continent code. "},
		// Only one prefix is removed: Kuadrant strips every occurrence and so accepts this one.
		{code: "GEO-GEO-EU", wantErr: "unexpected continent code. GEO-EU"},
		{code: "geo-EU", wantErr: "unexpected geo code. Prefix with GEO- for continents or use ISO_3166 Alpha 2 supported code for countries"},
	} {
		err := ValidateCode(tc.code)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("ValidateCode(%q) = %v, want nil", tc.code, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.wantErr {
			t.Errorf("ValidateCode(%q) = %v, want %q", tc.code, err, tc.wantErr)
		}
	}
}

func TestValidateCodeErrorKinds(t *testing.T) {
	if err := ValidateCode("GEO-XX"); !errors.Is(err, ErrContinentCode) {
		t.Errorf("continent error %v does not match ErrContinentCode", err)
	}
	if err := ValidateCode("XX"); !errors.Is(err, ErrGeoCode) {
		t.Errorf("geo error %v does not match ErrGeoCode", err)
	}
}

func TestCountries(t *testing.T) {
	c := Countries()
	// 249 is the number of officially assigned ISO 3166-1 alpha-2 codes (cross-checked against the
	// iso-codes database when the list was written).
	if len(c) != 249 {
		t.Errorf("got %d country codes, want 249", len(c))
	}
	if !slices.IsSorted(c) {
		t.Error("country codes are not sorted; IsCountry relies on binary search")
	}
	if len(slices.Compact(slices.Clone(c))) != len(c) {
		t.Error("country codes contain duplicates")
	}
	for _, code := range c {
		if len(code) != 2 || code[0] < 'A' || code[0] > 'Z' || code[1] < 'A' || code[1] > 'Z' {
			t.Errorf("malformed country code %q", code)
		}
		if !IsCountry(code) {
			t.Errorf("IsCountry(%q) = false", code)
		}
	}
	// Reserved or withdrawn codes that people nevertheless try.
	for _, code := range []string{"UK", "EU", "XK", "AN", "YU", "CS", "SU", "ZZ"} {
		if IsCountry(code) {
			t.Errorf("IsCountry(%q) = true, want false", code)
		}
	}
	// The copy must not alias the table.
	c[0] = "ZZ"
	if !IsCountry("AD") {
		t.Error("mutating Countries() changed the table")
	}
}

func TestContinents(t *testing.T) {
	want := []string{"AF", "AN", "AS", "EU", "NA", "OC", "SA"}
	if got := Continents(); !slices.Equal(got, want) {
		t.Errorf("Continents() = %v, want %v", got, want)
	}
	for _, code := range want {
		if !IsContinent(code) {
			t.Errorf("IsContinent(%q) = false", code)
		}
	}
	if IsContinent("GEO-EU") || IsContinent("eu") || IsContinent("") {
		t.Error("IsContinent accepts a prefixed, lower-case or empty code")
	}
}

func TestValidateWeight(t *testing.T) {
	for _, w := range []string{"0", "1", "120", "255", "18446744073709551615"} {
		if err := ValidateWeight(w); err != nil {
			t.Errorf("ValidateWeight(%q) = %v, want nil", w, err)
		}
	}
	for _, w := range []string{"-1", "", "1.5", "abc", " 1", "+1", "18446744073709551616"} {
		err := ValidateWeight(w)
		if err == nil || err.Error() != "invalid weight expected a value >= 0" {
			t.Errorf("ValidateWeight(%q) = %v, want the weight error", w, err)
		}
	}
}

func TestValidateEndpoints(t *testing.T) {
	ok := []*v1alpha1.Endpoint{
		v1alpha1.NewEndpoint("klb.a.example.com", "CNAME", 300, "ie.klb.a.example.com").
			WithSetIdentifier("IE").WithProviderSpecific("geo-code", "IE"),
		v1alpha1.NewEndpoint("klb.a.example.com", "CNAME", 300, "ie.klb.a.example.com").
			WithSetIdentifier("default").WithProviderSpecific("geo-code", "*"),
		v1alpha1.NewEndpoint("ie.klb.a.example.com", "CNAME", 60, "lb.example.net").
			WithSetIdentifier("lb.example.net").WithProviderSpecific("weight", "120"),
		// Properties of other backends are not ours to judge.
		v1alpha1.NewEndpoint("a.example.com", "A", 60, "192.0.2.1").WithProviderSpecific("aws/region", "nowhere"),
	}
	if err := ValidateEndpoints(ok); err != nil {
		t.Fatalf("ValidateEndpoints(valid) = %v", err)
	}
	for _, tc := range []struct {
		name, prop, value, wantErr string
	}{
		{"country", "geo-code", "XX", ErrGeoCode.Error()},
		{"continent", "geo-code", "GEO-ZZ", "unexpected continent code. ZZ"},
		{"weight", "weight", "-5", "invalid weight expected a value >= 0"},
	} {
		bad := append(slices.Clone(ok), v1alpha1.NewEndpoint("x.example.com", "CNAME", 60, "y.example.com").
			WithSetIdentifier("y").WithProviderSpecific(tc.prop, tc.value))
		if err := ValidateEndpoints(bad); err == nil || err.Error() != tc.wantErr {
			t.Errorf("%s: ValidateEndpoints = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}
