package metrics

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// decodeJSON decodes one JSON document keeping numbers as json.Number so
// that integers and floats can be told apart.
func decodeJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("decode %.200s: %v", b, err)
	}
	if d.More() {
		t.Fatalf("trailing data after JSON object %.200s", b)
	}
	return m
}

// kind names the JSON type of v: "int", "float", "string", "bool",
// "object", "array", "null".
func kind(v any) string {
	switch x := v.(type) {
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return "float"
		}
		return "int"
	case string:
		return "string"
	case bool:
		return "bool"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case nil:
		return "null"
	}
	return "?"
}

// number accepts an int or a float.
func isNumber(v any) bool { k := kind(v); return k == "int" || k == "float" }

// field checks that m[key] exists with the given kind ("number" = int or float).
func field(t *testing.T, where string, m map[string]any, key, want string) any {
	t.Helper()
	v, ok := m[key]
	if !ok {
		t.Errorf("%s: missing %q", where, key)
		return nil
	}
	if want == "number" && isNumber(v) || kind(v) == want {
		return v
	}
	t.Errorf("%s: %q is %s (%v), want %s", where, key, kind(v), v, want)
	return v
}

// readLines decodes every line of a JSONL file.
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, decodeJSON(t, sc.Bytes()))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSchemaRecordExport reads profile_export.jsonl back and checks every
// metadata field of docs/artifacts.md and the metrics InferenceX reads,
// with their types and units.
func TestSchemaRecordExport(t *testing.T) {
	dir := t.TempDir()
	runFixture(t, dir)
	lines := readLines(t, filepath.Join(dir, FileRecords))
	if len(lines) != 9 {
		t.Fatalf("%d lines, want 9 (5 ok, 1 error, 1 cancelled, 2 warmup; the overflow goes elsewhere)", len(lines))
	}
	metaFields := []struct{ key, kind string }{
		{"session_num", "int"}, {"x_request_id", "string"}, {"x_correlation_id", "string"},
		{"conversation_id", "string"}, {"turn_index", "int"}, {"source_trace_id", "string"},
		{"source_outer_idx", "int"}, {"source_kind", "string"}, {"credit_issued_ns", "int"},
		{"request_start_ns", "int"}, {"request_ack_ns", "int"}, {"request_end_ns", "int"},
		{"worker_id", "string"}, {"record_processor_id", "string"}, {"benchmark_phase", "string"},
		{"was_cancelled", "bool"}, {"context_overflow_skip", "bool"}, {"agent_depth", "int"},
		{"root_correlation_id", "string"},
	}
	// Tags InferenceX's processors, plotter and website read
	// (docs/artifacts.md), with units.
	okMetrics := []struct{ tag, unit, kind string }{
		{"time_to_first_token", "ms", "number"}, {"request_latency", "ms", "number"},
		{"inter_token_latency", "ms", "number"}, {"full_response_inter_token_latency", "ms", "number"},
		{"time_per_output_token", "ms", "number"}, {"input_sequence_length", "tokens", "int"},
		{"output_sequence_length", "tokens", "int"}, {"usage_prompt_cache_read_tokens", "tokens", "int"},
		{"time_to_second_token", "ms", "number"}, {"time_to_first_output_token", "ms", "number"},
		{"decode_duration", "ms", "number"}, {"full_decode_duration", "ms", "number"},
		{"output_token_throughput_per_user", "tokens/sec/user", "number"},
		{"full_response_output_token_throughput_per_user", "tokens/sec/user", "number"},
		{"prefill_throughput_per_user", "tokens/sec/user", "number"},
		{"output_token_count", "tokens", "int"}, {"usage_prompt_tokens", "tokens", "int"},
		{"usage_completion_tokens", "tokens", "int"}, {"usage_total_tokens", "tokens", "int"},
	}
	var seenOK, seenErr, seenCancelled, seenWarmup, seenChild bool
	for i, l := range lines {
		where := "line " + string(rune('1'+i))
		md, _ := field(t, where, l, "metadata", "object").(map[string]any)
		ms, _ := field(t, where, l, "metrics", "object").(map[string]any)
		if md == nil || ms == nil {
			continue
		}
		for _, f := range metaFields {
			field(t, where+" metadata", md, f.key, f.kind)
		}
		if p := md["benchmark_phase"]; p != "profiling" && p != "warmup" {
			t.Errorf("%s: benchmark_phase %v", where, p)
		}
		if md["context_overflow_skip"] != false {
			t.Errorf("%s: context_overflow_skip must be false in profile_export.jsonl", where)
		}
		for tag, raw := range ms {
			m, ok := raw.(map[string]any)
			if !ok {
				t.Errorf("%s: metric %s is not {value, unit}", where, tag)
				continue
			}
			field(t, where+" "+tag, m, "value", "number")
			field(t, where+" "+tag, m, "unit", "string")
			if i, ok := metricByTag(tag); !ok || Metrics[i].Unit != m["unit"] {
				t.Errorf("%s: metric %s has unit %v", where, tag, m["unit"])
			}
		}
		if md["parent_correlation_id"] != nil {
			field(t, where, md, "parent_correlation_id", "string")
			seenChild = true
		}
		errObj, hasErr := l["error"]
		switch {
		case md["was_cancelled"] == true:
			seenCancelled = true
			field(t, where, md, "cancellation_time_ns", "int")
			if !hasErr {
				t.Errorf("%s: cancelled record without error", where)
			}
		case md["benchmark_phase"] == "warmup":
			seenWarmup = true
		case hasErr:
			seenErr = true
			e, _ := errObj.(map[string]any)
			if e == nil {
				t.Fatalf("%s: error is %v", where, errObj)
			}
			field(t, where+" error", e, "code", "int")
			field(t, where+" error", e, "type", "string")
			field(t, where+" error", e, "message", "string")
			if len(ms) != 1 {
				t.Errorf("%s: error record carries %v, want only error_isl", where, ms)
			}
			field(t, where+" error_isl", ms["error_isl"].(map[string]any), "value", "int")
		default:
			seenOK = true
			for _, m := range okMetrics {
				obj, _ := field(t, where+" metrics", ms, m.tag, "object").(map[string]any)
				if obj == nil {
					continue
				}
				field(t, where+" "+m.tag, obj, "value", m.kind)
				if obj["unit"] != m.unit {
					t.Errorf("%s: %s unit %v, want %s", where, m.tag, obj["unit"], m.unit)
				}
			}
		}
	}
	if !seenOK || !seenErr || !seenCancelled || !seenWarmup || !seenChild {
		t.Errorf("fixture did not exercise every kind of line: ok %v err %v cancelled %v warmup %v child %v",
			seenOK, seenErr, seenCancelled, seenWarmup, seenChild)
	}
	ovf := readLines(t, filepath.Join(dir, FileOverflow))
	if len(ovf) != 1 || ovf[0]["error"] == nil {
		t.Errorf("overflow export: %v", ovf)
	}
}

