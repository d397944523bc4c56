//go:build !linux

package replay

import (
	"syscall"
	"time"
)

// tcpUserTimeoutControl is nil off Linux: TCP_USER_TIMEOUT is a Linux
// socket option, so Config.TCPUserTimeout has no effect here (see
// docs/replay.md, "Connections").
func tcpUserTimeoutControl(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}

// TCPUserTimeoutApplies reports whether Config.TCPUserTimeout takes
// effect on this OS (Linux only).
const TCPUserTimeoutApplies = false
