package metrics

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/internal/codectest"
)

// lineOf is the RecordLine the RecordWriter writes for r.
func lineOf(r *Record, processorID string) RecordLine {
	return RecordLine{Record: *r, Values: Compute(r), ProcessorID: processorID, ErrorISLSource: ErrorISLSource(r)}
}

// written is what a decode of l's line gives back: the fields a line
// carries, by the writer's conventions (a cancelled record without an
// error gets the cancellation error; worker_id from the lane; attempt
// from 2 on; recorded_output_tokens and the blocks when positive;
// source_outer_idx with source_trace_id; error_isl_source with an error).
func written(l RecordLine) RecordLine {
	r := l.Record
	out := Record{
		SessionNum: r.SessionNum, XRequestID: r.XRequestID, XCorrelationID: r.XCorrelationID, ConversationID: r.ConversationID,
		TurnIndex: r.TurnIndex, SourceTraceID: r.SourceTraceID, SourceKind: r.SourceKind, AgentDepth: r.AgentDepth,
		ParentCorrelationID: r.ParentCorrelationID, RootCorrelationID: r.RootCorrelationID, WorkerID: r.WorkerID, Shard: r.Shard,
		Phase: PhaseProfiling, CreditIssuedNs: r.CreditIssuedNs, RequestStartNs: r.RequestStartNs, RequestAckNs: r.RequestAckNs,
		RequestEndNs: r.RequestEndNs, Retried: r.Retried, Cancelled: r.Cancelled, CancellationNs: r.CancellationNs,
		ContextOverflow: r.ContextOverflow,
	}
	if r.Phase == PhaseWarmup {
		out.Phase = PhaseWarmup
	}
	if r.SourceTraceID != "" {
		out.SourceOuterIdx = r.SourceOuterIdx
	}
	if out.WorkerID == "" {
		out.WorkerID = string(appendPadded([]byte("lane_"), r.Lane, 4))
	}
	if r.RecordedOut > 0 {
		out.RecordedOut = r.RecordedOut
	}
	if r.Attempt > 1 {
		out.Attempt = r.Attempt
	}
	if r.TotalBlocks > 0 {
		out.HitBlocks, out.TotalBlocks = r.HitBlocks, r.TotalBlocks
	}
	isl := ""
	if e := recordError(&r); e != nil {
		c := *e
		out.Error, isl = &c, l.ErrorISLSource
	}
	out.Bucket = BucketOf(&out)
	v := l.Values
	a := v.array()
	for i, x := range a {
		if x > maxFinite || x < -maxFinite {
			a[i] = nan
		}
	}
	return RecordLine{Record: out, Values: valuesFromArray(&a), ProcessorID: l.ProcessorID, ErrorISLSource: isl}
}

// sameLine compares two decoded lines, NaN equal to NaN.
func sameLine(a, b *RecordLine) bool {
	ea, eb := a.Record.Error, b.Record.Error
	if (ea == nil) != (eb == nil) || ea != nil && *ea != *eb {
		return false
	}
	ra, rb := a.Record, b.Record
	ra.Error, rb.Error = nil, nil
	if ra != rb || a.ProcessorID != b.ProcessorID || a.ErrorISLSource != b.ErrorISLSource {
		return false
	}
	va, vb := a.Values.array(), b.Values.array()
	for i := range va {
		if va[i] != vb[i] && !(math.IsNaN(va[i]) && math.IsNaN(vb[i])) {
			return false
		}
	}
	return true
}

// oddString turns fuzz bytes into a field value: any bytes, invalid
// UTF-8, quotes, control characters and line separators included.
func oddString(s string, k int) string {
	if s == "" {
		return ""
	}
	return s[k%len(s):] + "\"\\\n\x00\u2028é" + s[:k%len(s)]
}

