//go:build integration

package clouds_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/controllers/dnsrecord"
	"github.com/dnspolicy/dnspolicy-controller/test/emulators/cloud"
	clouddnsemu "github.com/dnspolicy/dnspolicy-controller/test/emulators/clouddns"
	route53emu "github.com/dnspolicy/dnspolicy-controller/test/emulators/route53"
)

// badInputWindow is how long the bad inputs stay in place, from the first record's creation, before
// the counters are read and the inputs fixed. With the production backoff (1 s doubling, ±10%) a
// failing record is tried at 0, 1, 3 and 7 s, and next between 13.5 and 16.5 s: the window ends
// before that attempt, which then picks up the fixed Secret. A hot loop makes hundreds of passes.
const badInputWindow = 12 * time.Second

// Bounds over the window.
const (
	// badMaxPasses: 4 passes are expected.
	badMaxPasses = 6
	// badMaxRefusedCalls bounds the API calls of an account whose every pass fails at the first call
	// (refused credentials, no zone): at most one per pass.
	badMaxRefusedCalls = 6
)

// badAccount is one emulated cloud account with its own manager, so its call counters belong to one
// kind of bad input.
type badAccount struct {
	c  *cloud.Cloud
	cl *cluster
}

// startBadAccount starts a manager publishing to c, in a fresh namespace with a valid Secret "provider".
func startBadAccount(t *testing.T, c *cloud.Cloud) *badAccount {
	t.Helper()
	return &badAccount{c: c, cl: startClusters(t, c, 1, dnsrecord.DefaultOptions())[0]}
}

// secret creates (or, when it exists, replaces the data of) a provider Secret of the account's cloud.
func (a *badAccount) secret(t *testing.T, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.cl.ns, Name: name}, Type: a.c.SecretType}
	s.Data = map[string][]byte{}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	old := &corev1.Secret{}
	err := a.cl.c.Get(t.Context(), client.ObjectKeyFromObject(s), old)
	switch {
	case err == nil:
		s.ResourceVersion = old.ResourceVersion
		err = a.cl.c.Update(t.Context(), s)
	case apierrors.IsNotFound(err):
		err = a.cl.c.Create(t.Context(), s)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// record creates a record published with the named provider Secret.
func (a *badAccount) record(t *testing.T, name, secret, rootHost string, eps []*v1alpha1.Endpoint) {
	t.Helper()
	r := &v1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.cl.ns},
		Spec:       v1alpha1.DNSRecordSpec{RootHost: rootHost, ProviderRef: &v1alpha1.ProviderRef{Name: secret}, Endpoints: eps},
	}
	if err := a.cl.c.Create(t.Context(), r); err != nil {
		t.Fatal(err)
	}
}

// setEndpoints replaces a record's endpoints (a spec change: the controller acts at once).
func (a *badAccount) setEndpoints(t *testing.T, name string, eps []*v1alpha1.Endpoint) {
	t.Helper()
	r := a.cl.get(t, name)
	r.Spec.Endpoints = eps
	if err := a.cl.c.Update(t.Context(), r); err != nil {
		t.Fatal(err)
	}
}

func badTotalCalls(calls map[string]int) int {
	n := 0
	for _, v := range calls {
		n += v
	}
	return n
}

// badWrites counts the calls that change a zone.
func badWrites(cloudName string, calls map[string]int) int {
	n := 0
	for _, op := range cloud.WriteOperations(cloudName) {
		n += calls[op]
	}
	return n
}

// badZoneListings counts the calls that list zones.
func badZoneListings(calls map[string]int) int {
	return calls[route53emu.OpListHostedZones] + calls[clouddnsemu.OpListManagedZones] + calls["Zones.ListByResourceGroup"]
}

// badExpectation is the Ready condition a bad record must settle on.
type badExpectation struct {
	account *badAccount
	record  string
	reason  string
	// contains are the parts the message must hold, in order.
	contains []string
	// hidden are values of the Secret the message must never show.
	hidden []string
}

// badVolatile matches what must never reach a condition: request IDs, UUIDs, timestamps, ports.
var badVolatile = regexp.MustCompile(`(?i)request ?id|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}|\d{2}:\d{2}:\d{2}|127\.0\.0\.1|localhost`)

