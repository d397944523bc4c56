package replay

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/agentperf/agentperf/metrics"
)

// maxErrorBody bounds how much of an error response body is kept.
const maxErrorBody = 64 << 10

// conn is the HTTP side of one lane: a fasthttp HostClient with a single
// keep-alive connection that the lane can abort from another goroutine
// (cancellation closes the socket, which unblocks any read).
type conn struct {
	hc       *fasthttp.HostClient
	uri      string
	host     string
	mu       sync.Mutex
	cur      net.Conn
	aborted  bool
	req      *fasthttp.Request
	resp     *fasthttp.Response
	lines    lineReader
	body     []byte // a response body read from a stream (a server that ignored stream:true)
	liveText []byte
	prepared bool // req holds the per-connection part of every request
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
	k := &conn{host: u.Host}
	k.uri = strings.TrimRight(c.URL, "/") + c.Endpoint
	dialer := &net.Dialer{Timeout: c.ConnectTimeout, KeepAlive: 30 * time.Second}
	k.hc = &fasthttp.HostClient{
		Addr:                          addr,
		IsTLS:                         isTLS,
		TLSConfig:                     &tls.Config{InsecureSkipVerify: c.Insecure, ServerName: u.Hostname()},
		MaxConns:                      1,
		ReadTimeout:                   timeout,
		WriteTimeout:                  timeout,
		MaxIdleConnDuration:           5 * time.Minute,
		StreamResponseBody:            false, // per request: resp.StreamBody = c.Streaming
		NoDefaultUserAgentHeader:      true,
		DisableHeaderNamesNormalizing: false,
		MaxResponseBodySize:           maxFullBody, // non-streaming bodies are read by fasthttp; streams are not limited
		ReadBufferSize:                16 << 10,
		Dial: func(a string) (net.Conn, error) {
			nc, err := dialer.Dial("tcp", a)
			if err != nil {
				return nil, err
			}
			k.mu.Lock()
			k.cur = nc
			ab := k.aborted
			k.mu.Unlock()
			if ab {
				nc.Close()
				return nil, errAborted
			}
			return nc, nil
		},
	}
	k.req = fasthttp.AcquireRequest()
	k.resp = fasthttp.AcquireResponse()
	k.resp.KeepBodyBuffer = true // the lane reuses its response body buffer
	return k, nil
}

// maxFullBody bounds a non-streaming response body.
const maxFullBody = 256 << 20

// prepare sets the part of every request that does not change: method,
// URI, content type, Accept, Authorization and the --header headers
// (sorted once here, not per request). Per-request headers are set over
// them with RequestHeader.Set, which replaces a value in place.
func (k *conn) prepare(c *runConfig) {
	req := k.req
	req.Reset()
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI(k.uri)
	req.Header.SetContentType("application/json")
	if c.Streaming {
		req.Header.Set("Accept", "text/event-stream")
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	for _, hk := range sortedKeys(c.Headers) {
		req.Header.Set(hk, c.Headers[hk])
	}
	k.prepared = true
}

var errAborted = errors.New("request cancelled")

// abort closes the lane's connection so an in-flight request fails at once.
func (k *conn) abort() {
	k.mu.Lock()
	k.aborted = true
	if k.cur != nil {
		k.cur.Close()
	}
	k.mu.Unlock()
}

func (k *conn) isAborted() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.aborted
}

