package replay

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentperf/agentperf/metrics"
)

// maxErrorBody bounds how much of an error response body is kept.
const maxErrorBody = 64 << 10

// conn is the HTTP side of one slot: a single keep-alive HTTP/1.1
// connection (TLS for https) that the lane can abort from another
// goroutine (cancellation closes the socket, which unblocks any read or
// write). It writes each request with one write call (a message list
// larger than streamBodyAbove is rendered into the socket through a
// buffer) and reads the response with its own framing (httpwire.go),
// one request at a time.
type conn struct {
	addr    string // host:port to dial
	isTLS   bool
	tlsConf *tls.Config
	dialer  net.Dialer
	// timeout bounds an exchange from its write to its last byte (0: no
	// bound); see refreshDeadline.
	timeout time.Duration

	mu      sync.Mutex // guards nc's replacement and aborted
	nc      net.Conn   // the live connection, nil before the first dial or after a close
	raw     net.Conn   // nc's TCP connection (nc itself, or under TLS the one beneath)
	aborted bool
	// lastStart is when the connection's last request started.
	lastStart time.Time
	// deadline is the deadline set on nc.
	deadline time.Time

	// prefix is the request line and the headers every request carries;
	// out is the request being written.
	prefix    []byte
	prepared  bool
	out       []byte
	reqHeader reqHeader
	wr        wireReader
	head      respHead
	br        bodyReader
	lines     lineReader
	shape     eventShape
	body      []byte // a non-streaming response body
	liveText  []byte
	scratch   [2 << 10]byte // where the rest of an unread body is drained
	// streamed counts the run's streamed tokens as their chunks arrive
	// (Progress.StreamedTokens); nil counts nothing.
	streamed *atomic.Int64
}

func newConn(c *runConfig, timeout time.Duration) (*conn, error) {
	u, err := url.Parse(c.URL)
	if err != nil {
		return nil, fieldErr("URL", err)
	}
	isTLS := u.Scheme == "https"
	addr := u.Host
	if u.Port() == "" {
		if isTLS {
			addr += ":443"
		} else {
			addr += ":80"
		}
	}
	return &conn{
		addr:     addr,
		isTLS:    isTLS,
		tlsConf:  &tls.Config{InsecureSkipVerify: c.Insecure, ServerName: u.Hostname()},
		dialer:   net.Dialer{Timeout: c.ConnectTimeout, KeepAlive: 30 * time.Second, Control: tcpUserTimeoutControl(c.TCPUserTimeout)},
		timeout:  timeout,
		streamed: streamedCounter(c),
	}, nil
}

// streamedCounter is the counter of Progress.StreamedTokens (nil without
// a Progress).
func streamedCounter(c *runConfig) *atomic.Int64 {
	if c.Progress == nil {
		return nil
	}
	return &c.Progress.streamed
}

// maxFullBody bounds a non-streaming response body.
const maxFullBody = 256 << 20

// prepare builds the part of every request that does not change: the
// request line, Host, Content-Type, Accept, Authorization and the
// --header headers (sorted; one of them named like a built-in header
// replaces it). The per-request headers and Content-Length follow it.
func (k *conn) prepare(c *runConfig) {
	u, err := url.Parse(strings.TrimRight(c.URL, "/") + c.Endpoint)
	target, host := "/", ""
	if err == nil {
		target, host = u.RequestURI(), u.Host
	}
	type hdr struct{ name, value string }
	hs := []hdr{{"Host", host}, {"Content-Type", "application/json"}}
	if c.Streaming {
		hs = append(hs, hdr{"Accept", "text/event-stream"})
	}
	if c.APIKey != "" {
		hs = append(hs, hdr{"Authorization", "Bearer " + c.APIKey})
	}
	for _, name := range sortedKeys(c.Headers) {
		h := hdr{textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(name)), strings.TrimSpace(c.Headers[name])}
		if i := slices.IndexFunc(hs, func(o hdr) bool { return o.name == h.name }); i >= 0 {
			hs[i] = h
			continue
		}
		hs = append(hs, h)
	}
	b := append(k.prefix[:0], "POST "...)
	b = append(b, target...)
	b = append(b, " HTTP/1.1\r\n"...)
	for _, h := range hs {
		b = append(b, h.name...)
		b = append(b, ": "...)
		b = append(b, h.value...)
		b = append(b, "\r\n"...)
	}
	k.prefix = b
	k.prepared = true
}