// check returns "" when the record's Ready condition is as expected.
func (e badExpectation) check(t *testing.T) string {
	r := e.account.cl.get(t, e.record)
	c := ready(r)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != e.reason {
		return fmt.Sprintf("%s: Ready %+v, want False with reason %s", e.record, c, e.reason)
	}
	rest := c.Message
	for _, part := range e.contains {
		i := strings.Index(rest, part)
		if i < 0 {
			return fmt.Sprintf("%s: message %q does not hold %q (in order: %q)", e.record, c.Message, part, e.contains)
		}
		rest = rest[i+len(part):]
	}
	for _, v := range e.hidden {
		if v != "" && strings.Contains(c.Message, v) {
			return fmt.Sprintf("%s: message %q shows a value of the Secret", e.record, c.Message)
		}
	}
	if m := badVolatile.FindString(c.Message); m != "" {
		return fmt.Sprintf("%s: message %q holds %q, which changes from call to call", e.record, c.Message, m)
	}
	return ""
}

// badGeoRecord is one cluster's geo tree for host with the given code in place of a valid one.
func badGeoRecord(c *cloud.Cloud, host, code string) []*v1alpha1.Endpoint {
	eps := lbTree(c, host, "IE", 1, true, "leaf", "10.40.0.1")
	if code != "" {
		eps[1] = eps[1].DeepCopy()
		eps[1].SetIdentifier = code
		eps[1].ProviderSpecific = nil
		eps[1].SetProviderSpecific(v1alpha1.ProviderSpecificGeoCode, code)
	}
	return eps
}