func (k *conn) close() {
	k.abort()
	k.hc.CloseIdleConnections()
	fasthttp.ReleaseRequest(k.req)
	fasthttp.ReleaseResponse(k.resp)
	// fasthttp's connection cleaner goroutine keeps k.hc, and through its
	// Dial closure k, alive for up to MaxIdleConnDuration after Run
	// returns: drop the buffers so only the small structs linger.
	k.req, k.resp = nil, nil
	k.prepared = false
	k.lines = lineReader{}
	k.body = nil
	k.liveText = nil
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
// chunk with now. text, when non-nil, collects the reply's content (live
// mode).
//
// A streaming request's body is read as it arrives (fasthttp's body
// stream); a non-streaming one is read whole by fasthttp into the lane's
// response buffer (its first byte is its last anyway). Apart from what
// fasthttp itself allocates for a body stream, nothing on this path
// allocates once the lane's buffers have grown to the largest response
// (TestClientPathAllocs): the request, the response, the line reader and
// the body buffer belong to the lane.
func (k *conn) do(c *runConfig, body []byte, sb *streamBody, hdr func(*fasthttp.RequestHeader), now func() int64, text *[]byte) (x exchange) {
	req, resp := k.req, k.resp
	if !k.prepared {
		k.prepare(c)
	}
	hdr(&req.Header)
	if sb != nil {
		req.SetBodyStream(sb, sb.Len())
	} else {
		req.SetBodyRaw(body)
	}
	resp.StreamBody = c.Streaming // HostClient.Do keeps it across its Reset

	err := k.hc.Do(req, resp)
	x.ackNs = now()
	if err != nil {
		x.endNs = x.ackNs
		x.err = k.transportError(err, "before response headers")
		return x
	}
	defer resp.CloseBodyStream() //nolint:errcheck // a close error after a full read is not a request failure
	status := resp.StatusCode()
	stream := resp.BodyStream()
	if status >= 400 {
		var b []byte
		var rerr error
		if stream != nil {
			b, rerr = io.ReadAll(io.LimitReader(stream, maxErrorBody))
		} else {
			b = append([]byte(nil), truncateBytes(resp.Body(), maxErrorBody)...)
		}
		x.endNs = now()
		x.errBody = b
		msg := errorMessage(b)
		if rerr != nil && len(b) == 0 {
			msg = rerr.Error()
		}
		x.err = &metrics.Error{Code: status, Type: reasonPhrase(status), Message: msg, Category: metrics.CategoryHTTP, ServerType: serverErrorType(b)}
		return x
	}
	if stream != nil && bytes.HasPrefix(resp.Header.ContentType(), []byte("text/event-stream")) {
		k.readSSE(stream, now, text, &x)
		return x
	}
	// Non-streaming (or a server that ignored stream:true).
	var b []byte
	if stream != nil {
		var rerr error
		k.body, rerr = readAllInto(k.body[:0], stream, maxFullBody)
		b = k.body
		if rerr != nil {
			x.endNs = now()
			x.err = k.transportError(rerr, "while reading the response body")
			return x
		}
	} else {
		b = resp.Body()
	}
	x.endNs = now()
	r, perr := parseFullResponse(b, text)
	x.fallback = r.fallback
	if perr != nil {
		x.errBody = append([]byte(nil), b...)
		// No code: the status was a success; the body is what failed (the
		// same rule as a malformed SSE event).
		x.err = &metrics.Error{Type: "MalformedResponse", Message: perr.Error(), Category: metrics.CategoryMalformed}
		return x
	}
	if r.content || r.reasoning {
		x.firstNs, x.lastNs, x.chunks = x.endNs, x.endNs, 1
		if r.content {
			x.firstOutputNs = x.endNs
		}
	}
	x.hasUsage, x.usage = r.hasUsage, r.usage
	return x
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
		ev, ok, perr := parseSSELine(line, text)
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
	text := err.Error()
	// fasthttp.ErrBrokenChunk (a stream cut inside the chunked framing) has
	// no Unwrap: its cause is only in its text, so for it alone the text is
	// matched (fasthttp v1.78).
	var bc fasthttp.ErrBrokenChunk
	broken := errors.As(err, &bc)
	brokenBy := func(cause string) bool { return broken && strings.Contains(text, cause) }
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, os.ErrDeadlineExceeded):
		cat, typ, what = metrics.CategoryTimeout, "Timeout", "timeout"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, fasthttp.ErrConnectionClosed),
		brokenBy(syscall.ECONNRESET.Error()), brokenBy(io.EOF.Error()):
		typ, what = "ConnectionReset", "connection reset"
	case errors.Is(err, syscall.ECONNREFUSED):
		typ, what = "ConnectionRefused", "connection refused"
	}
	var ne net.Error
	if (errors.As(err, &ne) && ne.Timeout()) || brokenBy(os.ErrDeadlineExceeded.Error()) {
		cat, typ, what = metrics.CategoryTimeout, "Timeout", "timeout"
	}
	if errors.Is(err, fasthttp.ErrConnectionClosed) {
		// fasthttp's text suggests a missing "Connection: close" header,
		// which is not the cause of a reset or a crash.
		text = "the server closed or reset the connection after the request was sent, without a response (a crashing or restarting server, or a proxy dropping the request, does this: check the server log)"
	}
	return &metrics.Error{Type: typ, Message: fmt.Sprintf("%s %s: %s", what, where, text), Category: cat}
}

func reasonPhrase(code int) string {
	if s := fasthttp.StatusMessage(code); s != "Unknown Status Code" {
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
