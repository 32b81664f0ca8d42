package dnsserver

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/dnspolicy/dnspolicy-controller/pkg/dnsserver"
	"github.com/dnspolicy/dnspolicy-controller/pkg/peers"
)

// pullers run a peer pool on every replica, leader or not.
type pullers struct{ *peers.Pool }

var _ manager.LeaderElectionRunnable = pullers{}

func (pullers) NeedLeaderElection() bool { return false }

func (p pullers) Start(ctx context.Context) error { return p.Run(ctx) }

// server runs the DNS server for as long as the manager runs.
type server struct {
	*dnsserver.Server
	log logr.Logger
}

var _ manager.LeaderElectionRunnable = (*server)(nil)

func (s *server) NeedLeaderElection() bool { return false }

func (s *server) Start(ctx context.Context) error {
	if err := s.Server.Start(); err != nil {
		return fmt.Errorf("starting the DNS server: %w", err)
	}
	s.log.Info("DNS server listening", "address", s.Addr().String())
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Shutdown(shutdown)
}
