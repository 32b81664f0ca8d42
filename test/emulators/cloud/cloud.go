// Package cloud starts the emulated clouds behind one face, so integration tests and benchmarks drive
// the real backends (aws, google, azure) through their real SDKs the same way: a Secret with working
// credentials and the emulator's endpoint, the backend registered in a factory, zones, faults, call
// counters, and each zone as the cloud holds it.
package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	azfake "github.com/Azure/azure-sdk-for-go/sdk/azcore/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
	"github.com/dnspolicy/dnspolicy-controller/providers/azure"
	"github.com/dnspolicy/dnspolicy-controller/providers/clouddns"
	"github.com/dnspolicy/dnspolicy-controller/providers/route53"
	azureemu "github.com/dnspolicy/dnspolicy-controller/test/emulators/azure"
	clouddnsemu "github.com/dnspolicy/dnspolicy-controller/test/emulators/clouddns"
	route53emu "github.com/dnspolicy/dnspolicy-controller/test/emulators/route53"
)

// The clouds, by the backends' provider names (the values of --providers).
const (
	AWS    = route53.ProviderName
	Google = clouddns.ProviderName
	Azure  = azure.ProviderName
)

// Names lists every emulated cloud.
func Names() []string { return []string{AWS, Google, Azure} }

// Credentials the emulators accept.
const (
	AccessKeyID   = "AKIAEMULATOR00000001"
	Project       = "emulated-project"
	Subscription  = "00000000-0000-0000-0000-00000000e001"
	ResourceGroup = "dns-rg"
	secretValue   = "emulated-secret-value"
	azureTenant   = "00000000-0000-0000-0000-00000000e002"
	azureClientID = "00000000-0000-0000-0000-00000000e003"
	azureLocation = "global"
)

// Cloud is one emulated cloud account with its rate limits as documented.
type Cloud struct {
	// Name is the backend's provider name.
	Name string
	// SecretType is the type of the backend's provider Secret.
	SecretType corev1.SecretType

	r53   *route53emu.Server
	gcp   *clouddnsemu.Server
	az    *azureemu.Store
	url   string
	close func()
}

// Start starts the emulator of the named cloud; Close stops it.
func Start(name string) (*Cloud, error) {
	c := &Cloud{Name: name, close: func() {}}
	var srv *http.Server
	var err error
	switch name {
	case AWS:
		c.SecretType = v1alpha1.SecretTypeAWS
		c.r53 = route53emu.New(route53emu.Options{AccessKeys: []string{AccessKeyID}})
		srv, c.url, err = c.r53.Listen("127.0.0.1:0")
	case Google:
		c.SecretType = v1alpha1.SecretTypeGCP
		c.gcp = clouddnsemu.New(clouddnsemu.Options{Project: Project})
		srv, c.url, err = c.gcp.Listen("127.0.0.1:0")
	case Azure:
		// The SDK's fake servers answer in process: there is no port.
		c.SecretType = v1alpha1.SecretTypeAzure
		c.az = azureemu.NewStore(Subscription)
	default:
		return nil, fmt.Errorf("no emulator for cloud %q (have %s)", name, strings.Join(Names(), ", "))
	}
	if err != nil {
		return nil, err
	}
	if srv != nil {
		c.close = func() { _ = srv.Close() }
	}
	return c, nil
}

// Close stops the emulator.
func (c *Cloud) Close() { c.close() }

// SecretData are the keys of a provider Secret that reaches this emulator with valid credentials.
func (c *Cloud) SecretData() map[string]string {
	switch c.Name {
	case AWS:
		return map[string]string{
			v1alpha1.AWSAccessKeyIDKey:     AccessKeyID,
			v1alpha1.AWSSecretAccessKeyKey: secretValue,
			v1alpha1.EndpointOverrideKey:   c.url,
		}
	case Google:
		return map[string]string{
			v1alpha1.GoogleProjectIDKey:  Project,
			v1alpha1.EndpointOverrideKey: c.url,
		}
	default:
		cfg, _ := json.Marshal(map[string]string{
			"tenantId": azureTenant, "subscriptionId": Subscription, "resourceGroup": ResourceGroup,
			"aadClientId": azureClientID, "aadClientSecret": secretValue, "location": azureLocation,
		})
		return map[string]string{v1alpha1.AzureJSONKey: string(cfg)}
	}
}

// Secret returns a provider Secret (not yet created) holding SecretData.
func (c *Cloud) Secret(namespace, name string) *corev1.Secret {
	data := map[string][]byte{}
	for k, v := range c.SecretData() {
		data[k] = []byte(v)
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Type: c.SecretType, Data: data}
}

// Constructor is the backend's constructor as the binary registers it, except that Azure's SDK
// clients reach the emulator through its fake-server transport and a fake token credential.
func (c *Cloud) Constructor() providers.Constructor {
	switch c.Name {
	case AWS:
		return route53.New
	case Google:
		return clouddns.New
	default:
		return azure.NewConstructor(
			azure.WithClientOptions(arm.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: c.az.Transport()}}),
			azure.WithCredential(&azfake.TokenCredential{}),
		)
	}
}

// Register adds the backend to f, and lets its Secrets point at the emulator (ENDPOINT_URL), as the
// controller's --allow-provider-endpoint-override does.
func (c *Cloud) Register(f *providers.Factory) {
	f.Register(c.SecretType, c.Constructor())
	f.AllowEndpointOverride(true)
}

