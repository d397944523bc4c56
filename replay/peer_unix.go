//go:build unix

package replay

import (
	"errors"
	"net"
	"syscall"
)

// peerClosed reports whether the server closed (or reset) the idle
// connection c, or sent on it what no request asked for: a non-blocking
// peek at its socket finds the end of the stream, an error, or bytes. It
// neither waits nor consumes anything.
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	var buf [1]byte
	closed := false
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// Nothing to read (EAGAIN) is an open, idle connection. Anything
		// else is not: the end of the stream (0 bytes), bytes nobody asked
		// for (a TLS close_notify, a stray response), or an error.
		closed = !errors.Is(err, syscall.EAGAIN) && !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR)
		return true
	})
	return closed || err != nil
}
