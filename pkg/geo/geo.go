// Package geo validates the provider-neutral routing properties of endpoints: the geo-code scheme
// that Route53-style backends and our embedded server understand (an ISO 3166-1 alpha-2 country,
// "GEO-" and a continent code, or "*" for the catch-all), and weights.
//
// The builder does not call this: which geo codes are valid depends on the backend (Cloud DNS takes
// region names, Azure its own codes), so each backend decides in AdjustEndpoints whether to use this
// scheme. The error texts are Kuadrant's, verbatim, because tooling matches them in record status.
package geo

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
)

// ContinentPrefix marks a geo code as a continent rather than a country.
const ContinentPrefix = "GEO-"

// ErrWeight is returned for a weight that is not a whole number >= 0.
var ErrWeight = errors.New("invalid weight expected a value >= 0")

// ErrGeoCode is returned for a geo code that is neither a country, a continent nor the catch-all.
var ErrGeoCode = errors.New("unexpected geo code. Prefix with " + ContinentPrefix + " for continents or use ISO_3166 Alpha 2 supported code for countries")

// ErrContinentCode is returned, wrapped with the offending code, for "GEO-" followed by an unknown
// continent.
var ErrContinentCode = errors.New("unexpected continent code.")

// continents are the seven continent codes Route53 geolocation routing accepts.
var continents = []string{"AF", "AN", "AS", "EU", "NA", "OC", "SA"}

// countries are the ISO 3166-1 alpha-2 codes officially assigned (249), sorted. Kuadrant's list
// lacks AX (Åland Islands); we accept it, since a client located there is routed by it.
var countries = []string{
	"AD", "AE", "AF", "AG", "AI", "AL", "AM", "AO", "AQ", "AR", "AS", "AT", "AU", "AW", "AX", "AZ",
	"BA", "BB", "BD", "BE", "BF", "BG", "BH", "BI", "BJ", "BL", "BM", "BN", "BO", "BQ", "BR", "BS",
	"BT", "BV", "BW", "BY", "BZ", "CA", "CC", "CD", "CF", "CG", "CH", "CI", "CK", "CL", "CM", "CN",
	"CO", "CR", "CU", "CV", "CW", "CX", "CY", "CZ", "DE", "DJ", "DK", "DM", "DO", "DZ", "EC", "EE",
	"EG", "EH", "ER", "ES", "ET", "FI", "FJ", "FK", "FM", "FO", "FR", "GA", "GB", "GD", "GE", "GF",
	"GG", "GH", "GI", "GL", "GM", "GN", "GP", "GQ", "GR", "GS", "GT", "GU", "GW", "GY", "HK", "HM",
	"HN", "HR", "HT", "HU", "ID", "IE", "IL", "IM", "IN", "IO", "IQ", "IR", "IS", "IT", "JE", "JM",
	"JO", "JP", "KE", "KG", "KH", "KI", "KM", "KN", "KP", "KR", "KW", "KY", "KZ", "LA", "LB", "LC",
	"LI", "LK", "LR", "LS", "LT", "LU", "LV", "LY", "MA", "MC", "MD", "ME", "MF", "MG", "MH", "MK",
	"ML", "MM", "MN", "MO", "MP", "MQ", "MR", "MS", "MT", "MU", "MV", "MW", "MX", "MY", "MZ", "NA",
	"NC", "NE", "NF", "NG", "NI", "NL", "NO", "NP", "NR", "NU", "NZ", "OM", "PA", "PE", "PF", "PG",
	"PH", "PK", "PL", "PM", "PN", "PR", "PS", "PT", "PW", "PY", "QA", "RE", "RO", "RS", "RU", "RW",
	"SA", "SB", "SC", "SD", "SE", "SG", "SH", "SI", "SJ", "SK", "SL", "SM", "SN", "SO", "SR", "SS",
	"ST", "SV", "SX", "SY", "SZ", "TC", "TD", "TF", "TG", "TH", "TJ", "TK", "TL", "TM", "TN", "TO",
	"TR", "TT", "TV", "TW", "TZ", "UA", "UG", "UM", "US", "UY", "UZ", "VA", "VC", "VE", "VG", "VI",
	"VN", "VU", "WF", "WS", "YE", "YT", "ZA", "ZM", "ZW",
}

// IsCountry reports whether code is an ISO 3166-1 alpha-2 country code. Codes are case-sensitive
// (upper case), as in Kuadrant: "ie" is not a country, so a record written by either controller is
// judged the same way.
func IsCountry(code string) bool {
	_, found := slices.BinarySearch(countries, code)
	return found
}

// IsContinent reports whether code (without the "GEO-" prefix) is a continent code.
func IsContinent(code string) bool {
	return slices.Contains(continents, code)
}

// Countries returns the accepted country codes, sorted.
func Countries() []string { return slices.Clone(countries) }

// Continents returns the accepted continent codes (without the "GEO-" prefix).
func Continents() []string { return slices.Clone(continents) }

// ValidateCode accepts a country code, "GEO-" and a continent code, or "*".
func ValidateCode(code string) error {
	if continent, ok := strings.CutPrefix(code, ContinentPrefix); ok {
		if !IsContinent(continent) {
			return fmt.Errorf("%w %s", ErrContinentCode, continent)
		}
		return nil
	}
	if code == v1alpha1.WildcardGeo || IsCountry(code) {
		return nil
	}
	return ErrGeoCode
}

// ValidateWeight accepts the text of a whole number >= 0, as weights travel in providerSpecific.
func ValidateWeight(weight string) error {
	if _, err := strconv.ParseUint(weight, 10, 64); err != nil {
		return ErrWeight
	}
	return nil
}

// ValidateEndpoints checks the geo-code and weight properties of every endpoint and returns the first
// violation, as Kuadrant's CoreDNS backend does before it publishes.
func ValidateEndpoints(endpoints []*v1alpha1.Endpoint) error {
	for _, ep := range endpoints {
		for _, p := range ep.ProviderSpecific {
			var err error
			switch p.Name {
			case v1alpha1.ProviderSpecificGeoCode:
				err = ValidateCode(p.Value)
			case v1alpha1.ProviderSpecificWeight:
				err = ValidateWeight(p.Value)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}