// AddZone creates a zone the Secret's credentials see.
func (c *Cloud) AddZone(dnsName string) {
	switch c.Name {
	case AWS:
		c.r53.AddZone(dnsName)
	case Google:
		c.gcp.AddZone(dnsName)
	default:
		c.az.AddZone(ResourceGroup, dnsName)
	}
}

// AddHiddenZone creates a zone in the same cloud that the Secret's credentials cannot see (another
// project or resource group; Route 53 has no such scoping, so it is not created at all there).
func (c *Cloud) AddHiddenZone(dnsName string) {
	if c.Name == Azure {
		c.az.AddZone("other-rg", dnsName)
	}
}

// AddEmptyScope creates, on Azure, an empty resource group (listing the zones of one that does not
// exist fails with 404); the other clouds have no such scope to create.
func (c *Cloud) AddEmptyScope(name string) {
	if c.Name == Azure {
		c.az.AddResourceGroup(name)
	}
}

// Dump returns the zone as the cloud holds it, one line per record set in the cloud's own terms
// (weighted and geo sets, routing policies, Traffic Manager profiles), without counting a call.
func (c *Cloud) Dump(dnsName string) []string {
	switch c.Name {
	case AWS:
		return c.r53.Dump(dnsName)
	case Google:
		return c.gcp.Dump(dnsName)
	default:
		return c.az.Dump(ResourceGroup, dnsName)
	}
}

// Calls returns the API calls received per operation, failed and throttled ones included (Azure
// also counts injected faults as "Faults" and "Faults.<kind>").
func (c *Cloud) Calls() map[string]int {
	switch c.Name {
	case AWS:
		return c.r53.Calls()
	case Google:
		return c.gcp.Calls()
	default:
		return c.az.Calls()
	}
}

// WriteOperations are the operations that change a zone, per cloud.
func WriteOperations(name string) []string {
	switch name {
	case AWS:
		return []string{route53emu.OpChangeResourceRecordSets}
	case Google:
		return []string{clouddnsemu.OpCreateChange}
	default:
		return []string{"RecordSets.CreateOrUpdate", "RecordSets.Delete", "Profiles.CreateOrUpdate", "Profiles.Delete"}
	}
}

// Writes counts the calls that change a zone.
func (c *Cloud) Writes() int {
	calls := c.Calls()
	n := 0
	for _, op := range WriteOperations(c.Name) {
		n += calls[op]
	}
	return n
}

// FormatCalls renders calls as "op=n, ..." sorted by operation.
func FormatCalls(calls map[string]int) string {
	ops := make([]string, 0, len(calls))
	for op := range calls {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s=%d", op, calls[op])
	}
	return strings.Join(parts, ", ")
}

// SetFaults makes rate of all requests fail, spread evenly over throttling, server errors and
// timeouts (a request held 2 s, then failed or cut off); seed makes the sequence repeatable where
// the emulator allows. Rate 0 stops them.
func (c *Cloud) SetFaults(rate float64, seed uint64) {
	switch c.Name {
	case AWS:
		c.r53.SetFaults(route53emu.Faults{ThrottleRate: rate / 3, ServerErrorRate: rate / 3, TimeoutRate: rate / 3, Seed: seed})
	case Google:
		var kinds []string
		if rate > 0 {
			kinds = []string{clouddnsemu.FaultThrottle, clouddnsemu.FaultServerError, clouddnsemu.FaultTimeout}
		}
		c.gcp.SetFaults(clouddnsemu.Faults{Rate: rate, Kinds: kinds})
	default:
		c.az.SetFaults(rate, seed, azureemu.FaultThrottle, azureemu.FaultServerError, azureemu.FaultTimeout)
	}
}

// Injected returns the faults injected so far, by kind: "throttle", "5xx", "timeout" (and "drop"
// where the emulator drops connections). A test reads it to know its faults happened.
func (c *Cloud) Injected() map[string]int {
	out := map[string]int{}
	switch c.Name {
	case AWS:
		for kind, n := range c.r53.Injected() {
			if kind == "error" {
				kind = "5xx"
			}
			out[kind] += n
		}
	case Google:
		for kind, n := range c.gcp.Injected() {
			out[kind] += n
		}
	default:
		for op, n := range c.az.Calls() {
			if kind, ok := strings.CutPrefix(op, "Faults."); ok {
				out[kind] += n
			}
		}
	}
	return out
}

// ThrottleNext answers the next n requests with the cloud's throttling error, as a burst of other
// clients of the account would; it reports false where the emulator has no such burst (only the
// Route 53 emulator has one).
func (c *Cloud) ThrottleNext(n int) bool {
	if c.Name != AWS {
		return false
	}
	c.r53.ThrottleNext(n)
	return true
}

// ReadBack reads the zone through the backend, as the controllers do, and returns its endpoints.
func (c *Cloud) ReadBack(ctx context.Context, dnsName string) ([]*v1alpha1.Endpoint, error) {
	b, err := c.Constructor()(ctx, c.Secret("default", "read-back"), providers.Env{Namespace: "default"})
	if err != nil {
		return nil, err
	}
	p := b.Zones
	zones, err := p.Zones(ctx)
	if err != nil {
		return nil, err
	}
	for _, z := range zones {
		if z.DNSName == strings.ToLower(strings.TrimSuffix(dnsName, ".")) {
			read, err := p.Records(ctx, z)
			return read.Endpoints, err
		}
	}
	return nil, fmt.Errorf("%s: zone %s not listed", c.Name, dnsName)
}
