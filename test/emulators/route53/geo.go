package route53

import (
	"slices"
	"strings"
)

// The emulator keeps its own geolocation tables rather than the ones the backends validate with:
// an emulator that shares code with what it checks agrees with its bugs.

// continents are Route 53's continent codes (API model, GeoLocation.ContinentCode).
var continents = []string{"AF", "AN", "AS", "EU", "NA", "OC", "SA"}

// countries are the ISO 3166-1 alpha-2 codes Route 53 routes by. The Developer Guide
// (resource-record-sets-values-geo.md) lists BV, CX, EH and HM as not supported, so they are left
// out; UA is supported (API model, GeoLocation.CountryCode).
var countries = func() []string {
	out := strings.Fields(`
		AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS
		BT BW BY BZ CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CY CZ DE DJ DK DM DO DZ EC EE EG ER
		ES ET FI FJ FK FM FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HN HR HT HU
		ID IE IL IM IN IO IQ IR IS IT JE JM JO JP KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS
		LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT MU MV MW MX MY MZ NA NC NE NF NG
		NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW SA SB SC SD
		SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW
		TZ UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW`)
	slices.Sort(out)
	return out
}()

func isContinent(code string) bool { return slices.Contains(continents, code) }

func isCountry(code string) bool {
	_, found := slices.BinarySearch(countries, code)
	return found
}
