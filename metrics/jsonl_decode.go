package metrics

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentperf/agentperf/internal/jsonx"
)

// RecordLine is one line of the record exports (profile_export.jsonl and
// context_overflow_export.jsonl): the schema AppendRecordLine writes and
// DecodeRecordLine reads. Every reader of those files decodes through
// DecodeRecordLine (or ReadRecords), so a field is written, and read, in
// one place.
type RecordLine struct {
	// Record holds what the line's metadata and error say. The fields a
	// line does not carry (chunk times, usage, the request's size, Lane,
	// Model) are zero after a decode, and Bucket is BucketOf(&Record).
	Record Record
	// Values are the line's metrics, NaN where absent.
	Values Values
	// ProcessorID is metadata.record_processor_id.
	ProcessorID string
	// ErrorISLSource is error.details.error_isl_source: ErrorISLFromUsage,
	// ErrorISLFromTrace or "". A record the engine made derives it
	// (ErrorISLSource); a decoded line keeps what the file said.
	ErrorISLSource string

	// seen is the required metadata fields the line had (Missing).
	seen uint8
}

// Missing names the metadata fields every record has that the decoded
// line lacks ("" when it has them all). DecodeRecordLine decodes such a
// line; ReadRecords, which reads a record file, refuses it.
func (l *RecordLine) Missing() string {
	var missing []string
	for k, name := range requiredMetadata {
		if l.seen&(1<<k) == 0 {
			missing = append(missing, "metadata."+name)
		}
	}
	return strings.Join(missing, ", ")
}

// AppendRecordLine appends l as one record line, newline included: the
// encoder of RecordLine, whose output DecodeRecordLine reads back to the
// same line. The RecordWriter writes the engine's records with the same
// code (appendRecordLine).
func AppendRecordLine(b []byte, l *RecordLine) []byte {
	return appendLine(b, &l.Record, &l.Values, l.ProcessorID, l.ErrorISLSource)
}

// DecodeRecordLine decodes one line of a record export into l (reset
// first). It reads what AppendRecordLine writes and what aiperf writes
// (docs/artifacts.md, "Reading the files back"):
//
//   - metadata: the fields of the record schema, each of its type (an
//     integer, a string, a bool) or null; a missing benchmark_phase is
//     profiling, any phase but warmup and profiling is an error; keys the
//     schema does not know are skipped.
//   - metrics: each entry {"value": number, "unit": …} or a bare number;
//     null, a list value (aiperf's inter_chunk_latency) and a missing
//     value are absent; tags it does not know are skipped.
//   - error: as InferenceX's processor reads it, a failure only when
//     present and not null, false, 0, "", [] or {}. An object maps onto
//     Error (code, type, error_type, message or else error,
//     details.category); a code that is not a non-zero integer, and then
//     class or status, stand for the type when the object has no type,
//     error_type or non-zero code. Any other value is the message.
//
// Keys are compared as written (an escaped key is an unknown one). The
// error names the field and what was found there; ReadRecords adds the
// file and the line.
func DecodeRecordLine(b []byte, l *RecordLine) error {
	*l = RecordLine{Values: emptyValues}
	l.Record.Phase = PhaseProfiling
	d := lineDecoder{b: b, l: l}
	i := jsonx.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errors.New("not a record: a record line is one JSON object {\"metadata\":…,\"metrics\":…}")
	}
	i, err := jsonx.EachMember(b, i, func(key []byte, i int) (int, error) {
		switch string(key) {
		case "metadata":
			return d.metadata(i)
		case "metrics":
			return d.metrics(i)
		case "error":
			return d.errorValue(i)
		}
		return d.skip(i, 1)
	})
	if err != nil {
		return err
	}
	if j := jsonx.SkipSpace(b, i); j != len(b) {
		return jsonx.Syntax(b, j, "the end of the line after the record")
	}
	l.seen = d.seen
	r := &l.Record
	if r.TotalBlocks < 0 || r.HitBlocks < 0 || r.HitBlocks > r.TotalBlocks {
		return fmt.Errorf("metadata.theoretical_hit_blocks %d / theoretical_total_blocks %d out of range (0 ≤ hit ≤ total)", r.HitBlocks, r.TotalBlocks)
	}
	r.Bucket = BucketOf(r)
	return nil
}

