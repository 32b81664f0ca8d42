// Package k8gb is the kuadrant.io/k8gb backend: it hands each published hostname to an installed
// k8gb (https://www.k8gb.io) as one Gslb object (k8gb.io/v1beta1), which k8gb serves from its own
// CoreDNS and shares with the k8gb of every other cluster. It writes no zone: its Backend declares
// only Records (providers.RecordBackend), so the engine gives it whole DNSRecords.
//
// Per record, the Gslb references the HTTPRoute attached to the record's Gateway listener that lists
// the hostname (k8gb serves the route's hostnames, and judges health by the Services behind it),
// carries the Gateway's addresses after excludeAddresses in k8gb's exposed-ip annotation (so k8gb
// publishes what the policy says, not the Gateway's raw status), and k8gb's strategy from the
// provider Secret with the policy's loadBalancing checked against it. Its status comes back as the
// record's Ready and Healthy conditions. A Gslb this controller did not create for the record is
// never adopted, changed or deleted.
//
// The Go types of k8gb are not used: the Gslb is handled as an unstructured object with the few
// fields set here.
package k8gb

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/dnspolicy/dnspolicy-controller/apis/v1alpha1"
	"github.com/dnspolicy/dnspolicy-controller/providers"
)

// The Gslbs this backend writes, and the routes they reference.
// +kubebuilder:rbac:groups=k8gb.io,resources=gslbs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch

// ProviderName is the value of the kuadrant.io/dns-provider-name label for this backend.
const ProviderName = "k8gb"

// GslbKind is k8gb's Gslb, the only k8gb object this backend writes.
var GslbKind = schema.GroupVersionKind{Group: "k8gb.io", Version: "v1beta1", Kind: "Gslb"}

// Annotations k8gb reads on a Gslb.
const (
	// ExposedIPsAnnotation overrides the addresses k8gb publishes for the Gslb (IPv4 only).
	ExposedIPsAnnotation = "k8gb.io/exposed-ip-addresses"
	// ExposedHostnamesAnnotation makes k8gb publish the addresses the hostnames resolve to; it
	// wins over ExposedIPsAnnotation.
	ExposedHostnamesAnnotation = "k8gb.io/exposed-hostnames"
)

// Marks of the Gslbs this backend creates: a Gslb without RecordUIDLabel naming the record is not
// ours, whatever its name.
const (
	ManagedByLabel   = "app.kubernetes.io/managed-by"
	ManagedByValue   = "dnspolicy-controller"
	RecordUIDLabel   = "kuadrant.io/dnsrecord-uid"
	RecordAnnotation = "kuadrant.io/dnsrecord"
)

// The labels the DNSPolicy controller puts on the records it writes (controllers/dnspolicy): they
// name the Gateway and the listener whose route the Gslb references.
const (
	GatewayLabel  = "gateway.networking.k8s.io/gateway-name"
	ListenerLabel = "kuadrant.io/listener-name"
)

// Config tunes the backend.
type Config struct {
	// StatusPoll is how often a record is looked at again for what k8gb reports (health, hosts),
	// and for its route. k8gb itself reconciles a Gslb every 30 s by default.
	StatusPoll time.Duration
}

// DefaultConfig are the production settings.
func DefaultConfig() Config { return Config{StatusPoll: 30 * time.Second} }

// Provider hands records to k8gb as Gslbs through the cluster's API server.
type Provider struct {
	client client.Client
	opts   Options
	cfg    Config
}

var _ providers.RecordBackend = (*Provider)(nil)

// New is the providers.Constructor of kuadrant.io/k8gb Secrets, with the production settings.
func New(ctx context.Context, secret *corev1.Secret, env providers.Env) (providers.Backend, error) {
	return NewConstructor(DefaultConfig())(ctx, secret, env)
}

// NewConstructor returns the constructor with cfg; tests poll faster. The backend has no zones: it
// declares only Records.
func NewConstructor(cfg Config) providers.Constructor {
	return func(_ context.Context, secret *corev1.Secret, env providers.Env) (providers.Backend, error) {
		opts, err := ParseOptions(secret)
		if err != nil {
			return providers.Backend{}, err
		}
		if env.Client == nil {
			return providers.Backend{}, fmt.Errorf("provider secret %s/%s: the k8gb backend needs a client", secret.Namespace, secret.Name)
		}
		return providers.Backend{Records: &Provider{client: env.Client, opts: opts, cfg: cfg}}, nil
	}
}

// Name implements providers.RecordBackend.
func (p *Provider) Name() string { return ProviderName }