// FuzzRecordLineRoundTrip: a record line decodes to exactly the fields it
// carries (written), and encoding that again gives the same bytes; every
// number survives its text form and every string, valid UTF-8 or not,
// comes back as the writer escaped it (an invalid byte as U+FFFD).
func FuzzRecordLineRoundTrip(f *testing.F) {
	for _, s := range []uint64{1, 2, 42, 1 << 40} {
		f.Add(s, "")
	}
	f.Add(uint64(7), "w\xff\"x\x01")
	f.Fuzz(func(t *testing.T, seed uint64, s string) {
		recs := randomRecords(seed, 12)
		fix, ovf := fixtureRecords()
		recs = append(append(recs, fix...), ovf)
		rng := rand.New(rand.NewPCG(seed, 3))
		for i, r := range recs {
			r.XRequestID, r.WorkerID, r.Shard = oddString(s, i), oddString(s, i+1), oddString(s, i+2)
			r.Attempt, r.Retried, r.RecordedOut = rng.IntN(4), rng.IntN(2) == 0, rng.IntN(3)-1
			if r.Error != nil && s != "" {
				r.Error.ServerType, r.Error.Message = oddString(s, i+3), oddString(s, i+4)
			}
			l := lineOf(r, oddString(s, i+5))
			if i%5 == 0 {
				l.Values.OSLMismatchPct = math.Inf(1) // never written
			}
			line := AppendRecordLine(nil, &l)
			var got RecordLine
			if err := DecodeRecordLine(bytes.TrimSuffix(line, []byte("\n")), &got); err != nil {
				t.Fatalf("%v\n%s", err, line)
			}
			want := written(l)
			fixUTF8(&want)
			if !sameLine(&got, &want) {
				t.Fatalf("decoded\n%+v\n%+v\nwant\n%+v\n%+v\nfrom %s", got.Record, got.Record.Error, want.Record, want.Record.Error, line)
			}
			if again := AppendRecordLine(nil, &got); !bytes.Equal(again, line) {
				t.Fatalf("re-encoded\n%s\nwas\n%s", again, line)
			}
		}
	})
}

// fixUTF8 replaces each invalid byte of l's strings by U+FFFD, as the
// writer does.
func fixUTF8(l *RecordLine) {
	v := func(s *string) { *s = string([]rune(*s)) }
	r := &l.Record
	for _, s := range []*string{&r.XRequestID, &r.XCorrelationID, &r.ConversationID, &r.SourceTraceID, &r.SourceKind,
		&r.ParentCorrelationID, &r.RootCorrelationID, &r.WorkerID, &r.Shard, &l.ProcessorID, &l.ErrorISLSource} {
		v(s)
	}
	if e := r.Error; e != nil {
		for _, s := range []*string{&e.Type, &e.ServerType, &e.Message, &e.Category} {
			v(s)
		}
	}
}

// FuzzDecodeRecordLine: any bytes either decode or give an error, never a
// panic; what decodes is valid JSON, and its re-encoding is a fixed point
// that keeps the record's bucket and every metric value.
func FuzzDecodeRecordLine(f *testing.F) {
	recs, ovf := fixtureRecords()
	for _, r := range append(recs, ovf) {
		l := lineOf(r, "p")
		f.Add(bytes.TrimSpace(AppendRecordLine(nil, &l)))
	}
	for _, s := range aiperfLines {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"metadata":{},"metrics":{"x":[1,2]},"error":{"code":"E1","class":"C"}}`))
	f.Add([]byte(`{"metrics":{"request_latency":{"value":1e400}}}`))
	f.Add([]byte(`{"metadata":{"was_cancelled":true},"error":[0]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		y, ok := codectest.FixedPoint(t, b, decodeLine, encodeLine)
		if !ok {
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		l, _ := decodeLine(b)
		l2, _ := decodeLine(y)
		if l.Record.Bucket != l2.Record.Bucket || !sameValues(&l.Values, &l2.Values) {
			t.Fatalf("bucket %v → %v or values changed: %s", l.Record.Bucket, l2.Record.Bucket, y)
		}
	})
}

func decodeLine(b []byte) (RecordLine, error) {
	var l RecordLine
	err := DecodeRecordLine(b, &l)
	return l, err
}

func encodeLine(l RecordLine) ([]byte, error) { return AppendRecordLine(nil, &l), nil }

func sameValues(a, b *Values) bool {
	x, y := a.array(), b.array()
	for i := range x {
		if x[i] != y[i] && !(math.IsNaN(x[i]) && math.IsNaN(y[i])) {
			return false
		}
	}
	return true
}

