package replay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// pieceConn is a net.Conn whose reads return its data in pieces of at
// most step bytes (1 tests every boundary of the framing), then io.EOF.
type pieceConn struct {
	data []byte
	step int
}

func (c *pieceConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.data), c.step)
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}
func (c *pieceConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *pieceConn) Close() error                     { return nil }
func (c *pieceConn) LocalAddr() net.Addr              { return nil }
func (c *pieceConn) RemoteAddr() net.Addr             { return nil }
func (c *pieceConn) SetDeadline(time.Time) error      { return nil }
func (c *pieceConn) SetReadDeadline(time.Time) error  { return nil }
func (c *pieceConn) SetWriteDeadline(time.Time) error { return nil }

// readResponse reads one response from r: its head and its whole body.
func readResponse(r *wireReader) (respHead, []byte, bool, error) {
	var h respHead
	if err := r.readHead(&h); err != nil {
		return h, nil, false, err
	}
	var br bodyReader
	r.body(&h, &br)
	b, err := io.ReadAll(&br)
	return h, b, br.done, err
}

// TestResponseFramings reads responses in every framing the client meets,
// split at every byte, two on one connection where the first keeps it.
func TestResponseFramings(t *testing.T) {
	const next = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	cases := []struct {
		name, resp string
		status     int
		body       string
		close      bool // the connection cannot carry the next request
		ctype      string
	}{
		{name: "content-length", resp: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhello",
			status: 200, body: "hello", ctype: "application/json"},
		{name: "chunked", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream; charset=utf-8\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n",
			status: 200, body: "hello world", ctype: "text/event-stream; charset=utf-8"},
		{name: "chunked with trailers and upper-case hex", resp: "HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n",
			status: 200, body: "0123456789"},
		{name: "bare line feeds", resp: "HTTP/1.1 200 OK\nContent-Length: 3\n\nabc", status: 200, body: "abc"},
		{name: "interim 100 then the response", resp: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx",
			status: 201, body: "x"},
		{name: "no body on 204", resp: "HTTP/1.1 204 No Content\r\n\r\n", status: 204},
		{name: "error with a body", resp: "HTTP/1.1 400 Bad Request\r\nContent-Length: 17\r\n\r\n{\"error\":\"bad!\"}\n",
			status: 400, body: "{\"error\":\"bad!\"}\n"},
		{name: "connection close", resp: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nhi", status: 200, body: "hi", close: true},
		{name: "HTTP/1.0 closes by default", resp: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi", status: 200, body: "hi", close: true},
		{name: "HTTP/1.0 keep-alive", resp: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi", status: 200, body: "hi"},
		{name: "until close", resp: "HTTP/1.1 200 OK\r\n\r\nall of it", status: 200, body: "all of it", close: true},
		{name: "no reason phrase", resp: "HTTP/1.1 503\r\nContent-Length: 0\r\n\r\n", status: 503},
	}
	for _, tc := range cases {
		for _, step := range []int{1, 3, 1 << 20} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, step), func(t *testing.T) {
				data := tc.resp
				if !tc.close {
					data += next
				}
				var r wireReader
				r.reset(&pieceConn{data: []byte(data), step: step})
				h, b, done, err := readResponse(&r)
				if err != nil || !done {
					t.Fatalf("err %v, body read to its end %v", err, done)
				}
				if h.status != tc.status || string(b) != tc.body || h.close != tc.close || string(h.ctype) != tc.ctype {
					t.Fatalf("status %d body %q close %v ctype %q; want %d %q %v %q", h.status, b, h.close, h.ctype, tc.status, tc.body, tc.close, tc.ctype)
				}
				if tc.close {
					return
				}
				h, b, _, err = readResponse(&r)
				if err != nil || h.status != 200 || string(b) != "ok" {
					t.Fatalf("the next response on the connection: %d %q %v", h.status, b, err)
				}
			})
		}
	}
}

