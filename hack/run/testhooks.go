//go:build runtesthooks

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// Built only into the binary the lifecycle test runs: SIGUSR1 makes the controller panic in a
// goroutine of its own, as a bug in any controller would, which no deferred cleanup survives.
func init() {
	if os.Getenv(controllerKubeconfigEnv) == "" {
		return
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		<-usr1
		panic("test hook: a panic in a controller goroutine")
	}()
}