// aiperfLines are records as aiperf writes them (its record schema:
// bare or {value, unit} metrics, list values, worker ids of its own, no
// agentperf keys, error objects with code, type, message, cause).
var aiperfLines = []string{
	`{"metadata":{"session_num":7,"x_request_id":"0b6c","x_correlation_id":"9f1e","conversation_id":"trace-042","turn_index":3,"source_trace_id":"trace-042","source_outer_idx":3,"source_inner_idx":null,"source_kind":"weka_main","credit_issued_ns":1790000000120000000,"request_start_ns":1790000000121500000,"request_ack_ns":1790000000180000000,"request_end_ns":1790000003421500000,"worker_id":"worker_1a2b3c4d","record_processor_id":"record_processor_5e6f7a8b","benchmark_phase":"profiling","phase_index":1,"phase_name":"profiling","was_cancelled":false,"agent_depth":0,"root_correlation_id":"9f1e"},"metrics":{"input_sequence_length":{"value":48211,"unit":"tokens"},"time_to_first_token":{"value":812.4,"unit":"ms"},"request_latency":{"value":3300.0,"unit":"ms"},"inter_chunk_latency":{"value":[8.0,8.1],"unit":"ms"},"output_sequence_length":{"value":311,"unit":"tokens"},"inter_token_latency":{"value":8.025,"unit":"ms"}},"trace_data":{"x":[1,{"y":null}]}}`,
	`{"metadata":{"session_num":9,"x_correlation_id":"c3d4","conversation_id":"trace-108::sa:explore","turn_index":0,"request_start_ns":1790000001000000000,"request_end_ns":1790000001004000000,"worker_id":"worker_1a2b3c4d","record_processor_id":"record_processor_5e6f7a8b","benchmark_phase":"profiling","was_cancelled":false,"agent_depth":1,"parent_correlation_id":"aa11","root_correlation_id":"aa11"},"metrics":{"error_isl":{"value":9120,"unit":"tokens"}},"error":{"message":"{\"error\":\"upstream overloaded\"}","code":503,"type":"Service Unavailable","cause":"x","cause_chain":["A","B"],"details":null}}`,
	`{"metadata":{"session_num":1,"request_start_ns":1100000000,"request_end_ns":1500000000},"metrics":{"time_to_first_token":200.0,"request_latency":400.0,"input_sequence_length":70,"output_sequence_length":7}}`,
}

// TestDecodeRecordLineAiperf: aiperf's records decode to their fields;
// the keys the schema does not know (trace_data, phase_index, cause …)
// are skipped, a list value is absent, bare numbers are values, and a
// record without a phase is profiling.
func TestDecodeRecordLineAiperf(t *testing.T) {
	t.Parallel()
	var l RecordLine
	if err := DecodeRecordLine([]byte(aiperfLines[0]), &l); err != nil {
		t.Fatal(err)
	}
	r := &l.Record
	if r.SessionNum != 7 || r.XRequestID != "0b6c" || r.TurnIndex != 3 || r.SourceOuterIdx != 3 || r.WorkerID != "worker_1a2b3c4d" ||
		l.ProcessorID != "record_processor_5e6f7a8b" || r.RequestStartNs != 1790000000121500000 || r.Bucket != BucketProfilingOK {
		t.Errorf("record %+v", l)
	}
	if l.Values.ISL != 48211 || l.Values.TTFT != 812.4 || l.Values.RequestLatency != 3300 || l.Values.ITL != 8.025 || Has(l.Values.TTST) {
		t.Errorf("values %+v", l.Values)
	}
	if err := DecodeRecordLine([]byte(aiperfLines[1]), &l); err != nil {
		t.Fatal(err)
	}
	if e := l.Record.Error; e == nil || e.Code != 503 || e.Type != "Service Unavailable" || e.Message != `{"error":"upstream overloaded"}` ||
		l.Record.Bucket != BucketProfilingError || l.Values.ErrorISL != 9120 || l.Record.AgentDepth != 1 {
		t.Errorf("error record %+v %+v", l.Record, l.Record.Error)
	}
	if err := DecodeRecordLine([]byte(aiperfLines[2]), &l); err != nil {
		t.Fatal(err)
	}
	if l.Record.Phase != PhaseProfiling || l.Values.TTFT != 200 || l.Values.OSL != 7 || l.Record.Bucket != BucketProfilingOK {
		t.Errorf("bare numbers, no phase: %+v %+v", l.Record, l.Values)
	}
}

