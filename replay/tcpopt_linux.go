//go:build linux

package replay

import (
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// tcpUserTimeoutControl returns a net.Dialer Control func that sets the
// socket's TCP_USER_TIMEOUT (Linux: how long transmitted data may stay
// unacknowledged, or keep-alive probes unanswered, before the kernel drops
// the connection) to d, in whole milliseconds, before it connects; nil when
// d is 0 (the kernel's default).
func tcpUserTimeoutControl(d time.Duration) func(network, address string, c syscall.RawConn) error {
	if d <= 0 {
		return nil
	}
	ms := int(d / time.Millisecond)
	return func(_, address string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, ms)
		}); err != nil {
			return err
		}
		if serr != nil {
			return fmt.Errorf("set TCP_USER_TIMEOUT=%d ms on the socket to %s: %w", ms, address, serr)
		}
		return nil
	}
}

// TCPUserTimeoutApplies reports whether Config.TCPUserTimeout takes
// effect on this OS (Linux only).
const TCPUserTimeoutApplies = true
