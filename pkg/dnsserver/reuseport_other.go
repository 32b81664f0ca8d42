//go:build !linux

package dnsserver

import "syscall"

const reusePortSupported = false

func reusePort(_, _ string, _ syscall.RawConn) error { return nil }