// ErrBadExport is wrapped by errors about a malformed record export
// (profile_export.jsonl, context_overflow_export.jsonl).
var ErrBadExport = errors.New("malformed record export")

// ReadRecords decodes the record export r line by line (DecodeRecordLine)
// and calls fn with each record; blank lines are skipped, and l is reused
// from one call to the next (fn copies what it keeps). An error names
// the stream (name), the line and the field, and wraps ErrBadExport; an
// error of fn is returned the same way. With tornTail (a .partial file
// that does not end with a newline: its writer died mid-write) a
// malformed last line is left out instead, and torn reports it.
func ReadRecords(r io.Reader, name string, tornTail bool, fn func(l *RecordLine) error) (torn bool, err error) {
	var l RecordLine
	return readJSONL(r, name, tornTail, func(b []byte) error {
		if err := DecodeRecordLine(b, &l); err != nil {
			return fmt.Errorf("%w (each line must be one record as agentperf or aiperf writes it: fix or delete the line)", err)
		}
		if m := l.Missing(); m != "" {
			return fmt.Errorf("not a record: %s missing, which every record has (each line must be one record as agentperf or aiperf writes it: fix or delete the line)", m)
		}
		return fn(&l)
	})
}

// lineDecoder is the state of one DecodeRecordLine.
type lineDecoder struct {
	b    []byte
	l    *RecordLine
	buf  []byte // scratch for strings with escapes
	seen uint8  // the required metadata fields found (seenStart, …)
}

// The metadata fields every record has, as agentperf and aiperf write
// them (aiperf's record metadata declares them without a default): a line
// without one is not a record, however well-formed its JSON (a stub
// {"metadata":{}} used to count as a successful profiling request).
// benchmark_phase is not one: a line without it is a profiling record,
// as older aiperf folders have them.
const (
	seenStart = 1 << iota
	seenEnd
	seenPhase
)

// requiredMetadata names the required fields, seenStart and seenEnd.
var requiredMetadata = []string{"request_start_ns", "request_end_ns"}

// skip skips the value at i, nested depth containers deep.
func (d *lineDecoder) skip(i, depth int) (int, error) {
	j, ok := jsonx.SkipValue(d.b, i, jsonx.MaxDepth-depth)
	if !ok {
		return j, jsonx.Syntax(d.b, j, "a JSON value")
	}
	return j, nil
}

// isNull reports whether the value at i is null.
func (d *lineDecoder) isNull(i int) bool { return jsonx.HasLiteral(d.b, i, "null") }

// found describes the value at i for an error message.
func (d *lineDecoder) found(i int) string {
	if i >= len(d.b) {
		return "the end of the line"
	}
	switch c := d.b[i]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "a list"
	}
	j, ok := jsonx.SkipValue(d.b, i, 0)
	if !ok || j-i > 40 {
		return fmt.Sprintf("%q", jsonx.Excerpt(d.b[i:]))
	}
	return string(d.b[i:j])
}

// integer reads an integer or null (0) at i.
func (d *lineDecoder) integer(i int) (int64, int, error) {
	if d.isNull(i) {
		return 0, i + 4, nil
	}
	b := d.b
	if i < len(b) && (b[i] == '-' || b[i] >= '0' && b[i] <= '9') {
		j, ok := jsonx.ScanNumber(b, i)
		if ok {
			n, err := strconv.ParseInt(string(b[i:j]), 10, 64)
			if err == nil {
				return n, j, nil
			}
			if errors.Is(err, strconv.ErrRange) {
				return 0, i, fmt.Errorf("the integer %s is out of range", b[i:j])
			}
		}
	}
	return 0, i, fmt.Errorf("expected an integer or null, found %s", d.found(i))
}

