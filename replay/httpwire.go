package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
)

// The HTTP/1.1 wire of one lane connection: a buffered reader over the
// socket, the response head parser and the body framings (Content-Length,
// chunked, until close). It is what the client needs of HTTP/1.1 and no
// more: one request at a time on a keep-alive connection (no pipelining),
// identity bodies (agentperf never asks for a compressed one), interim 1xx
// responses skipped.

// Limits of what a server may send.
const (
	// maxResponseHead bounds a response's status line and headers.
	maxResponseHead = 64 << 10
	// maxChunkLine bounds a chunk-size line (size, extensions).
	maxChunkLine = 4 << 10
	// readBufSize is the initial size of a connection's read buffer.
	readBufSize = 16 << 10
)

// Errors of the response framing. They are transport errors: the bytes
// are not HTTP/1.1 as the client expects it.
var (
	// errClosedBeforeResponse is a connection that the server closed or
	// reset after the request was sent and before any byte of a response.
	errClosedBeforeResponse = errors.New("the server closed or reset the connection after the request was sent, without a response (a crashing or restarting server, or a proxy dropping the request, does this: check the server log)")
	errMalformedHTTP        = errors.New("malformed HTTP response")
)

// wireReader is a buffered reader over a connection: buf[head:tail] holds
// the bytes read and not consumed yet.
type wireReader struct {
	nc         net.Conn
	buf        []byte
	head, tail int
	// got counts the bytes read since the current response began (so a
	// close before the first byte is told from one mid-response).
	got int
}

func (r *wireReader) reset(nc net.Conn) {
	r.nc = nc
	r.head, r.tail, r.got = 0, 0, 0
	if r.buf == nil {
		r.buf = make([]byte, readBufSize)
	}
}

func (r *wireReader) buffered() []byte { return r.buf[r.head:r.tail] }

// fill reads more bytes from the connection, compacting the buffer first
// and growing it (up to limit bytes held) when it is full. It returns the
// read error, io.EOF at the end of the connection.
func (r *wireReader) fill(limit int) error {
	if r.head > 0 && r.head == r.tail {
		r.head, r.tail = 0, 0
	}
	if r.tail == len(r.buf) {
		if r.head > 0 {
			r.tail = copy(r.buf, r.buf[r.head:r.tail])
			r.head = 0
		} else {
			if len(r.buf) >= limit {
				return errTooLarge
			}
			nb := make([]byte, min(2*len(r.buf), limit))
			r.tail = copy(nb, r.buf[:r.tail])
			r.buf = nb
		}
	}
	n, err := r.nc.Read(r.buf[r.tail:])
	r.tail += n
	r.got += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

var errTooLarge = errors.New("too large")

// respHead is what the client needs of a response's status line and
// headers.
type respHead struct {
	status int
	// length is the Content-Length, -1 when absent.
	length  int64
	chunked bool
	// close is set when the connection cannot carry another request
	// after this response (Connection: close, HTTP/1.0 without
	// keep-alive, a body delimited by the close).
	close bool
	// ctype is the Content-Type value (a copy the head owns).
	ctype []byte
}

// readHead reads and parses a response head, skipping interim (1xx)
// responses. An end of the connection before any byte of the response is
// errClosedBeforeResponse.
func (r *wireReader) readHead(h *respHead) error {
	r.got = 0
	for {
		end, err := r.headEnd()
		if err != nil {
			return err
		}
		if err := parseHead(r.buf[r.head:r.head+end], h); err != nil {
			return err
		}
		r.head += end
		if h.status >= 200 || h.status == 101 {
			return nil
		}
		// 100 Continue, 103 Early Hints: the final response follows.
	}
}

// headEnd fills the buffer until it holds a whole response head and
// returns the head's length, the blank line included.
func (r *wireReader) headEnd() (int, error) {
	// from: where the search resumes after a fill, in the buffered bytes
	// (those before it hold no blank line; the last line end is searched
	// again), so a head that arrives a byte at a time costs linear time.
	from := 0
	for {
		b := r.buffered()
		if n := blankLineEnd(b[from:]); n > 0 {
			return from + n, nil
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= from {
			from = i
		}
		err := r.fill(maxResponseHead) // keeps the buffered bytes in order: from stays valid
		switch {
		case err == nil:
		case errors.Is(err, errTooLarge):
			return 0, fmt.Errorf("%w: response headers larger than %d bytes", errMalformedHTTP, maxResponseHead)
		case r.got == 0 && (errors.Is(err, io.EOF) || isReset(err)):
			return 0, errClosedBeforeResponse
		case errors.Is(err, io.EOF):
			return 0, io.ErrUnexpectedEOF
		default:
			return 0, err
		}
	}
}

// blankLineEnd returns the length of b up to and including its first
// blank line (a line end followed by \n or \r\n), 0 when it has none.
func blankLineEnd(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return 0
		}
		i += j + 1
		switch {
		case i < len(b) && b[i] == '\n':
			return i + 1
		case i+1 < len(b) && b[i] == '\r' && b[i+1] == '\n':
			return i + 2
		}
	}
}