// badWithout returns a copy of data without key.
func badWithout(data map[string]string, key string) map[string]string {
	out := map[string]string{}
	for k, v := range data {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// badWith returns a copy of data with key set to value.
func badWith(data map[string]string, key, value string) map[string]string {
	out := badWithout(data, key)
	out[key] = value
	return out
}

// badAzureField returns Azure Secret data whose azure.json has field set to value, or removed
// when value is nil.
func badAzureField(t *testing.T, data map[string]string, field string, value any) map[string]string {
	t.Helper()
	cfg := map[string]any{}
	if err := json.Unmarshal([]byte(data[v1alpha1.AzureJSONKey]), &cfg); err != nil {
		t.Fatal(err)
	}
	if value == nil {
		delete(cfg, field)
	} else {
		cfg[field] = value
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return badWith(data, v1alpha1.AzureJSONKey, string(raw))
}

// badCredentialValues are the values of a valid Secret that are credentials.
func badCredentialValues(t *testing.T, c *cloud.Cloud) []string {
	data := c.SecretData()
	switch c.Name {
	case cloud.AWS:
		return []string{data[v1alpha1.AWSAccessKeyIDKey], data[v1alpha1.AWSSecretAccessKeyKey]}
	case cloud.Azure:
		var cfg map[string]string
		if err := json.Unmarshal([]byte(data[v1alpha1.AzureJSONKey]), &cfg); err != nil {
			t.Fatal(err)
		}
		return []string{cfg["aadClientSecret"], cfg["aadClientId"], cfg["tenantId"]}
	}
	return nil
}

// Bad input (issue acceptance point 5): a provider Secret with a missing or malformed key, a
// Secret whose credentials the cloud refuses or whose scope holds no zone, a geo code the backend
// cannot express, a root host in a zone the credentials cannot see. Each gets a clear Ready=False
// condition naming what to fix and never a secret value; the record backs off instead of looping
// (bounded passes and API calls over badInputWindow), and fixing the input brings it to Ready.
func TestBadInput(t *testing.T) {
	forEachCloud(t, func(t *testing.T, first *cloud.Cloud) {
		name := first.Name
		// Four accounts, each its own emulator and manager, so each one's counters belong to one
		// kind of bad input.
		clouds := []*cloud.Cloud{first, startCloud(t, name), startCloud(t, name), startCloud(t, name)}
		accounts := make([]*badAccount, len(clouds))
		for i, c := range clouds {
			accounts[i] = startBadAccount(t, c)
		}
		unparsable, refused, geoAcc, hidden := accounts[0], accounts[1], accounts[2], accounts[3]
		valid := unparsable.c.SecretData()
		const zoneName = "bad.example.com"
		host := "app." + zoneName
		simple := func(h string) []*v1alpha1.Endpoint { return []*v1alpha1.Endpoint{a(h, 60, "10.40.0.9")} }
		var expect []badExpectation
		var fixes []func()
		start := time.Now()

		// 1. Secrets the backend cannot parse: no call reaches the cloud.
		type parseCase struct{ secret, key string }
		var parseCases []parseCase
		var bad map[string]map[string]string
		switch name {
		case cloud.AWS:
			bad = map[string]map[string]string{
				"missing-key": badWithout(valid, v1alpha1.AWSSecretAccessKeyKey),
				"bad-url":     badWith(valid, v1alpha1.EndpointOverrideKey, "route53 emulator"),
				"bad-region":  badWith(valid, v1alpha1.AWSRegionKey, "Ireland"),
			}
			parseCases = []parseCase{
				{"missing-key", "key " + v1alpha1.AWSSecretAccessKeyKey + " is missing or empty"},
				{"bad-url", "key " + v1alpha1.EndpointOverrideKey + " is not an http or https URL"},
				{"bad-region", "key " + v1alpha1.AWSRegionKey + " is not a region name"},
			}
		case cloud.Google:
			bad = map[string]map[string]string{
				"missing-key": badWithout(valid, v1alpha1.GoogleProjectIDKey),
				"bad-url":     badWith(valid, v1alpha1.EndpointOverrideKey, "::cloud-dns"),
				"no-key":      badWithout(valid, v1alpha1.EndpointOverrideKey),
			}
			parseCases = []parseCase{
				{"missing-key", "key " + v1alpha1.GoogleProjectIDKey + " is missing or empty"},
				{"bad-url", "key " + v1alpha1.EndpointOverrideKey + " is not an http or https URL"},
				// Without an endpoint override the service-account key is required.
				{"no-key", "key " + v1alpha1.GoogleJSONKey + " is missing or empty"},
			}
		default:
			bad = map[string]map[string]string{
				"missing-key": badAzureField(t, valid, "aadClientSecret", nil),
				// Truncated: the decoder would quote the client secret that precedes the cut.
				"bad-json": badWith(valid, v1alpha1.AzureJSONKey, valid[v1alpha1.AzureJSONKey][:len(valid[v1alpha1.AzureJSONKey])-20]),
				"bad-url":  badWith(valid, v1alpha1.EndpointOverrideKey, "management endpoint"),
			}
			parseCases = []parseCase{
				{"missing-key", "key " + v1alpha1.AzureJSONKey + ": field aadClientSecret is missing or empty"},
				{"bad-json", "key " + v1alpha1.AzureJSONKey + " is not a JSON object with string fields"},
				{"bad-url", "key " + v1alpha1.EndpointOverrideKey + " is not an http(s) URL"},
			}
		}
		unparsable.c.AddZone(zoneName)
		for _, pc := range parseCases {
			unparsable.secret(t, pc.secret, bad[pc.secret])
			unparsable.record(t, pc.secret, pc.secret, pc.secret+"."+zoneName, simple(pc.secret+"."+zoneName))
			expect = append(expect, badExpectation{
				account: unparsable, record: pc.secret, reason: v1alpha1.ReasonUnsupportedProvider,
				contains: []string{"provider secret " + unparsable.cl.ns + "/" + pc.secret, pc.key},
				hidden:   badCredentialValues(t, unparsable.c),
			})
			fixes = append(fixes, func() { unparsable.secret(t, pc.secret, unparsable.c.SecretData()) })
		}

		// 2. A Secret the cloud refuses, or whose scope holds no zone: the message names the Secret
		// and the key to look at.
		refused.c.AddZone(zoneName)
		var wrong map[string]string
		var refusedParts []string
		valid = refused.c.SecretData()
		switch name {
		case cloud.AWS:
			wrong = badWith(valid, v1alpha1.AWSAccessKeyIDKey, "AKIANOTKNOWNTOTHEEMU")
			refusedParts = []string{"provider secret " + refused.cl.ns + "/wrong", v1alpha1.AWSAccessKeyIDKey, "InvalidClientTokenId"}
		case cloud.Google:
			wrong = badWith(valid, v1alpha1.GoogleProjectIDKey, "no-such-project")
			refusedParts = []string{"provider secret " + refused.cl.ns + "/wrong", v1alpha1.GoogleProjectIDKey, "no-such-project"}
		default:
			refused.c.AddEmptyScope("empty-rg")
			wrong = badAzureField(t, valid, "resourceGroup", "empty-rg")
			refusedParts = []string{"is in none of the zones [] of provider secret " + refused.cl.ns + "/wrong", "resource group empty-rg, from key " + v1alpha1.AzureJSONKey + " field resourceGroup"}
		}
		refused.secret(t, "wrong", wrong)
		refused.record(t, "wrong", "wrong", host, simple(host))
		hiddenValues := badCredentialValues(t, refused.c)
		if name == cloud.AWS {
			hiddenValues = append(hiddenValues, wrong[v1alpha1.AWSAccessKeyIDKey])
		}
		expect = append(expect, badExpectation{
			account: refused, record: "wrong", reason: v1alpha1.ReasonDNSProviderError,
			contains: append([]string{"Unable to find suitable zone in provider: "}, refusedParts...),
			hidden:   hiddenValues,
		})
		fixes = append(fixes, func() { refused.secret(t, "wrong", refused.c.SecretData()) })

		// 3. Geo codes the backend cannot express: nothing is written.
		geoAcc.c.AddZone(zoneName)
		type geoCase struct{ record, code, message string }
		var geoCases []geoCase
		switch name {
		case cloud.AWS:
			geoCases = []geoCase{
				{"geo-continent", "GEO-XX", "unexpected continent code. XX"},
				{"geo-country", "ZZ", "unexpected geo code. Prefix with GEO- for continents or use ISO_3166 Alpha 2 supported code for countries"},
			}
		case cloud.Google:
			geoCases = []geoCase{
				{"geo-country", "IE", `geo code "IE" of klb.geo-country.` + zoneName + ` cannot be expressed in Google Cloud DNS: use a Google Cloud region name`},
				{"geo-continent", "GEO-EU", `geo code "GEO-EU" of klb.geo-continent.` + zoneName + ` cannot be expressed in Google Cloud DNS`},
			}
		default:
			geoCases = []geoCase{
				{"geo-continent", "GEO-OC", "unexpected continent code. GEO-OC: Traffic Manager calls Oceania GEO-AP"},
				{"geo-country", "ZZ", "unexpected geo code. Prefix with GEO- for continents or use ISO_3166 Alpha 2 supported code for countries"},
			}
		}
		for _, gc := range geoCases {
			h := gc.record + "." + zoneName
			geoAcc.record(t, gc.record, "provider", h, badGeoRecord(geoAcc.c, h, gc.code))
			expect = append(expect, badExpectation{
				account: geoAcc, record: gc.record, reason: v1alpha1.ReasonValidationError, contains: []string{gc.message},
			})
			fixes = append(fixes, func() { geoAcc.setEndpoints(t, gc.record, badGeoRecord(geoAcc.c, h, "")) })
		}

		// 4. A root host in a zone the credentials cannot see (Azure: another resource group; the
		// others: no such zone), for three records: listings follow the Secret, not the records.
		const hiddenZone = "hidden.example.com"
		hidden.c.AddZone(zoneName)
		hidden.c.AddHiddenZone(hiddenZone)
		hiddenRecords := []string{"hidden-a", "hidden-b", "hidden-c"}
		for _, r := range hiddenRecords {
			h := r + "." + hiddenZone
			hidden.record(t, r, "provider", h, simple(h))
			expect = append(expect, badExpectation{
				account: hidden, record: r, reason: v1alpha1.ReasonDNSProviderError,
				contains: []string{"Unable to find suitable zone in provider: ", h, "is in none of the zones [" + zoneName + "] of provider secret " + hidden.cl.ns + "/provider"},
			})
		}
		fixes = append(fixes, func() { hidden.c.AddZone(hiddenZone) })

		// Every record settles on its condition quickly, and keeps exactly that message: a message
		// that changed per attempt would mean a status write (and a pass) per attempt.
		messages := map[string]string{}
		for _, e := range expect {
			eventually(t, 10*time.Second, func() string { return e.check(t) })
			messages[e.record] = ready(e.account.cl.get(t, e.record)).Message
			t.Logf("%s: %s", e.record, messages[e.record])
		}
		time.Sleep(badInputWindow - time.Since(start))

		// The window is over: take the counters and conditions, then fix every input at once, before
		// the records' next attempt.
		passed := map[string]float64{}
		problems := map[string]string{}
		for _, e := range expect {
			passed[e.record] = passes(e.account.cl, e.record)
			if msg := e.check(t); msg != "" {
				problems[e.record] = msg
			} else if got := ready(e.account.cl.get(t, e.record)).Message; got != messages[e.record] {
				problems[e.record] = fmt.Sprintf("%s: message changed from %q to %q", e.record, messages[e.record], got)
			}
		}
		calls := map[*badAccount]map[string]int{}
		for _, acc := range []*badAccount{unparsable, refused, geoAcc, hidden} {
			calls[acc] = acc.c.Calls()
		}
		// Fixing the input brings every record to Ready: no condition is sticky. A Secret (or a zone)
		// is looked at again at the record's next attempt, due within 4.5 s; a record change is acted
		// on at once.
		fixed := time.Now()
		for _, fix := range fixes {
			fix()
		}

		for _, e := range expect {
			if msg, ok := problems[e.record]; ok {
				t.Errorf("after %s: %s", badInputWindow, msg)
			}
			if n := passed[e.record]; n > badMaxPasses {
				t.Errorf("%s: %v passes in %s, want a backoff (at most %d)", e.record, n, badInputWindow, badMaxPasses)
			}
		}
		if n := badTotalCalls(calls[unparsable]); n != 0 {
			t.Errorf("%d API calls with Secrets that cannot be parsed, want none (%s)", n, cloud.FormatCalls(calls[unparsable]))
		}
		if n := badTotalCalls(calls[refused]); n == 0 || n > badMaxRefusedCalls {
			t.Errorf("%d API calls in %s with a refused Secret, want 1..%d (%s)", n, badInputWindow, badMaxRefusedCalls, cloud.FormatCalls(calls[refused]))
		}
		// The zones are listed once per Secret and ZoneListMaxAge; records that cannot be
		// published read no records and write nothing.
		if n := badTotalCalls(calls[geoAcc]); n > 2 {
			t.Errorf("%d API calls in %s for records with bad geo codes, want at most 2 zone listings (%s)", n, badInputWindow, cloud.FormatCalls(calls[geoAcc]))
		}
		if n := badZoneListings(calls[hidden]); n == 0 || n > badMaxRefusedCalls {
			t.Errorf("%d zone listings in %s for %d records of one Secret in a zone it cannot see, want 1..%d (%s)",
				n, badInputWindow, len(hiddenRecords), badMaxRefusedCalls, cloud.FormatCalls(calls[hidden]))
		}
		for _, c := range calls {
			if w := badWrites(name, c); w != 0 {
				t.Errorf("%d writes for records that cannot be published (%s)", w, cloud.FormatCalls(c))
			}
		}
		t.Logf("in %s: passes %v; calls: refused %s; geo %s; hidden zone %s", badInputWindow, passed,
			cloud.FormatCalls(calls[refused]), cloud.FormatCalls(calls[geoAcc]), cloud.FormatCalls(calls[hidden]))

		for _, e := range expect {
			eventually(t, 15*time.Second, func() string {
				c := ready(e.account.cl.get(t, e.record))
				if c == nil || c.Status != metav1.ConditionTrue {
					return fmt.Sprintf("%s after the fix: Ready %+v", e.record, c)
				}
				return ""
			})
		}
		t.Logf("all %d records Ready %s after the fixes (%s in all)", len(expect), time.Since(fixed).Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
	})
}
