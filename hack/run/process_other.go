//go:build !linux

package main

import "syscall"

// Other systems have no parent-death signal: there, only a SIGKILL of `make run` itself can leave
// its control plane running (every other way out stops it).
func setParentDeathSignal(syscall.Signal) error { return nil }

func childProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