// framingHeaders are the headers the client writes from the request
// itself; a --header cannot set them.
var framingHeaders = []string{"Content-Length", "Transfer-Encoding", "Connection", "Te", "Trailer", "Upgrade"}

// validateHeaders checks the extra request headers: a name is an HTTP
// token, a value has no line break or NUL (either would end the header
// early and smuggle in another), and the framing headers are the client's.
func validateHeaders(h map[string]string) error {
	for _, name := range sortedKeys(h) {
		n := strings.TrimSpace(name)
		if n == "" || strings.IndexFunc(n, func(r rune) bool { return r > 0x7e || !isTokenByte(byte(r)) }) >= 0 {
			return fmt.Errorf("header name %q is not an HTTP token (letters, digits and !#$%%&'*+-.^_`|~)", name)
		}
		if strings.ContainsAny(h[name], "\r\n\x00") {
			return fmt.Errorf("header %s: the value %q holds a line break or NUL", n, h[name])
		}
		if slices.Contains(framingHeaders, textproto.CanonicalMIMEHeaderKey(n)) {
			return fmt.Errorf("header %s is set by the client from each request's body; it cannot be given", n)
		}
	}
	return nil
}

// isTokenByte reports whether c may appear in an HTTP token (RFC 9110).
func isTokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// reqHeader appends the per-request header lines of one request.
type reqHeader struct{ b []byte }

// Set appends the header name: value. The values set per request are ids
// agentperf makes (no line breaks).
func (h *reqHeader) Set(name, value string) {
	h.b = append(h.b, name...)
	h.b = append(h.b, ": "...)
	h.b = append(h.b, value...)
	h.b = append(h.b, "\r\n"...)
}

var errAborted = errors.New("request cancelled")

// abort closes the slot's connection so an in-flight request fails at once
// and no later request starts.
func (k *conn) abort() {
	k.mu.Lock()
	k.aborted = true
	if k.nc != nil {
		k.nc.Close()
	}
	k.mu.Unlock()
}

func (k *conn) isAborted() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.aborted
}

// close aborts the connection and drops the buffers.
func (k *conn) close() {
	k.abort()
	k.prepared = false
	k.prefix, k.out = nil, nil
	k.wr = wireReader{}
	k.lines = lineReader{}
	k.body = nil
	k.liveText = nil
}

// connect returns the live connection, dialling a new one when there is
// none.
//
// A connection that was idle for idleProbeAfter or more is first checked
// (peerClosed): servers close keep-alive connections that stay idle
// (uvicorn, which vLLM and SGLang run on, after 5 s), and a lane's think
// time is often longer. A request written to such a connection would fail
// as a reset although the server is fine; it goes out on a new connection
// instead. (A close that lands between the check and the write is not
// caught: the window is a few microseconds.)
func (k *conn) connect(now time.Time) (net.Conn, error) {
	k.mu.Lock()
	nc, aborted := k.nc, k.aborted
	k.mu.Unlock()
	if aborted {
		return nil, errAborted
	}
	if nc != nil {
		if now.Sub(k.lastStart) < idleProbeAfter || !peerClosed(k.raw) {
			return nc, nil
		}
		k.drop()
	}
	raw, err := k.dialer.Dial("tcp", k.addr)
	if err != nil {
		return nil, err
	}
	nc = raw
	if k.isTLS {
		nc = tls.Client(raw, k.tlsConf)
	}
	k.mu.Lock()
	if k.aborted {
		k.mu.Unlock()
		nc.Close()
		return nil, errAborted
	}
	k.nc, k.raw = nc, raw
	k.mu.Unlock()
	k.deadline = time.Time{}
	k.wr.reset(nc)
	return nc, nil
}

// idleProbeAfter is how long a connection may have been idle (counted from
// the start of its last request) before connect checks that the server
// has not closed it. Requests sent back to back are not checked.
const idleProbeAfter = 10 * time.Millisecond