// TestDecodeRecordLineErrorField: the error member is a failure as
// InferenceX's processor judges one (present and not null, false, 0, "",
// [] or {}), and files under the category it gives (ErrorCategory).
func TestDecodeRecordLineErrorField(t *testing.T) {
	t.Parallel()
	cases := []struct {
		raw     string
		errored bool
		cat     string
	}{
		{``, false, ""}, {`null`, false, ""}, {`{}`, false, ""}, {`""`, false, ""}, {`false`, false, ""}, {`[]`, false, ""}, {`0`, false, ""}, {`-0.0`, false, ""},
		{`{"type":"HTTPStatusError","message":"500 server error"}`, true, "HTTPStatusError"},
		{`{"code":503,"message":"x"}`, true, "503"},
		{`{"code":0,"message":"x"}`, true, "0"},
		{`{"code":"ECONN","type":null,"message":"boom"}`, true, "ECONN"},
		{`{"code":"E1","error_type":"Timeout"}`, true, "Timeout"},
		{`{"code":500.0}`, true, "500"},
		{`{"type":"","error_type":"Timeout"}`, true, "Timeout"},
		{`{"status":"aborted"}`, true, "aborted"},
		{`{"class":"C","status":"aborted"}`, true, "C"},
		{`{"type":5}`, true, "5"},
		{`{"message":"connection reset: by peer\nsecond line"}`, true, "connection reset"},
		{`{"error":"boom"}`, true, "boom"},
		{`{"message":""}`, true, "unknown"},
		{`{"cause":"x"}`, true, "unknown"},
		{`"plain text failure: detail"`, true, "plain text failure"},
		{`"False"`, true, "False"},
		{`true`, true, "True"},
		{`2.5`, true, "2.5"},
		{`[0]`, true, "[0]"},
		{`{"message":"` + strings.Repeat("é", 200) + `"}`, true, strings.Repeat("é", 120)},
	}
	for _, c := range cases {
		line := `{"metadata":{},"metrics":{}}`
		if c.raw != "" {
			line = `{"metadata":{},"metrics":{},"error":` + c.raw + `}`
		}
		var l RecordLine
		if err := DecodeRecordLine([]byte(line), &l); err != nil {
			t.Errorf("%s: %v", c.raw, err)
			continue
		}
		e := l.Record.Error
		if (e != nil) != c.errored || e != nil && ErrorCategory(e) != c.cat {
			t.Errorf("error %s: decoded %+v (category %q), want errored %v category %q", c.raw, e, func() string {
				if e == nil {
					return ""
				}
				return ErrorCategory(e)
			}(), c.errored, c.cat)
		}
	}
}

// TestDecodeRecordLineErrors: a line that is not a record says which
// field holds what.
func TestDecodeRecordLineErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`not json`, "not a record"},
		{`[1]`, "not a record"},
		{`{"metadata":{"request_start_ns":1.5}}`, "metadata.request_start_ns: expected an integer or null, found 1.5"},
		{`{"metadata":{"turn_index":"3"}}`, `metadata.turn_index: expected an integer or null, found "3"`},
		{`{"metadata":{"request_end_ns":99999999999999999999}}`, "metadata.request_end_ns: the integer 99999999999999999999 is out of range"},
		{`{"metadata":{"worker_id":7}}`, "metadata.worker_id: expected a string or null, found 7"},
		{`{"metadata":{"was_cancelled":"no"}}`, `metadata.was_cancelled: expected true, false or null, found "no"`},
		{`{"metadata":{"benchmark_phase":"cooldown"}}`, `metadata.benchmark_phase: "cooldown" is neither warmup nor profiling`},
		{`{"metadata":{"benchmark_phase":1}}`, `metadata.benchmark_phase: expected a string or null, found 1`},
		{`{"metrics":{"request_latency":{"value":"fast"}}}`, `metrics.request_latency: value "fast" is not a number`},
		{`{"metrics":{"request_latency":[1]}}`, `metrics.request_latency: value a list is not a number`},
		{`{"metrics":{"output_sequence_length":1e400}}`, `metrics.output_sequence_length: value 1e400 is not a finite number`},
		{`{"metadata":{"theoretical_hit_blocks":5,"theoretical_total_blocks":4}}`, "out of range"},
		{`{"metadata":{}} x`, "invalid JSON at byte 16: expected the end of the line after the record"},
		{`{"metadata":{"a":}}`, "invalid JSON at byte 17"},
		{`{"metadata":{}`, "invalid JSON at byte 14: expected ',' or '}', found the end of the text"},
	} {
		var l RecordLine
		err := DecodeRecordLine([]byte(c.in), &l)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.in, err, c.want)
		}
	}
	deep := `{"x":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`
	var l RecordLine
	if err := DecodeRecordLine([]byte(deep), &l); err != nil {
		t.Errorf("10000 levels (encoding/json's limit): %v", err)
	}
	deep = `{"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`
	if err := DecodeRecordLine([]byte(deep), &l); err == nil || json.Valid([]byte(deep)) {
		t.Errorf("10001 levels: %v (json.Valid %v)", err, json.Valid([]byte(deep)))
	}
}