// str reads a string or null ("") at i.
func (d *lineDecoder) str(i int) (string, int, error) {
	if d.isNull(i) {
		return "", i + 4, nil
	}
	if i >= len(d.b) || d.b[i] != '"' {
		return "", i, fmt.Errorf("expected a string or null, found %s", d.found(i))
	}
	j, ok := jsonx.ScanString(d.b, i)
	if !ok {
		return "", j, jsonx.Syntax(d.b, j, "a valid string")
	}
	return d.unquote(d.b[i:j]), j, nil
}

// unquote decodes a string literal ScanString accepted.
func (d *lineDecoder) unquote(lit []byte) string {
	body := lit[1 : len(lit)-1]
	if len(body) == 0 {
		return ""
	}
	for _, c := range body {
		if c == '\\' || c >= utf8.RuneSelf {
			d.buf = jsonx.AppendUnquoted(d.buf[:0], lit)
			return string(d.buf)
		}
	}
	return string(body)
}

// boolean reads true, false or null (false) at i.
func (d *lineDecoder) boolean(i int) (bool, int, error) {
	switch {
	case jsonx.HasLiteral(d.b, i, "true"):
		return true, i + 4, nil
	case jsonx.HasLiteral(d.b, i, "false"):
		return false, i + 5, nil
	case d.isNull(i):
		return false, i + 4, nil
	}
	return false, i, fmt.Errorf("expected true, false or null, found %s", d.found(i))
}

// metadata reads the metadata object (or null) at i.
func (d *lineDecoder) metadata(i int) (int, error) {
	if d.isNull(i) {
		return i + 4, nil
	}
	r := &d.l.Record
	return jsonx.EachMember(d.b, i, func(key []byte, i int) (int, error) {
		var j int
		var err error
		switch string(key) {
		case "session_num":
			j, err = d.setInt(&r.SessionNum, i)
		case "x_request_id":
			j, err = d.setStr(&r.XRequestID, i)
		case "x_correlation_id":
			j, err = d.setStr(&r.XCorrelationID, i)
		case "conversation_id":
			j, err = d.setStr(&r.ConversationID, i)
		case "turn_index":
			j, err = d.setInt(&r.TurnIndex, i)
		case "source_trace_id":
			j, err = d.setStr(&r.SourceTraceID, i)
		case "source_outer_idx":
			j, err = d.setInt(&r.SourceOuterIdx, i)
		case "source_kind":
			j, err = d.setStr(&r.SourceKind, i)
		case "credit_issued_ns":
			r.CreditIssuedNs, j, err = d.integer(i)
		case "request_start_ns":
			d.seen |= seenStart
			r.RequestStartNs, j, err = d.integer(i)
		case "request_ack_ns":
			r.RequestAckNs, j, err = d.integer(i)
		case "request_end_ns":
			d.seen |= seenEnd
			r.RequestEndNs, j, err = d.integer(i)
		case "worker_id":
			j, err = d.setStr(&r.WorkerID, i)
		case "shard":
			j, err = d.setStr(&r.Shard, i)
		case "record_processor_id":
			j, err = d.setStr(&d.l.ProcessorID, i)
		case "cancellation_time_ns":
			r.CancellationNs, j, err = d.integer(i)
		case "agent_depth":
			j, err = d.setInt(&r.AgentDepth, i)
		case "parent_correlation_id":
			j, err = d.setStr(&r.ParentCorrelationID, i)
		case "root_correlation_id":
			j, err = d.setStr(&r.RootCorrelationID, i)
		case "recorded_output_tokens":
			j, err = d.setInt(&r.RecordedOut, i)
		case "attempt":
			j, err = d.setInt(&r.Attempt, i)
		case "server_restart_tries":
			j, err = d.setInt(&r.RestartTries, i)
		case "server_restart_wait_ns":
			r.RestartWaitNs, j, err = d.integer(i)
		case "theoretical_hit_blocks":
			j, err = d.setInt(&r.HitBlocks, i)
		case "theoretical_total_blocks":
			j, err = d.setInt(&r.TotalBlocks, i)
		case "was_cancelled":
			r.Cancelled, j, err = d.boolean(i)
		case "context_overflow_skip":
			r.ContextOverflow, j, err = d.boolean(i)
		case "retried":
			r.Retried, j, err = d.boolean(i)
		case "benchmark_phase":
			d.seen |= seenPhase
			var s string
			s, j, err = d.str(i)
			switch s {
			case "", string(PhaseProfiling):
				r.Phase = PhaseProfiling
			case string(PhaseWarmup):
				r.Phase = PhaseWarmup
			default:
				if err == nil {
					err = fmt.Errorf("%q is neither warmup nor profiling", s)
				}
			}
		default:
			return d.skip(i, 2)
		}
		return j, fieldErr("metadata.", key, err)
	})
}