// drop closes the live connection after an exchange that leaves it
// unusable (an error, a body not read to its end, Connection: close).
func (k *conn) drop() {
	k.mu.Lock()
	if k.nc != nil {
		k.nc.Close()
		k.nc, k.raw = nil, nil
	}
	k.mu.Unlock()
}

// refreshDeadline makes the connection's deadline at least now + timeout
// minus a slack of timeout/64 (at most a second): setting a deadline
// costs a runtime timer update, so a connection that carries many
// requests a second moves it once a second, not per request. An exchange
// therefore fails as a timeout after between timeout − slack and timeout.
func (k *conn) refreshDeadline(nc net.Conn, now time.Time) error {
	if k.timeout <= 0 {
		return nil
	}
	want := now.Add(k.timeout)
	if want.Sub(k.deadline) <= min(k.timeout/64, time.Second) {
		return nil
	}
	k.deadline = want
	return nc.SetDeadline(want)
}

// exchange is the outcome of one HTTP exchange.
type exchange struct {
	ackNs, firstNs, secondNs, firstOutputNs, lastNs, endNs int64
	chunks                                                 int
	hasUsage                                               bool // usage is the last usage object received
	usage                                                  metrics.Usage
	errBody                                                []byte // error body or stream error event, for classification
	err                                                    *metrics.Error
	fallback                                               bool // encoding/json decoded the body or an event
}

// recordUsage returns the usage for a metrics.Record (a copy the record
// owns), or nil when the response carried none.
func (x *exchange) recordUsage() *metrics.Usage {
	if !x.hasUsage {
		return nil
	}
	u := x.usage
	return &u
}

// do sends body (or sb, when not nil: a large body written as it is
// rendered, streamBody) and consumes the response, timing every content
// chunk with now. hdr sets the per-request headers. text, when non-nil,
// collects the reply's content (live mode).
//
// A streaming request's body is read as it arrives; a non-streaming one
// is read whole before its acknowledgement time is taken (its first byte
// is its last anyway). Nothing on this path allocates once the slot's
// buffers have grown to the largest response (TestClientPathAllocs).
func (k *conn) do(c *runConfig, body []byte, sb *streamBody, hdr func(*reqHeader), now func() int64, text *[]byte) (x exchange) {
	if !k.prepared {
		k.prepare(c)
	}
	k.appendRequest(body, sb, hdr)
	if err := k.roundTrip(sb); err != nil {
		x.ackNs = now()
		x.endNs = x.ackNs
		k.drop()
		x.err = k.transportError(err, "before response headers")
		return x
	}
	resp := &k.head
	k.wr.body(resp, &k.br)
	if !c.Streaming {
		// The whole body, then the acknowledgement: a non-streaming
		// response's first byte is its last.
		var err error
		k.body, err = readAllInto(k.body[:0], &k.br, maxFullBody)
		x.ackNs = now()
		if err != nil {
			x.endNs = x.ackNs
			k.drop()
			x.err = k.transportError(err, "while reading the response body")
			return x
		}
	} else {
		x.ackNs = now()
	}
	defer k.finish()
	if resp.status >= 400 {
		k.readErrorResponse(c.Streaming, now, &x)
		return x
	}
	if c.Streaming && bytes.HasPrefix(resp.ctype, []byte("text/event-stream")) {
		k.readSSE(&k.br, now, text, &x)
		return x
	}
	// Non-streaming (or a server that ignored stream:true).
	if c.Streaming {
		var err error
		k.body, err = readAllInto(k.body[:0], &k.br, maxFullBody)
		if err != nil {
			x.endNs = now()
			x.err = k.transportError(err, "while reading the response body")
			return x
		}
	}
	x.endNs = now()
	k.parseFullBody(text, &x)
	return x
}

