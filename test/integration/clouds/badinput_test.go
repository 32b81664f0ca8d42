package clouds_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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
	// maxBadPasses: 4 passes are expected.
	maxBadPasses = 6
	// maxRefusedCalls bounds the API calls of an account whose every pass fails at the first call
	// (refused credentials, no zone): at most one per pass.
	maxRefusedCalls = 6
)

// account is one emulated cloud account with its own manager, so its call counters belong to one
// kind of bad input.
type account struct {
	c  *cloud.Cloud
	cl *cluster
}

// startAccount starts a manager publishing to c, in a fresh namespace with a valid Secret "provider".
func startAccount(t *testing.T, c *cloud.Cloud) *account {
	t.Helper()
	return &account{c: c, cl: startClusters(t, c, 1, dnsrecord.DefaultOptions())[0]}
}

// secret creates (or, when it exists, replaces the data of) a provider Secret of the account's cloud.
func (a *account) secret(t *testing.T, name string, data map[string]string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.cl.ns, Name: name}, Type: a.c.SecretType}
	s.Data = map[string][]byte{}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	err := a.cl.c.Get(t.Context(), client.ObjectKeyFromObject(s), &corev1.Secret{})
	switch {
	case err == nil:
		err = a.cl.c.Update(t.Context(), s)
	default:
		err = a.cl.c.Create(t.Context(), s)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// record creates a record published with the named provider Secret.
func (a *account) record(t *testing.T, name, secret, rootHost string, eps []*v1alpha1.Endpoint) {
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
func (a *account) setEndpoints(t *testing.T, name string, eps []*v1alpha1.Endpoint) {
	t.Helper()
	r := a.cl.get(t, name)
	r.Spec.Endpoints = eps
	if err := a.cl.c.Update(t.Context(), r); err != nil {
		t.Fatal(err)
	}
}

func totalCalls(calls map[string]int) int {
	n := 0
	for _, v := range calls {
		n += v
	}
	return n
}

// zoneListings counts the calls that list zones.
func zoneListings(c *cloud.Cloud) int {
	calls := c.Calls()
	return calls[route53emu.OpListHostedZones] + calls[clouddnsemu.OpListManagedZones] + calls["Zones.ListByResourceGroup"]
}

// expectation is the Ready condition a bad record must settle on.
type expectation struct {
	account *account
	record  string
	reason  string
	// contains are the parts the message must hold, in order.
	contains []string
	// hidden are values of the Secret the message must never show.
	hidden []string
}

// volatile matches what must never reach a condition: request IDs, UUIDs, timestamps, ports.
var volatile = regexp.MustCompile(`(?i)request ?id|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}|\d{2}:\d{2}:\d{2}|127\.0\.0\.1|localhost`)

// check returns "" when the record's Ready condition is as expected.
func (e expectation) check(t *testing.T) string {
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
	if m := volatile.FindString(c.Message); m != "" {
		return fmt.Sprintf("%s: message %q holds %q, which changes from call to call", e.record, c.Message, m)
	}
	return ""
}

// geoRecord is one cluster's geo tree for host with the given code in place of a valid one.
func geoRecord(c *cloud.Cloud, host, code string) []*v1alpha1.Endpoint {
	eps := lbTree(c, host, "IE", 1, true, "leaf", "10.40.0.1")
	if code != "" {
		eps[1] = eps[1].DeepCopy()
		eps[1].SetIdentifier = code
		eps[1].ProviderSpecific = nil
		eps[1].SetProviderSpecific(v1alpha1.ProviderSpecificGeoCode, code)
	}
	return eps
}

// without returns a copy of data without key.
func without(data map[string]string, key string) map[string]string {
	out := map[string]string{}
	for k, v := range data {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// with returns a copy of data with key set to value.
func with(data map[string]string, key, value string) map[string]string {
	out := without(data, key)
	out[key] = value
	return out
}

// withAzureField returns Azure Secret data whose azure.json has field set to value, or removed
// when value is nil.
func withAzureField(t *testing.T, data map[string]string, field string, value any) map[string]string {
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
	return with(data, v1alpha1.AzureJSONKey, string(raw))
}

// credentialValues are the values of a valid Secret that are credentials.
func credentialValues(t *testing.T, c *cloud.Cloud) []string {
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
		accounts := make([]*account, len(clouds))
		for i, c := range clouds {
			accounts[i] = startAccount(t, c)
		}
		unparsable, refused, geoAcc, hidden := accounts[0], accounts[1], accounts[2], accounts[3]
		valid := unparsable.c.SecretData()
		const zoneName = "bad.example.com"
		host := "app." + zoneName
		simple := func(h string) []*v1alpha1.Endpoint { return []*v1alpha1.Endpoint{a(h, 60, "10.40.0.9")} }
		var expect []expectation
		var fixes []func()
		start := time.Now()

		// 1. Secrets the backend cannot parse: no call reaches the cloud.
		type parseCase struct{ secret, key string }
		var parseCases []parseCase
		var bad map[string]map[string]string
		switch name {
		case cloud.AWS:
			bad = map[string]map[string]string{
				"missing-key": without(valid, v1alpha1.AWSSecretAccessKeyKey),
				"bad-url":     with(valid, v1alpha1.EndpointOverrideKey, "route53 emulator"),
				"bad-region":  with(valid, v1alpha1.AWSRegionKey, "Ireland"),
			}
			parseCases = []parseCase{
				{"missing-key", "key " + v1alpha1.AWSSecretAccessKeyKey + " is missing or empty"},
				{"bad-url", "key " + v1alpha1.EndpointOverrideKey + " is not an http or https URL"},
				{"bad-region", "key " + v1alpha1.AWSRegionKey + " is not a region name"},
			}
		case cloud.Google:
			bad = map[string]map[string]string{
				"missing-key": without(valid, v1alpha1.GoogleProjectIDKey),
				"bad-url":     with(valid, v1alpha1.EndpointOverrideKey, "::cloud-dns"),
				"no-key":      without(valid, v1alpha1.EndpointOverrideKey),
			}
			parseCases = []parseCase{
				{"missing-key", "key " + v1alpha1.GoogleProjectIDKey + " is missing or empty"},
				{"bad-url", "key " + v1alpha1.EndpointOverrideKey + " is not an http or https URL"},
				// Without an endpoint override the service-account key is required.
				{"no-key", "key " + v1alpha1.GoogleJSONKey + " is missing or empty"},
			}
		default:
			bad = map[string]map[string]string{
				"missing-key": withAzureField(t, valid, "aadClientSecret", nil),
				// Truncated: the decoder would quote the client secret that precedes the cut.
				"bad-json": with(valid, v1alpha1.AzureJSONKey, valid[v1alpha1.AzureJSONKey][:len(valid[v1alpha1.AzureJSONKey])-20]),
				"bad-url":  with(valid, v1alpha1.EndpointOverrideKey, "management endpoint"),
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
			expect = append(expect, expectation{
				account: unparsable, record: pc.secret, reason: dnsrecord.ReasonUnsupportedProvider,
				contains: []string{"provider secret " + unparsable.cl.ns + "/" + pc.secret, pc.key},
				hidden:   credentialValues(t, unparsable.c),
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
			wrong = with(valid, v1alpha1.AWSAccessKeyIDKey, "AKIANOTKNOWNTOTHEEMU")
			refusedParts = []string{"provider secret " + refused.cl.ns + "/wrong", v1alpha1.AWSAccessKeyIDKey, "InvalidClientTokenId"}
		case cloud.Google:
			wrong = with(valid, v1alpha1.GoogleProjectIDKey, "no-such-project")
			refusedParts = []string{"provider secret " + refused.cl.ns + "/wrong", v1alpha1.GoogleProjectIDKey, "no-such-project"}
		default:
			wrong = withAzureField(t, valid, "resourceGroup", "empty-rg")
			refusedParts = []string{"is in none of the zones [] of provider secret " + refused.cl.ns + "/wrong", "resource group empty-rg, from key " + v1alpha1.AzureJSONKey + " field resourceGroup"}
		}
		refused.secret(t, "wrong", wrong)
		refused.record(t, "wrong", "wrong", host, simple(host))
		hiddenValues := credentialValues(t, refused.c)
		if name == cloud.AWS {
			hiddenValues = append(hiddenValues, wrong[v1alpha1.AWSAccessKeyIDKey])
		}
		expect = append(expect, expectation{
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
			geoAcc.record(t, gc.record, "provider", h, geoRecord(geoAcc.c, h, gc.code))
			expect = append(expect, expectation{
				account: geoAcc, record: gc.record, reason: v1alpha1.ReasonValidationError, contains: []string{gc.message},
			})
			fixes = append(fixes, func() { geoAcc.setEndpoints(t, gc.record, geoRecord(geoAcc.c, h, "")) })
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
			expect = append(expect, expectation{
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
		passed := map[string]float64{}
		for _, e := range expect {
			passed[e.record] = passes(e.account.cl, e.record)
		}

		for _, e := range expect {
			if msg := e.check(t); msg != "" {
				t.Errorf("after %s: %s", badInputWindow, msg)
			} else if got := ready(e.account.cl.get(t, e.record)).Message; got != messages[e.record] {
				t.Errorf("%s: message changed from %q to %q", e.record, messages[e.record], got)
			}
			if n := passed[e.record]; n > maxBadPasses {
				t.Errorf("%s: %v passes in %s, want a backoff (at most %d)", e.record, n, badInputWindow, maxBadPasses)
			}
		}
		report := func(what string, acc *account) string {
			return fmt.Sprintf("%s: %s", what, cloud.FormatCalls(acc.c.Calls()))
		}
		if n := totalCalls(unparsable.c.Calls()); n != 0 {
			t.Errorf("%d API calls with Secrets that cannot be parsed, want none (%s)", n, report("calls", unparsable))
		}
		if n := totalCalls(refused.c.Calls()); n == 0 || n > maxRefusedCalls {
			t.Errorf("%d API calls in %s with a refused Secret, want 1..%d (%s)", n, badInputWindow, maxRefusedCalls, report("calls", refused))
		}
		// The zones are listed once per Secret and ZoneListMaxAge; records that cannot be
		// published read no records and write nothing.
		if n := totalCalls(geoAcc.c.Calls()); n > 2 {
			t.Errorf("%d API calls in %s for records with bad geo codes, want at most 2 zone listings (%s)", n, badInputWindow, report("calls", geoAcc))
		}
		if n := zoneListings(hidden.c); n == 0 || n > maxRefusedCalls {
			t.Errorf("%d zone listings in %s for %d records of one Secret in a zone it cannot see, want 1..%d (%s)",
				n, badInputWindow, len(hiddenRecords), maxRefusedCalls, report("calls", hidden))
		}
		for _, acc := range []*account{unparsable, refused, geoAcc, hidden} {
			if w := acc.c.Writes(); w != 0 {
				t.Errorf("%d writes for records that cannot be published (%s)", w, report("calls", acc))
			}
		}
		t.Logf("in %s: passes %v; calls: refused %s; geo %s; hidden zone %s", badInputWindow, passed,
			cloud.FormatCalls(refused.c.Calls()), cloud.FormatCalls(geoAcc.c.Calls()), cloud.FormatCalls(hidden.c.Calls()))

		// Fixing the input brings every record to Ready: no condition is sticky. A Secret (or a zone)
		// is looked at again at the record's next attempt, due within 4.5 s; a record change is acted
		// on at once.
		fixed := time.Now()
		for _, fix := range fixes {
			fix()
		}
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
