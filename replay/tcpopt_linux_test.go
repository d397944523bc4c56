//go:build linux

package replay

import (
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestTCPUserTimeoutOnSocket reads TCP_USER_TIMEOUT back from the socket
// of a connection the client dialled: Config.TCPUserTimeout in whole
// milliseconds, and the kernel's default (0) when the field is zero.
func TestTCPUserTimeoutOnSocket(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, tc := range []struct {
		set    time.Duration
		wantMs int
	}{
		{900 * time.Second, 900000},
		{DefaultTCPUserTimeout, 30000},
		{1500 * time.Microsecond, 1},
		{0, 0},
	} {
		c := (&Config{URL: "http://" + ln.Addr().String(), Endpoint: "/v1/chat/completions",
			ConnectTimeout: 5 * time.Second, TCPUserTimeout: tc.set}).normalize()
		k, err := newConn(c, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.connect(time.Now()); err != nil {
			t.Fatal(err)
		}
		sc, ok := k.raw.(syscall.Conn)
		if !ok {
			t.Fatalf("%T is not a syscall.Conn", k.raw)
		}
		rc, err := sc.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var got int
		var gerr error
		if err := rc.Control(func(fd uintptr) {
			got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
		}); err != nil || gerr != nil {
			t.Fatal(err, gerr)
		}
		k.close()
		if got != tc.wantMs {
			t.Errorf("TCPUserTimeout %v: the socket's TCP_USER_TIMEOUT is %d ms, want %d", tc.set, got, tc.wantMs)
		}
	}
}