// appendRequest renders the request into k.out: the prepared prefix, the
// per-request headers hdr sets, Content-Length, and body (unless sb, the
// streamed body, is written after it).
func (k *conn) appendRequest(body []byte, sb *streamBody, hdr func(*reqHeader)) {
	h := &k.reqHeader // a field: a local would escape through hdr
	h.b = append(k.out[:0], k.prefix...)
	hdr(h)
	size := len(body)
	if sb != nil {
		size = sb.Len()
	}
	h.b = append(h.b, "Content-Length: "...)
	h.b = strconv.AppendInt(h.b, int64(size), 10)
	h.b = append(h.b, "\r\n\r\n"...)
	if sb == nil {
		h.b = append(h.b, body...)
	}
	k.out = h.b
}

// roundTrip writes k.out (and sb) on a live connection and reads the
// response head into k.head.
func (k *conn) roundTrip(sb *streamBody) error {
	start := time.Now()
	nc, err := k.connect(start)
	if err == nil {
		err = k.refreshDeadline(nc, start)
	}
	// After connect: its idle check reads the previous request's start.
	k.lastStart = start
	if err == nil {
		err = k.write(nc, sb)
	}
	if err == nil {
		err = k.wr.readHead(&k.head)
	}
	return err
}

// readErrorResponse reads the body of an error status (at most
// maxErrorBody of it) into x as the request's error.
func (k *conn) readErrorResponse(streaming bool, now func() int64, x *exchange) {
	var b []byte
	var rerr error
	if streaming {
		b, rerr = io.ReadAll(io.LimitReader(&k.br, maxErrorBody))
	} else {
		b = append([]byte(nil), truncateBytes(k.body, maxErrorBody)...)
	}
	x.endNs = now()
	x.errBody = b
	msg := errorMessage(b)
	if rerr != nil && len(b) == 0 {
		msg = rerr.Error()
	}
	status := k.head.status
	x.err = &metrics.Error{Code: status, Type: reasonPhrase(status), Message: msg, Category: metrics.CategoryHTTP, ServerType: serverErrorType(b)}
}

// parseFullBody reads the whole response body k.body (a success status)
// into x: its content, timed at x.endNs as one chunk, and its usage; or
// the server's error object, or what made it malformed.
func (k *conn) parseFullBody(text *[]byte, x *exchange) {
	b := k.body
	r, perr := parseFullResponse(b, text)
	x.fallback = r.fallback
	if perr != nil {
		x.errBody = append([]byte(nil), b...)
		if errors.Is(perr, errErrorObject) {
			// A 200 whose body is the server's error object: what it
			// says, as an error event in a stream (its code, its type).
			x.err = &metrics.Error{Type: "ErrorResponse", Message: errorMessage(b), Category: metrics.CategoryStreamError, ServerType: serverErrorType(b)}
			if code := streamErrorCode(b); code != 0 {
				x.err.Code = code
			}
			return
		}
		// No code: the status was a success; the body is what failed (the
		// same rule as a malformed SSE event).
		x.err = &metrics.Error{Type: "MalformedResponse", Message: perr.Error(), Category: metrics.CategoryMalformed}
		return
	}
	if r.content || r.reasoning {
		x.firstNs, x.lastNs, x.chunks = x.endNs, x.endNs, 1
		if r.content {
			x.firstOutputNs = x.endNs
		}
	}
	x.hasUsage, x.usage = r.hasUsage, r.usage
}

// write writes the request: k.out whole (the body in it), or k.out as the
// head of sb, rendered into the socket through a buffer.
func (k *conn) write(nc net.Conn, sb *streamBody) error {
	if sb == nil {
		_, err := nc.Write(k.out)
		return err
	}
	w := bufio.NewWriterSize(nc, 64<<10) // a large body: one buffer per request is noise beside it
	if _, err := w.Write(k.out); err != nil {
		return err
	}
	if _, err := sb.WriteTo(w); err != nil {
		return err
	}
	return w.Flush()
}

// finish ends an exchange whose head was read: a connection whose body
// was not read to its end, that the server closes, or that holds bytes
// past the response, cannot carry the next request.
func (k *conn) finish() {
	if !k.br.done && !k.br.drain(k.scratch[:], maxErrorBody) {
		k.drop()
		return
	}
	if k.head.close || len(k.wr.buffered()) > 0 {
		k.drop()
	}
}