// EnsureRecord implements providers.RecordBackend: it creates or updates the record's Gslb and
// reads back what k8gb reports on it.
func (p *Provider) EnsureRecord(ctx context.Context, rec *v1alpha1.DNSRecord) (providers.RecordStatus, error) {
	in, err := readIntent(rec)
	if err != nil {
		return providers.RecordStatus{}, providers.NewError(providers.Permanent, err)
	}
	want, err := p.desired(ctx, rec, in)
	if err != nil {
		return providers.RecordStatus{}, err
	}
	gslb, err := p.apply(ctx, rec, want)
	if err != nil {
		return providers.RecordStatus{}, err
	}
	addresses, published := in.ipv4, v1alpha1.NewEndpoint(in.host, v1alpha1.RecordTypeA, v1alpha1.TTL(in.ttl), in.ipv4...)
	if len(in.ipv4) == 0 {
		addresses, published = in.hostnames, v1alpha1.NewEndpoint(in.host, v1alpha1.RecordTypeCNAME, v1alpha1.TTL(in.ttl), in.hostnames...)
	}
	ready, healthy := readStatus(p.opts, gslb, in.host, addresses)
	return providers.RecordStatus{
		Ready: ready, Healthy: &healthy, Endpoints: []*v1alpha1.Endpoint{published}, RecheckAfter: p.cfg.StatusPoll,
	}, nil
}

// RemoveRecord implements providers.RecordBackend: it deletes the record's Gslb if this controller
// created it for the record. With k8gb uninstalled the Gslbs went with its CRD.
func (p *Provider) RemoveRecord(ctx context.Context, rec *v1alpha1.DNSRecord) error {
	current, err := p.get(ctx, p.key(rec))
	if err != nil || current == nil {
		if errors.Is(err, errNotInstalled) {
			return nil
		}
		return err
	}
	if !ours(current, rec) {
		return nil
	}
	uid := current.GetUID()
	err = p.client.Delete(ctx, current, client.Preconditions{UID: &uid})
	if err == nil || apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil
	}
	return classify(err, "deleting "+describe(p.key(rec)))
}

// key is where a record's Gslb lives: the Secret's K8GB_NAMESPACE, else the record's namespace. In
// another namespace the name carries the record's namespace, so records of two namespaces with the
// same name do not meet.
func (p *Provider) key(rec *v1alpha1.DNSRecord) client.ObjectKey {
	if p.opts.Namespace == "" || p.opts.Namespace == rec.Namespace {
		return client.ObjectKey{Namespace: rec.Namespace, Name: rec.Name}
	}
	return client.ObjectKey{Namespace: p.opts.Namespace, Name: rec.Namespace + "-" + rec.Name}
}

// desired builds the Gslb the record asks for.
func (p *Provider) desired(ctx context.Context, rec *v1alpha1.DNSRecord, in intent) (*unstructured.Unstructured, error) {
	key := p.key(rec)
	if errs := validation.IsDNS1123Subdomain(key.Name); len(errs) > 0 {
		return nil, providers.Errorf(providers.Permanent, "the Gslb name %s is not a valid object name: %s", key.Name, strings.Join(errs, "; "))
	}
	s, err := strategy(p.opts, in)
	if err != nil {
		return nil, providers.NewError(providers.Permanent, err)
	}
	route, err := p.route(ctx, rec, in.host)
	if err != nil {
		return nil, err
	}
	g := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"resourceRef": map[string]any{
				"apiVersion": httpRouteAPIVersion, "kind": "HTTPRoute", "name": route.Name, "namespace": route.Namespace,
			},
			"strategy": s,
		},
	}}
	g.SetGroupVersionKind(GslbKind)
	g.SetNamespace(key.Namespace)
	g.SetName(key.Name)
	g.SetLabels(map[string]string{ManagedByLabel: ManagedByValue, RecordUIDLabel: string(rec.UID)})
	annotations := map[string]string{RecordAnnotation: rec.Namespace + "/" + rec.Name}
	if len(in.ipv4) > 0 {
		annotations[ExposedIPsAnnotation] = strings.Join(in.ipv4, ",")
	} else {
		annotations[ExposedHostnamesAnnotation] = strings.Join(in.hostnames, ",")
	}
	g.SetAnnotations(annotations)
	if key.Namespace == rec.Namespace {
		// The record controller deletes the Gslb before the record goes; the reference lets the
		// garbage collector do it too if the record is ever deleted without its finalizer.
		g.SetOwnerReferences([]metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "DNSRecord", Name: rec.Name, UID: rec.UID,
		}})
	}
	return g, nil
}

