package dnsserver

import (
	"syscall"

	"golang.org/x/sys/unix"
)

const reusePortSupported = true

// reusePort sets SO_REUSEPORT, so each UDP reader has its own socket on the shared port.
func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}
