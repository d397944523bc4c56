package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAddWarningsKeepsTheRest: AddWarnings appends to metadata.warnings
// and leaves every other byte of the file as Finish wrote it; Recompute keeps
// the warnings.
func TestAddWarningsKeepsTheRest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runFixture(t, dir)
	before := readFile(t, dir, FileAggregateJSON)
	if err := AddWarnings(dir, "metrics_plots.png was not rendered: boom"); err != nil {
		t.Fatal(err)
	}
	if err := AddWarnings(dir, "second"); err != nil {
		t.Fatal(err)
	}
	after := readFile(t, dir, FileAggregateJSON)
	agg := decodeJSON(t, after)
	w, _ := agg["metadata"].(map[string]any)["warnings"].([]any)
	// The fixture fails 1 of its 6 profiling requests: Finish wrote the
	// error-rate warning first.
	if len(w) != 3 || !strings.HasPrefix(w[0].(string), "error rate 16.67 %: 1 of the 6 profiling requests") ||
		w[1] != "metrics_plots.png was not rendered: boom" || w[2] != "second" {
		t.Fatalf("metadata.warnings = %v", w)
	}
	// Everything before the metadata block is unchanged.
	cut := bytes.Index(before, []byte(`  "metadata": {`))
	if !bytes.Equal(before[:cut], after[:cut]) {
		t.Error("AddWarnings changed content outside metadata")
	}
	if _, err := RecomputeWith(dir, nil, RecomputeOptions{Location: time.UTC}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir, FileAggregateJSON); !bytes.Equal(got, after) {
		t.Errorf("Report did not keep the warnings:\n%s", got)
	}
}