// TestResponseFramingErrors: what is not HTTP/1.1, or ends too early, is
// an error that says so; a close before any byte is told apart.
func TestResponseFramingErrors(t *testing.T) {
	cases := []struct {
		name, resp string
		want       error
		head       bool // the error comes with the head (else with the body)
	}{
		{name: "nothing", resp: "", want: errClosedBeforeResponse, head: true},
		{name: "not HTTP", resp: "SSH-2.0-OpenSSH\r\n\r\n", want: errMalformedHTTP, head: true},
		{name: "bad status", resp: "HTTP/1.1 2x0 OK\r\n\r\n", want: errMalformedHTTP, head: true},
		{name: "cut in the head", resp: "HTTP/1.1 200 OK\r\nContent-Le", want: io.ErrUnexpectedEOF, head: true},
		{name: "two lengths", resp: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", want: errMalformedHTTP, head: true},
		{name: "bad length", resp: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", want: errMalformedHTTP, head: true},
		{name: "header without a colon", resp: "HTTP/1.1 200 OK\r\nbogus\r\n\r\n", want: errMalformedHTTP, head: true},
		{name: "cut in the body", resp: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", want: io.ErrUnexpectedEOF},
		{name: "cut in a chunk", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", want: io.ErrUnexpectedEOF},
		{name: "no last chunk", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n", want: io.ErrUnexpectedEOF},
		{name: "bad chunk size", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n", want: errMalformedHTTP},
		{name: "chunk longer than its size", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n0\r\n\r\n", want: errMalformedHTTP},
		{name: "endless chunk line", resp: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + strings.Repeat("1", 20000), want: errMalformedHTTP},
		{name: "endless head", resp: "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-A: b\r\n", 20000), want: errMalformedHTTP, head: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r wireReader
			r.reset(&pieceConn{data: []byte(tc.resp), step: 7})
			var h respHead
			err := r.readHead(&h)
			if tc.head {
				if !errors.Is(err, tc.want) {
					t.Fatalf("head: err %v, want %v", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("head: %v", err)
			}
			var br bodyReader
			r.body(&h, &br)
			if _, err := io.ReadAll(&br); !errors.Is(err, tc.want) {
				t.Fatalf("body: err %v, want %v", err, tc.want)
			}
		})
	}
}

// randomResponse writes a well-formed response with a random framing,
// status and headers, and returns it with its body.
func randomResponse(rng *rand.Rand) (wire []byte, status int, body []byte) {
	status = []int{200, 200, 201, 400, 404, 429, 500, 503}[rng.IntN(8)]
	body = make([]byte, rng.IntN(1500))
	for i := range body {
		body[i] = byte(rng.IntN(256))
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	if rng.IntN(2) == 0 {
		b.WriteString("Date: Sat, 05 Dec 2026 02:58:46 GMT\r\nServer: uvicorn\r\n")
	}
	if rng.IntN(2) == 0 {
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
		b.Write(body)
		return b.Bytes(), status, body
	}
	b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
	for rest := body; len(rest) > 0; {
		n := min(len(rest), 1+rng.IntN(700))
		fmt.Fprintf(&b, "%x\r\n", n)
		b.Write(rest[:n])
		b.WriteString("\r\n")
		rest = rest[n:]
	}
	b.WriteString("0\r\n\r\n")
	return b.Bytes(), status, body
}

// TestRandomResponsesAsNetHTTP: well-formed responses of random framing,
// read back to back on one connection in random pieces, give the status
// and body net/http reads from the same bytes.
func TestRandomResponsesAsNetHTTP(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var wire []byte
		var statuses []int
		var bodies [][]byte
		for range 1 + rng.IntN(4) {
			w, s, b := randomResponse(rng)
			wire = append(wire, w...)
			statuses, bodies = append(statuses, s), append(bodies, b)
		}
		var r wireReader
		r.reset(&pieceConn{data: wire, step: 1 + rng.IntN(5000)})
		std := bufio.NewReader(bytes.NewReader(wire))
		for i := range statuses {
			h, b, _, err := readResponse(&r)
			if err != nil {
				t.Fatalf("round %d response %d: %v", round, i, err)
			}
			resp, err := http.ReadResponse(std, nil)
			if err != nil {
				t.Fatalf("round %d response %d: net/http: %v", round, i, err)
			}
			sb, _ := io.ReadAll(resp.Body)
			if h.status != statuses[i] || h.status != resp.StatusCode || !bytes.Equal(b, bodies[i]) || !bytes.Equal(b, sb) {
				t.Fatalf("round %d response %d: status %d body %d bytes; want %d, %d bytes", round, i, h.status, len(b), statuses[i], len(bodies[i]))
			}
		}
	}
}

// FuzzResponseWire holds the response reader to net/http's on arbitrary
// bytes: it never panics or reads past its limits, and where both read a
// response, the status and body are net/http's.
func FuzzResponseWire(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		w, _, _ := randomResponse(rng)
		f.Add(w, uint8(7))
	}
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\nT: 1\r\n\r\n"), uint8(1))
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"), uint8(2))
	f.Add([]byte("HTTP/1.0 200 OK\r\n\r\nbody until close"), uint8(5))
	f.Fuzz(func(t *testing.T, wire []byte, step uint8) {
		if len(wire) > 16<<10 {
			return // a larger response tests nothing new, and slows the minimizer
		}
		var r wireReader
		r.reset(&pieceConn{data: wire, step: 1 + int(step)})
		h, b, _, err := readResponse(&r)
		if len(r.buf) > maxResponseHead+readBufSize {
			t.Fatalf("read buffer grew to %d bytes", len(r.buf))
		}
		if err != nil {
			return
		}
		resp, serr := http.ReadResponse(bufio.NewReader(bytes.NewReader(wire)), nil)
		if serr != nil {
			return // net/http is stricter about headers
		}
		sb, serr := io.ReadAll(resp.Body)
		if serr != nil || resp.StatusCode != h.status {
			return
		}
		if resp.StatusCode >= 200 && !bytes.Equal(sb, b) {
			t.Fatalf("status %d: body %q, net/http reads %q", h.status, b, sb)
		}
	})
}
