// Package testenv starts real control planes (kube-apiserver + etcd via envtest) for integration
// tests, with our CRDs and the Gateway API standard CRDs installed (see hack/controlplane).
package testenv

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/dnspolicy/dnspolicy-controller/apis"
	"github.com/dnspolicy/dnspolicy-controller/hack/controlplane"
)

// Options select what a control plane starts with.
type Options = controlplane.Options

// Scheme knows core types, Gateway API v1 and our APIs.
func Scheme() *runtime.Scheme { return apis.Scheme() }

// Env is one running control plane.
type Env struct {
	Config *rest.Config
	Client client.Client
	env    *envtest.Environment
}

// Start starts a control plane with our CRDs (and, unless told otherwise, the Gateway API CRDs).
func Start(opts Options) (*Env, error) {
	e, err := controlplane.New(opts)
	if err != nil {
		return nil, err
	}
	cfg, err := e.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: e.Scheme})
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, env: e}, nil
}

// Stop stops the control plane.
func (e *Env) Stop() error { return e.env.Stop() }