// fieldErr names the field of err (nil when err is).
func fieldErr(prefix string, key []byte, err error) error {
	if err == nil {
		return nil
	}
	if _, syntax := err.(*jsonx.SyntaxError); syntax {
		return err
	}
	return fmt.Errorf("%s%s: %w", prefix, key, err)
}

// setInt reads an integer or null (0) at i into *p.
func (d *lineDecoder) setInt(p *int, i int) (int, error) {
	n, j, err := d.integer(i)
	*p = int(n)
	return j, err
}

// setStr reads a string or null ("") at i into *p.
func (d *lineDecoder) setStr(p *string, i int) (int, error) {
	s, j, err := d.str(i)
	*p = s
	return j, err
}

// metrics reads the metrics object (or null) at i.
func (d *lineDecoder) metrics(i int) (int, error) {
	if d.isNull(i) {
		return i + 4, nil
	}
	return jsonx.EachMember(d.b, i, func(key []byte, i int) (int, error) {
		k, known := metricsByTag[string(key)]
		if !known || Metrics[k].set == nil {
			return d.skip(i, 2) // unknown or alias tag: ignored, as every consumer does
		}
		f, j, err := d.metricValue(i)
		if err != nil {
			return j, fmt.Errorf("metrics.%s: %w", Metrics[k].Tag, err)
		}
		Metrics[k].set(&d.l.Values, f)
		return j, nil
	})
}

// metricValue reads a metric entry at i: {"value": …} or a bare number;
// NaN when it is absent (null, a list value, no value).
func (d *lineDecoder) metricValue(i int) (float64, int, error) {
	if i < len(d.b) && d.b[i] == '{' {
		v := nan
		j, err := jsonx.EachMember(d.b, i, func(key []byte, i int) (int, error) {
			if string(key) != "value" {
				return d.skip(i, 3)
			}
			if i < len(d.b) && d.b[i] == '[' {
				v = nan
				return d.skip(i, 3)
			}
			var j int
			var err error
			v, j, err = d.number(i)
			return j, err
		})
		return v, j, err
	}
	return d.number(i)
}

// number reads a finite number, or null (NaN), at i.
func (d *lineDecoder) number(i int) (float64, int, error) {
	if d.isNull(i) {
		return nan, i + 4, nil
	}
	b := d.b
	if i < len(b) && (b[i] == '-' || b[i] >= '0' && b[i] <= '9') {
		if j, ok := jsonx.ScanNumber(b, i); ok {
			f, err := strconv.ParseFloat(string(b[i:j]), 64)
			if err != nil {
				return nan, i, fmt.Errorf("value %s is not a finite number", b[i:j])
			}
			return f, j, nil
		}
	}
	return nan, i, fmt.Errorf("value %s is not a number", d.found(i))
}

// text reads a scalar as InferenceX's processor turns it into text
// (strings as they are, numbers without a trailing .0, true and false as
// Python prints them); null, objects and lists give "".
func (d *lineDecoder) text(i, depth int) (string, int, error) {
	b := d.b
	switch {
	case i < len(b) && b[i] == '"':
		return d.str(i)
	case i < len(b) && (b[i] == '-' || b[i] >= '0' && b[i] <= '9'):
		f, j, err := d.number(i)
		if err != nil {
			return "", j, err
		}
		return strconv.FormatFloat(f, 'f', -1, 64), j, nil
	case jsonx.HasLiteral(b, i, "true"):
		return "True", i + 4, nil
	case jsonx.HasLiteral(b, i, "false"):
		return "False", i + 5, nil
	}
	j, err := d.skip(i, depth)
	return "", j, err
}