// parseHead parses a status line and headers (b ends with the blank line).
func parseHead(b []byte, h *respHead) error {
	line, rest := cutLine(b)
	// HTTP/1.x SP 3DIGIT [SP reason]
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return fmt.Errorf("%w: status line %.80q", errMalformedHTTP, line)
	}
	minor := line[7]
	status := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return fmt.Errorf("%w: status line %.80q", errMalformedHTTP, line)
		}
		status = status*10 + int(c-'0')
	}
	if len(line) > 12 && line[12] != ' ' {
		return fmt.Errorf("%w: status line %.80q", errMalformedHTTP, line)
	}
	h.status, h.length, h.chunked = status, -1, false
	h.ctype = h.ctype[:0]
	keepAlive := minor != '0' // HTTP/1.1 keeps the connection by default
	for len(rest) > 0 {
		line, rest = cutLine(rest)
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return fmt.Errorf("%w: header line %.80q", errMalformedHTTP, line)
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case asciiEqualFold(name, "content-length"):
			n, ok := parseLength(value)
			if !ok || (h.length >= 0 && n != h.length) {
				return fmt.Errorf("%w: Content-Length %.40q", errMalformedHTTP, value)
			}
			h.length = n
		case asciiEqualFold(name, "transfer-encoding") && minor != '0':
			// (HTTP/1.0 has no chunked coding: its body ends with the
			// connection whatever the header says, as net/http reads it.)
			// The last coding must be chunked for the length to be known
			// from the framing; anything else is delimited by the close.
			h.chunked = hasLastToken(value, "chunked")
			if !h.chunked {
				keepAlive = false
			}
		case asciiEqualFold(name, "content-type"):
			h.ctype = append(h.ctype, value...)
		case asciiEqualFold(name, "connection"):
			if hasToken(value, "close") {
				keepAlive = false
			} else if hasToken(value, "keep-alive") {
				keepAlive = true
			}
		}
	}
	if h.chunked {
		h.length = -1 // chunked framing wins over a Content-Length
	}
	if !h.chunked && h.length < 0 && bodyAllowed(status) {
		keepAlive = false // the body ends with the connection
	}
	h.close = !keepAlive
	return nil
}

// bodyAllowed reports whether a response with this status may have a body.
func bodyAllowed(status int) bool {
	return status >= 200 && status != 204 && status != 304
}

// cutLine splits b at its first line end (\n or \r\n).
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil
	}
	line, rest = b[:i], b[i+1:]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest
}

func parseLength(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// asciiEqualFold reports whether b equals the lower-case ASCII s, ignoring
// case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// hasToken reports whether the comma-separated list v holds tok (any case).
func hasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		var t []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			t, v = v[:i], v[i+1:]
		} else {
			t, v = v, nil
		}
		if asciiEqualFold(bytes.TrimSpace(t), tok) {
			return true
		}
	}
	return false
}

// hasLastToken reports whether the last element of the comma-separated
// list v is tok (any case).
func hasLastToken(v []byte, tok string) bool {
	if i := bytes.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return asciiEqualFold(bytes.TrimSpace(v), tok)
}

// bodyReader reads one response body from a wireReader in its framing. A
// body read to its end leaves the connection at the next response.
type bodyReader struct {
	r *wireReader
	// mode: bodyLength (left bytes), bodyChunked, bodyUntilClose, or
	// bodyNone.
	mode int
	left int64
	// chunk state: left is what remains of the current chunk; inChunk
	// is set while a chunk's data is being read.
	inChunk bool
	done    bool
}

const (
	bodyNone = iota
	bodyLength
	bodyChunked
	bodyUntilClose
)

// body returns the reader of the body that follows head h.
func (r *wireReader) body(h *respHead, br *bodyReader) {
	*br = bodyReader{r: r}
	switch {
	case !bodyAllowed(h.status) || h.length == 0:
		br.mode, br.done = bodyNone, true
	case h.chunked:
		br.mode = bodyChunked
	case h.length > 0:
		br.mode, br.left = bodyLength, h.length
	default:
		br.mode = bodyUntilClose
	}
}