// statKeys are the keys of a record-metric stat object (docs/artifacts.md).
var statKeys = []string{"unit", "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std", "count", "sum"}

// TestSchemaAggregateExport reads profile_export_aiperf.json back and checks
// the fields of docs/artifacts.md that InferenceX reads or agentperf adds.
func TestSchemaAggregateExport(t *testing.T) {
	dir := t.TempDir()
	runFixture(t, dir)
	raw := readFile(t, dir, FileAggregateJSON)
	if !bytes.HasPrefix(raw, []byte("{\n  \"schema_version\"")) {
		t.Errorf("not 2-space indented: %.40q", raw)
	}
	agg := decodeJSON(t, raw)
	for _, k := range []string{"schema_version", "aiperf_version", "benchmark_id", "start_time", "end_time"} {
		field(t, "top", agg, k, "string")
	}
	for _, k := range []string{"start_time", "end_time"} {
		if _, err := time.Parse("2006-01-02T15:04:05.000000", agg[k].(string)); err != nil {
			t.Errorf("%s %q is not naive ISO with microseconds: %v", k, agg[k], err)
		}
	}
	field(t, "top", agg, "input_config", "object")
	field(t, "top", agg, "run_info", "object")
	field(t, "top", agg, "was_cancelled", "bool")
	es, _ := field(t, "top", agg, "error_summary", "array").([]any)
	for _, e := range es {
		em := e.(map[string]any)
		d, _ := field(t, "error_summary", em, "error_details", "object").(map[string]any)
		field(t, "error_summary", em, "count", "int")
		if d != nil {
			field(t, "error_details", d, "message", "string")
		}
	}
	// Counters read by the validator: {unit: requests, avg}.
	for _, k := range []string{"request_count", "error_request_count", "completed_request_count", "context_overflow_count"} {
		o, _ := field(t, "top", agg, k, "object").(map[string]any)
		if o == nil {
			continue
		}
		field(t, k, o, "avg", "number")
		if o["unit"] != "requests" {
			t.Errorf("%s unit %v", k, o["unit"])
		}
		if _, has := o["count"]; has {
			t.Errorf("%s is a scalar and must have no count", k)
		}
	}
	for k, unit := range map[string]string{"request_throughput": "requests/sec", "output_token_throughput": "tokens/sec",
		"total_token_throughput": "tokens/sec", "input_token_throughput": "tokens/sec", "benchmark_duration": "sec"} {
		o, _ := field(t, "top", agg, k, "object").(map[string]any)
		if o != nil && o["unit"] != unit {
			t.Errorf("%s unit %v, want %s", k, o["unit"], unit)
		}
	}
	tp, _ := field(t, "top", agg, "theoretical_prefix_cache_hit", "object").(map[string]any)
	if tp != nil {
		field(t, "theoretical_prefix_cache_hit", tp, "avg", "number")
		field(t, "theoretical_prefix_cache_hit", tp, "sum", "int")
		field(t, "theoretical_prefix_cache_hit", tp, "count", "int")
		if tp["unit"] != "%" {
			t.Errorf("theoretical_prefix_cache_hit unit %v", tp["unit"])
		}
	}
	for _, tag := range []string{"request_latency", "time_to_first_token", "inter_token_latency", "input_sequence_length", "output_sequence_length"} {
		o, _ := field(t, "top", agg, tag, "object").(map[string]any)
		if o == nil {
			continue
		}
		if len(o) != len(statKeys) {
			t.Errorf("%s has keys %v, want %v", tag, o, statKeys)
		}
		for _, k := range statKeys[1:] {
			field(t, tag, o, k, "number")
		}
		field(t, tag, o, "count", "int")
	}
	md, _ := field(t, "top", agg, "metadata", "object").(map[string]any)
	if md == nil {
		return
	}
	field(t, "metadata", md, "scenario", "string")
	field(t, "metadata", md, "submission_valid", "bool")
	field(t, "metadata", md, "submission_invalid_reasons", "array")
	field(t, "metadata", md, "context_overflow_count", "int")
	ds, _ := field(t, "metadata", md, "dataset", "object").(map[string]any)
	for _, k := range []string{"source_type", "loader", "hf_dataset_name", "hf_split"} {
		field(t, "metadata.dataset", ds, k, "string")
	}
	ra, _ := field(t, "metadata", md, "request_accounting", "object").(map[string]any)
	for _, k := range []string{"sent", "profiling_ok", "profiling_errors", "warmup_ok", "warmup_errors", "context_overflows", "cancelled"} {
		field(t, "request_accounting", ra, k, "int")
	}
	field(t, "request_accounting", ra, "adds_up", "bool")

	// The timeslice export.
	ts := decodeJSON(t, readFile(t, dir, FileTimeslicesJSON))
	sl, _ := field(t, "timeslices", ts, "timeslices", "array").([]any)
	if len(sl) != 3 {
		t.Fatalf("%d timeslices, want 3 (2.5 s profiling window in 1 s slices)", len(sl))
	}
	for i, s := range sl {
		m := s.(map[string]any)
		field(t, "timeslice", m, "start_ns", "int")
		field(t, "timeslice", m, "end_ns", "int")
		_, partial := m["is_complete"]
		if partial != (i == 2) || (partial && m["is_complete"] != false) {
			t.Errorf("slice %d is_complete = %v", i, m["is_complete"])
		}
	}
	field(t, "timeslices", ts, "input_config", "object")
	csv := string(readFile(t, dir, FileTimeslicesCSV))
	if !strings.HasPrefix(csv, "Timeslice,Metric,Unit,Stat,Value\r\n0,") {
		t.Errorf("timeslice CSV header: %.60q", csv)
	}
}