// readAllInto appends r to dst until EOF, reading at most limit bytes
// (more is an error).
func readAllInto(dst []byte, r io.Reader, limit int) ([]byte, error) {
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return dst, fmt.Errorf("response body larger than %d bytes", limit)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

func truncateBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

func (k *conn) readSSE(stream io.Reader, now func() int64, text *[]byte, x *exchange) {
	lr := &k.lines
	lr.reset(stream)
	k.shape.reset()
	sawDone := false
	for {
		line, err := lr.next()
		if err != nil {
			x.endNs = now()
			if errors.Is(err, io.EOF) {
				if !sawDone && x.err == nil {
					x.err = &metrics.Error{Type: "IncompleteStream", Category: metrics.CategoryTransport,
						Message: fmt.Sprintf("stream ended without data: [DONE] after %d content chunks", x.chunks)}
				}
				return
			}
			if errors.Is(err, errMalformed) {
				x.err = &metrics.Error{Type: "MalformedResponse", Message: err.Error(), Category: metrics.CategoryMalformed}
				return
			}
			x.err = k.transportError(err, fmt.Sprintf("mid-stream after %d content chunks", x.chunks))
			return
		}
		ev, ok, perr := k.shape.parse(line, text)
		if !ok {
			continue
		}
		x.fallback = x.fallback || ev.Fallback
		t := now()
		if perr != nil {
			// Keep reading to the end so the connection stays reusable, but
			// the request is a failure.
			if x.err == nil {
				x.err = &metrics.Error{Type: "MalformedResponse", Message: perr.Error(), Category: metrics.CategoryMalformed}
			}
			continue
		}
		if ev.ErrorMessage != nil {
			if x.err == nil {
				x.errBody = append([]byte(nil), ev.ErrorMessage...)
				x.err = &metrics.Error{Type: "StreamError", Message: errorMessage(ev.ErrorMessage), Category: metrics.CategoryStreamError, ServerType: serverErrorType(ev.ErrorMessage)}
				if code := streamErrorCode(ev.ErrorMessage); code != 0 {
					x.err.Code = code
				}
			}
			continue
		}
		if ev.Done {
			sawDone = true
			continue
		}
		if ev.Content || ev.Reasoning {
			x.chunks++
			if k.streamed != nil {
				k.streamed.Add(1)
			}
			switch x.chunks {
			case 1:
				x.firstNs = t
			case 2:
				x.secondNs = t
			}
			if ev.Content && x.firstOutputNs == 0 {
				x.firstOutputNs = t
			}
			x.lastNs = t
		}
		if ev.HasUsage {
			x.hasUsage, x.usage = true, ev.Usage
		}
	}
}

// transportError describes a failure below HTTP, or a cancellation.
func (k *conn) transportError(err error, where string) *metrics.Error {
	if k.isAborted() {
		return &metrics.Error{Type: "RequestCancellationError", Message: "request cancelled " + where, Category: metrics.CategoryCancelled}
	}
	cat, typ, what := metrics.CategoryTransport, "TransportError", "transport error"
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		cat, typ, what = metrics.CategoryTimeout, "Timeout", "timeout"
	case errors.Is(err, errClosedBeforeResponse), isReset(err), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		typ, what = "ConnectionReset", "connection reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		typ, what = "ConnectionRefused", "connection refused"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		cat, typ, what = metrics.CategoryTimeout, "Timeout", "timeout"
	}
	return &metrics.Error{Type: typ, Message: fmt.Sprintf("%s %s: %s", what, where, err.Error()), Category: cat}
}

// isReset reports whether err is a connection reset by the peer (or a
// write to a connection it closed).
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func reasonPhrase(code int) string {
	if s := http.StatusText(code); s != "" {
		return s
	}
	return fmt.Sprintf("HTTP %d", code)
}

// streamErrorCode returns error.code from a stream error event when it is a
// number.
func streamErrorCode(b []byte) int {
	i := bytes.Index(b, []byte(`"code":`))
	if i < 0 {
		return 0
	}
	rest := bytes.TrimLeft(b[i+7:], " ")
	n := 0
	for _, c := range rest {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
		if n > 999 {
			return 0
		}
	}
	return n
}