// Read reads body bytes. It returns io.EOF at the body's end; an end of
// the connection inside a framed body is io.ErrUnexpectedEOF.
func (br *bodyReader) Read(p []byte) (int, error) {
	if br.done {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	switch br.mode {
	case bodyLength:
		n, err := br.data(p, br.left)
		br.left -= int64(n)
		if br.left == 0 {
			br.done = true
			if n > 0 {
				return n, nil
			}
			return 0, io.EOF
		}
		return n, err
	case bodyUntilClose:
		r := br.r
		if b := r.buffered(); len(b) > 0 {
			n := copy(p, b)
			r.head += n
			return n, nil
		}
		n, err := r.nc.Read(p)
		if n > 0 {
			return n, nil
		}
		if errors.Is(err, io.EOF) {
			br.done = true
		}
		if err == nil {
			err = io.ErrNoProgress
		}
		return 0, err
	default:
		return br.readChunked(p)
	}
}

// data copies up to max bytes of body data into p: from the buffer, or
// straight from the connection when nothing is buffered.
func (br *bodyReader) data(p []byte, max int64) (int, error) {
	if int64(len(p)) > max {
		p = p[:max]
	}
	r := br.r
	if b := r.buffered(); len(b) > 0 {
		n := copy(p, b)
		r.head += n
		return n, nil
	}
	if len(p) < len(r.buf)/4 {
		// A small read: fill the buffer instead, so that what follows
		// (the next chunk header, the next response) is read with it.
		if err := r.fill(len(r.buf)); err != nil {
			return 0, unexpectedEOF(err)
		}
		n := copy(p, r.buffered())
		r.head += n
		return n, nil
	}
	n, err := r.nc.Read(p)
	if n > 0 {
		return n, nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return 0, unexpectedEOF(err)
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readChunked reads chunked body data: chunk-size [; ext] CRLF data CRLF
// … 0 CRLF [trailers] CRLF.
func (br *bodyReader) readChunked(p []byte) (int, error) {
	for !br.inChunk {
		size, err := br.chunkHeader()
		if err != nil {
			return 0, err
		}
		if size == 0 {
			if err := br.trailers(); err != nil {
				return 0, err
			}
			br.done = true
			return 0, io.EOF
		}
		br.left, br.inChunk = size, true
	}
	n, err := br.data(p, br.left)
	br.left -= int64(n)
	if br.left == 0 {
		br.inChunk = false
		if err := br.chunkEnd(); err != nil {
			return n, err
		}
	}
	return n, err
}

// line returns the next line of the framing (without its line end),
// consuming it.
func (br *bodyReader) line() ([]byte, error) {
	r := br.r
	for from := 0; ; {
		b := r.buffered()
		if i := bytes.IndexByte(b[from:], '\n'); i >= 0 {
			i += from
			r.head += i + 1
			line := b[:i]
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, nil
		}
		if len(b) > maxChunkLine {
			return nil, fmt.Errorf("%w: chunk line longer than %d bytes", errMalformedHTTP, maxChunkLine)
		}
		from = len(b) // a fill keeps the buffered bytes in order
		if err := r.fill(len(r.buf)); err != nil {
			return nil, unexpectedEOF(err)
		}
	}
}

// chunkHeader reads a chunk-size line.
func (br *bodyReader) chunkHeader() (int64, error) {
	line, err := br.line()
	if err != nil {
		return 0, err
	}
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 || len(line) > 15 {
		return 0, fmt.Errorf("%w: chunk size %.40q", errMalformedHTTP, line)
	}
	var n int64
	for _, c := range line {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, fmt.Errorf("%w: chunk size %.40q", errMalformedHTTP, line)
		}
		n = n<<4 | int64(d)
	}
	return n, nil
}

// chunkEnd reads the line end after a chunk's data.
func (br *bodyReader) chunkEnd() error {
	line, err := br.line()
	if err != nil {
		return err
	}
	if len(line) != 0 {
		return fmt.Errorf("%w: chunk data longer than its size", errMalformedHTTP)
	}
	return nil
}

// trailers reads the trailer section after the last chunk, up to its
// blank line.
func (br *bodyReader) trailers() error {
	for {
		line, err := br.line()
		if err != nil {
			return err
		}
		if len(line) == 0 {
			return nil
		}
	}
}

// drain reads the rest of the body, up to limit bytes; it reports whether
// the body ended (so the connection can carry the next request).
func (br *bodyReader) drain(buf []byte, limit int) bool {
	for n := 0; n <= limit; {
		m, err := br.Read(buf)
		n += m
		if err != nil {
			return errors.Is(err, io.EOF) && br.done
		}
	}
	return false
}