// errorValue reads the error member at i (see DecodeRecordLine).
func (d *lineDecoder) errorValue(i int) (int, error) {
	l, b := d.l, d.b
	l.Record.Error, l.ErrorISLSource = nil, ""
	if i < len(b) && b[i] == '{' {
		return d.errorObject(i)
	}
	var msg string
	var j int
	var err error
	switch {
	case i < len(b) && (b[i] == '-' || b[i] >= '0' && b[i] <= '9'):
		var f float64
		if f, j, err = d.number(i); err != nil {
			return j, fmt.Errorf("error: %w", err)
		}
		if f != 0 {
			msg = strconv.FormatFloat(f, 'f', -1, 64)
		}
	case i < len(b) && b[i] == '[':
		if j, err = d.skip(i, 1); err == nil && b[jsonx.SkipSpace(b, i+1)] != ']' {
			msg = string(b[i:j])
		}
	case jsonx.HasLiteral(b, i, "false"):
		j = i + 5
	default:
		msg, j, err = d.text(i, 1)
	}
	if err != nil {
		return j, err
	}
	if msg != "" {
		l.Record.Error = &Error{Message: msg}
	}
	return j, nil
}

// errorObject reads an error object at i.
func (d *lineDecoder) errorObject(i int) (int, error) {
	var e Error
	var codeText, class, status, alt string
	members := 0
	j, err := jsonx.EachMember(d.b, i, func(key []byte, i int) (int, error) {
		members++
		var j int
		var err error
		switch k := string(key); k {
		case "code":
			var n int64
			if n, j, err = d.integer(i); err == nil && !d.isNull(i) {
				if n == 0 || n != int64(int(n)) {
					codeText, e.Code = strconv.FormatInt(n, 10), 0
				} else {
					codeText, e.Code = "", int(n)
				}
				return j, nil
			}
			e.Code = 0
			codeText, j, err = d.text(i, 2)
		case "type":
			e.Type, j, err = d.text(i, 2)
		case "error_type":
			e.ServerType, j, err = d.text(i, 2)
		case "message":
			e.Message, j, err = d.text(i, 2)
		case "error":
			alt, j, err = d.text(i, 2)
		case "class":
			class, j, err = d.text(i, 2)
		case "status":
			status, j, err = d.text(i, 2)
		case "details":
			j, err = d.errorDetails(i, &e)
		default:
			j, err = d.skip(i, 2)
		}
		return j, fieldErr("error.", key, err)
	})
	if err != nil || members == 0 {
		return j, err
	}
	if e.Message == "" {
		e.Message = alt
	}
	if e.Type == "" && e.ServerType == "" && e.Code == 0 {
		for _, s := range [...]string{codeText, class, status} {
			if s != "" {
				e.Type = s
				break
			}
		}
	}
	d.l.Record.Error = &e
	return j, nil
}

// errorDetails reads error.details: an object whose category and
// error_isl_source are read; any other value is skipped.
func (d *lineDecoder) errorDetails(i int, e *Error) (int, error) {
	if i >= len(d.b) || d.b[i] != '{' {
		return d.skip(i, 2)
	}
	return jsonx.EachMember(d.b, i, func(key []byte, i int) (int, error) {
		var j int
		var err error
		switch string(key) {
		case "category":
			e.Category, j, err = d.text(i, 3)
		case "error_isl_source":
			d.l.ErrorISLSource, j, err = d.text(i, 3)
		default:
			j, err = d.skip(i, 3)
		}
		return j, fieldErr("error.details.", key, err)
	})
}

// ErrorCategory is the category InferenceX's processor files a failed
// record under: the first non-empty of the error's type, error_type and
// code, else the first line of its message up to the first colon (at
// most 120 characters), else "unknown".
func ErrorCategory(e *Error) string {
	switch {
	case e.Type != "":
		return e.Type
	case e.ServerType != "":
		return e.ServerType
	case e.Code != 0:
		return strconv.Itoa(e.Code)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(e.Message), "\n")
	first, _, _ = strings.Cut(first, ":")
	if first == "" {
		return "unknown"
	}
	if r := []rune(first); len(r) > 120 {
		first = string(r[:120])
	}
	return first
}