// route finds the HTTPRoute of the record's listener that the Gslb references.
func (p *Provider) route(ctx context.Context, rec *v1alpha1.DNSRecord, host string) (*gatewayapiv1.HTTPRoute, error) {
	gateway, listener := rec.Labels[GatewayLabel], rec.Labels[ListenerLabel]
	if gateway == "" || listener == "" {
		return nil, providers.Errorf(providers.Permanent, "DNSRecord %s/%s has no %s and %s labels: k8gb serves a hostname from the HTTPRoute attached to a Gateway listener, so the record must come from a DNSPolicy or carry both labels", rec.Namespace, rec.Name, GatewayLabel, ListenerLabel)
	}
	routes := &gatewayapiv1.HTTPRouteList{}
	if err := p.client.List(ctx, routes); err != nil {
		return nil, classify(err, "listing HTTPRoutes")
	}
	r, err := routeChoice(routes.Items, rec.Namespace, gateway, listener, host)
	if err != nil {
		// A route can be attached or edited at any time; the record is looked at again at the
		// record controller's backoff.
		return nil, providers.NewError(providers.Permanent, err)
	}
	return r, nil
}

var errNotInstalled = errors.New("k8gb is not installed")

// notInstalled is the error for an API server that does not serve Gslbs.
func notInstalled() error {
	return providers.NewError(providers.Permanent, fmt.Errorf("%w: the API server does not serve %s (CRD gslbs.k8gb.io); install k8gb in this cluster, or use another provider secret", errNotInstalled, GslbKind.GroupVersion().String()))
}

// get reads a Gslb; nil when there is none.
func (p *Provider) get(ctx context.Context, key client.ObjectKey) (*unstructured.Unstructured, error) {
	g := &unstructured.Unstructured{}
	g.SetGroupVersionKind(GslbKind)
	err := p.client.Get(ctx, key, g)
	switch {
	case err == nil:
		return g, nil
	case meta.IsNoMatchError(err) || isMissingResource(err):
		return nil, notInstalled()
	case apierrors.IsNotFound(err):
		return nil, nil
	}
	return nil, classify(err, "reading "+describe(key))
}

// isMissingResource tells a resource type the API server does not serve (its CRD was deleted while
// the client's discovery still knows it) from a missing object: only the former has no name in
// its NotFound details.
func isMissingResource(err error) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d == nil || d.Name == ""
}

// apply creates the Gslb or brings ours to what is wanted, and returns it as stored.
func (p *Provider) apply(ctx context.Context, rec *v1alpha1.DNSRecord, want *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	key := client.ObjectKeyFromObject(want)
	current, err := p.get(ctx, key)
	if err != nil {
		return nil, err
	}
	if current == nil {
		err := p.client.Create(ctx, want)
		switch {
		case err == nil:
			return want, nil
		case meta.IsNoMatchError(err) || apierrors.IsNotFound(err):
			return nil, notInstalled()
		case apierrors.IsAlreadyExists(err):
			return nil, providers.Errorf(providers.Transient, "%s was created by someone else meanwhile", describe(key))
		}
		return nil, classify(err, "creating "+describe(key))
	}
	if !ours(current, rec) {
		return nil, providers.Errorf(providers.Permanent, "%s exists and was not created by this controller for DNSRecord %s/%s; it is never adopted or changed: delete or rename it, or set %s in the provider secret to create Gslbs elsewhere", describe(key), rec.Namespace, rec.Name, v1alpha1.K8gbNamespaceKey)
	}
	updated := current.DeepCopy()
	for _, field := range []string{"resourceRef", "strategy"} {
		v, _, _ := unstructured.NestedFieldCopy(want.Object, "spec", field)
		if err := unstructured.SetNestedField(updated.Object, v, "spec", field); err != nil {
			return nil, providers.NewError(providers.Permanent, err)
		}
	}
	labels := updated.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, want.GetLabels())
	updated.SetLabels(labels)
	// The exposed-address annotations are ours to set and to drop; others' annotations stay.
	annotations := updated.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	delete(annotations, ExposedIPsAnnotation)
	delete(annotations, ExposedHostnamesAnnotation)
	maps.Copy(annotations, want.GetAnnotations())
	updated.SetAnnotations(annotations)
	updated.SetOwnerReferences(want.GetOwnerReferences())
	if equality.Semantic.DeepEqual(current.Object, updated.Object) {
		return current, nil
	}
	// The update carries the resourceVersion read: a write by k8gb meanwhile fails it, and the
	// next pass starts from what k8gb wrote.
	if err := p.client.Update(ctx, updated); err != nil {
		return nil, classify(err, "updating "+describe(key))
	}
	return updated, nil
}

// ours reports whether this controller created the Gslb for this very record.
func ours(g *unstructured.Unstructured, rec *v1alpha1.DNSRecord) bool {
	return g.GetLabels()[ManagedByLabel] == ManagedByValue && g.GetLabels()[RecordUIDLabel] == string(rec.UID)
}

func describe(key client.ObjectKey) string { return "Gslb " + key.Namespace + "/" + key.Name }

// classify sorts API errors: refused requests (forbidden, invalid) are Permanent until something
// changes, the rest Transient. Messages keep the API server's text, which names no secret.
func classify(err error, what string) error {
	kind := providers.Transient
	if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		kind = providers.Permanent
	}
	return providers.Errorf(kind, "%s: %v", what, err)
}
