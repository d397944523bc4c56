package sim

import (
	"bufio"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/agentperf/agentperf/internal/jsonx"
)

// RequestLogEntry is one line of Config.RequestLog, written when a
// completion request ends (served, refused or cut off). Times are Unix
// nanoseconds; 0 means "did not happen".
//
//	{"n":1,"arrival_ns":…,"x_request_id":"…","x_correlation_id":"…","prompt_tokens":1234,"content_tokens":1200,"first_byte_ns":…,"status":200}
type RequestLogEntry struct {
	N         int64  `json:"n"`          // completion request number, from 1
	ArrivalNs int64  `json:"arrival_ns"` // when the handler started
	RequestID string `json:"x_request_id"`
	// CorrelationID is the X-Correlation-ID header (a client's session id).
	CorrelationID string `json:"x_correlation_id"`
	// PromptTokens is usage.prompt_tokens: the rendered prompt, chat
	// template included; -1 when the request was refused before counting.
	PromptTokens int `json:"prompt_tokens"`
	// ContentTokens is the sum of the message contents' tokens without the
	// template (the text prompt's tokens for /v1/completions): what a
	// trace's recorded input length describes; -1 when not counted.
	ContentTokens int `json:"content_tokens"`
	// FirstByteNs is when the first content byte was flushed (the time
	// Server.FirstByte reports).
	FirstByteNs int64 `json:"first_byte_ns"`
	// Status is the HTTP status written (200 also for a stream cut by a
	// fault or by the client), 0 when the connection was reset first.
	Status int `json:"status"`
}

// appendJSON appends e as one JSON line.
func (e *RequestLogEntry) appendJSON(b []byte) []byte {
	b = append(b, `{"n":`...)
	b = strconv.AppendInt(b, e.N, 10)
	b = append(b, `,"arrival_ns":`...)
	b = strconv.AppendInt(b, e.ArrivalNs, 10)
	b = append(b, `,"x_request_id":`...)
	b = jsonx.AppendString(b, e.RequestID)
	b = append(b, `,"x_correlation_id":`...)
	b = jsonx.AppendString(b, e.CorrelationID)
	b = append(b, `,"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(e.PromptTokens), 10)
	b = append(b, `,"content_tokens":`...)
	b = strconv.AppendInt(b, int64(e.ContentTokens), 10)
	b = append(b, `,"first_byte_ns":`...)
	b = strconv.AppendInt(b, e.FirstByteNs, 10)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	return append(b, "}\n"...)
}

// logRequest writes e to Config.RequestLog.
func (s *Server) logRequest(e *RequestLogEntry) {
	if s.cfg.RequestLog == nil {
		return
	}
	line := e.appendJSON(make([]byte, 0, 256))
	s.logMu.Lock()
	s.cfg.RequestLog.Write(line) //nolint:errcheck // a benchmark log; the writer reports its own errors on flush
	s.logMu.Unlock()
}

// unixNs is t in Unix nanoseconds, 0 for the zero time.
func unixNs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// RequestLogFile is a buffered file to use as Config.RequestLog. Its
// writes and Flush are serialised, so that it may be flushed while a
// handler that the shutdown grace cut off still writes.
type RequestLogFile struct {
	mu sync.Mutex
	f  *os.File
	w  *bufio.Writer
}

// CreateRequestLog creates (or truncates) the file path for the request
// log; the error is os.Create's.
func CreateRequestLog(path string) (*RequestLogFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &RequestLogFile{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// Write buffers p.
func (l *RequestLogFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Flush writes the buffered lines to the file.
func (l *RequestLogFile) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Flush()
}

// Close closes the file without flushing (Flush first to keep the lines).
func (l *RequestLogFile) Close() error { return l.f.Close() }
