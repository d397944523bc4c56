package dataset

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kinds of trace errors. A *TraceError wraps exactly one of them, so callers
// can branch with errors.Is; the message adds what was expected.
var (
	// ErrMalformedJSON: the text is not valid JSON (or not an object where
	// one is needed).
	ErrMalformedJSON = errors.New("malformed JSON")
	// ErrUnknownField: a field the weka schema does not define (aiperf's
	// models use extra="forbid"; so does agentperf).
	ErrUnknownField = errors.New("unknown field")
	// ErrMissingField: a required field is absent.
	ErrMissingField = errors.New("missing field")
	// ErrWrongType: a field holds a value of the wrong JSON type.
	ErrWrongType = errors.New("wrong type")
	// ErrOutOfRange: a number is negative, not an integer, not finite, or too
	// large (hash ids must fit in 32 bits).
	ErrOutOfRange = errors.New("value out of range")
	// ErrDuplicateTraceID: two traces of one corpus share an id.
	ErrDuplicateTraceID = errors.New("duplicate trace id")
	// ErrHashIDScope: hash_id_scope is not "local".
	ErrHashIDScope = errors.New("unsupported hash_id_scope")
	// ErrBlockSize: block_size is not a positive integer.
	ErrBlockSize = errors.New("invalid block_size")
	// ErrEmptyTrace: a trace has no parent requests to replay.
	ErrEmptyTrace = errors.New("trace has no requests")
)

// TraceError is a problem with one trace, with its position.
//
// Line is the 1-based line of the file (for a pretty-printed one-trace
// JSON file, the line the problem is on), or 0 when the problem has no
// single position (a missing field in a one-trace file). Offset is the
// 0-based byte offset within that line where the problem was found, or -1. Request is the index of the entry in the trace's
// "requests" array (subagent entries count), or -1; Subrequest is the index
// inside that subagent entry's "requests", or -1. Field is the JSON path of
// the offending value relative to the trace object, e.g.
// "requests[3].requests[1].hash_ids[7]".
type TraceError struct {
	File       string
	Line       int
	Offset     int
	TraceID    string
	Request    int
	Subrequest int
	Field      string
	Err        error
}

// Error formats the error as "file:line: trace "id": field: message".
func (e *TraceError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	if e.Offset >= 0 {
		b.WriteString(" (byte ")
		b.WriteString(strconv.Itoa(e.Offset))
		b.WriteByte(')')
	}
	b.WriteString(": ")
	if e.TraceID != "" {
		fmt.Fprintf(&b, "trace %q: ", e.TraceID)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying error (which wraps one of the Err* kinds).
func (e *TraceError) Unwrap() error { return e.Err }

// pathSeg is one step of a JSON path: a field name and, for array
// elements, an index (-1 otherwise).
type pathSeg struct {
	name string
	idx  int
}

func formatPath(p []pathSeg) string {
	var b strings.Builder
	for i, s := range p {
		if i > 0 && s.name != "" {
			b.WriteByte('.')
		}
		b.WriteString(s.name)
		if s.idx >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.idx))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// kindError wraps a kind sentinel with a message saying what was expected.
type kindError struct {
	kind error
	msg  string
}

func (e *kindError) Error() string { return e.kind.Error() + ": " + e.msg }
func (e *kindError) Unwrap() error { return e.kind }

func kindf(kind error, format string, args ...any) error {
	return &kindError{kind: kind, msg: fmt.Sprintf(format, args...)}
}
