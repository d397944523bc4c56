package sim

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestKeepAliveTimeout: like uvicorn under vLLM and SGLang, the simulator
// closes a connection that stayed idle for KeepAliveTimeout (5 s by
// default), and keeps it with a negative one.
func TestKeepAliveTimeout(t *testing.T) {
	if d := DefaultConfig(); d.KeepAliveTimeout != 5*time.Second {
		t.Fatalf("default keep-alive timeout %v, want uvicorn's 5s", d.KeepAliveTimeout)
	}
	for _, tc := range []struct {
		timeout time.Duration
		closed  bool
	}{{50 * time.Millisecond, true}, {-1, false}} {
		s := startSim(t, Config{ZeroLatency: true, KeepAliveTimeout: tc.timeout})
		nc, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := io.WriteString(nc, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(nc)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err = br.ReadByte()
		if closed := err == io.EOF; closed != tc.closed {
			t.Fatalf("keep-alive timeout %v: after 300 ms idle the read gave %v; want the connection closed=%v", tc.timeout, err, tc.closed)
		}
	}
}