// TestReportAiperfFolder: Report works on a folder aiperf wrote: bare
// metric numbers and {value, unit} objects, list-valued metrics, no
// agentperf extras; keys it does not regenerate are kept.
func TestReportAiperfFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lines := []string{
		`{"metadata":{"session_num":0,"request_start_ns":1000000000,"request_end_ns":1300000000,"benchmark_phase":"profiling","worker_id":"w","record_processor_id":"r","was_cancelled":false},"metrics":{"time_to_first_token":{"value":100.0,"unit":"ms"},"request_latency":{"value":300.0,"unit":"ms"},"inter_chunk_latency":{"value":[1.0,2.0],"unit":"ms"},"input_sequence_length":{"value":50,"unit":"tokens"},"output_sequence_length":{"value":5,"unit":"tokens"}}}`,
		`{"metadata":{"session_num":1,"request_start_ns":1100000000,"request_end_ns":1500000000},"metrics":{"time_to_first_token":200.0,"request_latency":400.0,"input_sequence_length":70,"output_sequence_length":7}}`,
		`{"metadata":{"session_num":2,"request_start_ns":1200000000,"request_end_ns":1200000001,"benchmark_phase":"profiling"},"metrics":{"error_isl":{"value":9,"unit":"tokens"}},"error":{"code":"ECONN","type":null,"message":"boom"}}`,
		`{"metadata":{"session_num":3,"request_start_ns":100,"request_end_ns":200,"benchmark_phase":"warmup"},"metrics":{}}`,
	}
	if err := os.WriteFile(filepath.Join(dir, FileRecords), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := map[string]any{
		"schema_version": "1.4", "aiperf_version": "0.12.0", "benchmark_id": "abc",
		"start_time": "2026-08-12T14:03:07.512034", "end_time": "2026-08-12T14:33:07.911210",
		"request_count": map[string]any{"unit": "requests", "avg": 999.0}, // stale: recomputed
		"branch_stats":  map[string]any{"children_spawned": 3},            // kept
		"metadata": map[string]any{"scenario": "inferencex-agentx-mvp", "submission_valid": true,
			"metric_duration_coverage": []any{map[string]any{"required_ratio": 0.9}}},
	}
	b, _ := json.Marshal(old)
	if err := os.WriteFile(filepath.Join(dir, FileAggregateJSON), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	s, err := RecomputeWith(dir, &out, RecomputeOptions{Location: time.UTC})
	if err != nil {
		t.Fatalf("Report: %v", err)
	}
	if s.RequestCount != 2 || s.ErrorRequestCount != 1 || s.WarmupRequestCount != 1 {
		t.Errorf("counts %d/%d/%d", s.RequestCount, s.ErrorRequestCount, s.WarmupRequestCount)
	}
	if st := mustStat(t, s, "time_to_first_token"); st.Avg != 150 {
		t.Errorf("ttft avg %v", st.Avg)
	}
	// benchmark duration = (1.1 s + 400 ms) − 1.0 s = 0.5 s.
	if !near(s.BenchmarkDuration, 0.5) {
		t.Errorf("duration %v", s.BenchmarkDuration)
	}
	agg := decodeJSON(t, readFile(t, dir, FileAggregateJSON))
	if agg["aiperf_version"] != "0.12.0" || agg["start_time"] != "2026-08-12T14:03:07.512034" || agg["end_time"] != "2026-08-12T14:33:07.911210" {
		t.Errorf("run context not kept: %v %v %v", agg["aiperf_version"], agg["start_time"], agg["end_time"])
	}
	if rc := agg["request_count"].(map[string]any)["avg"]; rc != json.Number("2.0") {
		t.Errorf("request_count %v", rc)
	}
	if bs, ok := agg["branch_stats"].(map[string]any); !ok || bs["children_spawned"] != json.Number("3") {
		t.Errorf("branch_stats not kept: %v", agg["branch_stats"])
	}
	md := agg["metadata"].(map[string]any)
	if md["metric_duration_coverage"] == nil || md["scenario"] != "inferencex-agentx-mvp" {
		t.Errorf("metadata not kept: %v", md)
	}
	es := agg["error_summary"].([]any)[0].(map[string]any)["error_details"].(map[string]any)
	if es["type"] != "ECONN" || es["message"] != "boom" {
		t.Errorf("non-integer error code: %v", es)
	}
	if _, has := agg["theoretical_prefix_cache_hit"]; has {
		t.Error("theoretical_prefix_cache_hit without block data")
	}
	if !strings.Contains(out.String(), "WARNING: theoretical_prefix_cache_hit") {
		t.Errorf("missing-theoretical warning not shown:\n%s", out.String())
	}
}

// TestReportPartialRun: a run that died before Finish can still be
// summarised from its .partial stream, with a warning; a line cut
// mid-write at its end is left out. It is never reported as a clean run:
// cancelled, and the accounting is not claimed to add up (how many
// requests were sent is not known).
func TestReportPartialRun(t *testing.T) {
	t.Parallel()
	for _, torn := range []bool{false, true} {
		dir := t.TempDir()
		c, err := NewCollector(dir, CollectorOptions{Now: fixedClock(t0)})
		if err != nil {
			t.Fatal(err)
		}
		c.Add(okRecord(0, 0, 100, 10, 1000, 11, 1, 2))
		c.Add(okRecord(1, 0, 200, 10, 1000, 11, 1, 2))
		if err := c.Flush(); err != nil { // the process dies here
			t.Fatal(err)
		}
		if torn {
			f, err := os.OpenFile(filepath.Join(dir, FileRecords+partialSuffix), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(`{"metadata":{"session_num":3,"x_req`)
			f.Close()
		}
		var out strings.Builder
		s, err := RecomputeWith(dir, &out, RecomputeOptions{Location: time.UTC})
		if !errors.Is(err, ErrAccounting) {
			t.Fatalf("torn %v: err = %v, want the accounting reported as unchecked", torn, err)
		}
		if !strings.Contains(out.String(), "WARNING: recomputed from") || !strings.Contains(out.String(), "run cancelled") {
			t.Errorf("table lacks the warning or the cancellation:\n%s", out.String())
		}
		if s.RequestCount != 2 || len(s.Info.Warnings) != 1 || !strings.Contains(s.Info.Warnings[0], "did not finish") {
			t.Errorf("partial report: %d requests, warnings %v", s.RequestCount, s.Info.Warnings)
		}
		if got := strings.Contains(s.Info.Warnings[0], "cut mid-write"); got != torn {
			t.Errorf("torn %v: warning %q", torn, s.Info.Warnings[0])
		}
		agg := decodeJSON(t, readFile(t, dir, FileAggregateJSON))
		md := agg["metadata"].(map[string]any)
		if w := md["warnings"].([]any); len(w) != 1 {
			t.Errorf("warnings in JSON: %v", w)
		}
		if acct := md["request_accounting"].(map[string]any); agg["was_cancelled"] != true || acct["adds_up"] != false {
			t.Errorf("was_cancelled %v, adds_up %v: a partial run is reported as clean", agg["was_cancelled"], acct["adds_up"])
		}
	}
}
