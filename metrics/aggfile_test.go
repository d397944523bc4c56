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

	"github.com/agentperf/agentperf/internal/codectest"
)

// TestAggregateFileGoldenRoundTrip: the golden aggregate decodes to its
// fields and encodes back to the same bytes.
func TestAggregateFileGoldenRoundTrip(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile(filepath.Join("testdata", "golden", FileAggregateJSON))
	if err != nil {
		t.Fatal(err)
	}
	a, err := DecodeAggregateFile(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Encode()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("re-encoded golden differs (%v):\n%s", err, got)
	}
	rc, ok := a.Stat("request_count")
	if n, _ := rc.Avg.Float(); !ok || n != 5 || rc.Unit != "requests" {
		t.Errorf("request_count %+v", rc)
	}
	ttft, _ := a.Stat("time_to_first_token")
	if p50, _ := ttft.P50.Float(); p50 != 300 || !ttft.Count.Set() {
		t.Errorf("time_to_first_token %+v", ttft)
	}
	md := a.Metadata
	if md.Scenario != "inferencex-agentx-mvp" || md.SubmissionValid == nil || md.RequestAccounting == nil || !md.RequestAccounting.AddsUp ||
		md.RequestAccounting.Sent != 10 || !strings.Contains(string(md.Dataset), `"hf_split": "train"`) || md.Agentperf["concurrency"] != json.Number("3") ||
		a.InputConfig["headers"].(map[string]any)["Authorization"] != redactedPlaceholder || len(a.ErrorSummary) != 1 || a.ErrorSummary[0].Code != 503 {
		t.Errorf("decoded %+v\nmetadata %+v", a, md)
	}
}

// FuzzAggregateFileRoundTrip: the aggregate JSON of any run (with or
// without a scenario, coverage, warmup metrics, errors, extra facts)
// decodes and encodes back to the bytes Finish wrote, and the decoded
// stat objects and accounting are the Summary's.
func FuzzAggregateFileRoundTrip(f *testing.F) {
	for _, s := range []uint64{1, 2, 42} {
		f.Add(s, uint8(30), true)
	}
	f.Add(uint64(7), uint8(0), false)
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, scenario bool) {
		dir := t.TempDir()
		c, err := NewCollector(dir, CollectorOptions{Now: fixedClock(t0), Location: time.UTC, SliceDuration: 700 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range randomRecords(seed, int(n)) {
			c.Add(r)
		}
		info := fixtureInfo()
		info.Extra["nested"] = map[string]any{"b": []any{1.5, "x\"y", nil, true}, "a": struct{ F float64 }{1}}
		info.Warnings = []string{"w1", "w\n2"}
		if scenario {
			info.Coverage = []PhaseCoverage{{PhaseName: "profiling", ExpectedDurationSeconds: 900, RequiredRatio: 0.98, TTFTRatio: float64(seed%100) / 99, ITLRatio: 1}}
			info.Validity.Reasons = []string{"unsafe_override"}
		} else {
			info.Scenario = ""
		}
		s, err := c.Finish(info)
		if err != nil {
			t.Fatal(err)
		}
		want := readFile(t, dir, FileAggregateJSON)
		a, err := ReadAggregateFile(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, err := a.Encode()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("re-encoded aggregate differs (%v):\n%s\nwant\n%s", err, got, want)
		}
		stats := len(s.Metrics) + len(s.Scalars)
		if s.TheoreticalTotalBlocks > 0 {
			stats++
		}
		if len(a.Stats) != stats || len(a.WarmupMetrics) != len(s.WarmupMetrics) || a.Metadata.RequestAccounting.Accounting != s.Info.Accounting ||
			scenario && len(a.Metadata.MetricDurationCoverage) != len(s.Info.Coverage) {
			t.Fatalf("decoded %d stats (want %d), %d warmup, accounting %+v (want %+v)", len(a.Stats), stats, len(a.WarmupMetrics),
				a.Metadata.RequestAccounting.Accounting, s.Info.Accounting)
		}
		for _, m := range s.Metrics {
			st, _ := a.Stat(m.Metric.Tag)
			if avg, _ := st.Avg.Float(); avg != m.Avg || !m.Metric.Int && st.Max.kind != numFloat {
				t.Fatalf("%s: avg %v, want %v", m.Metric.Tag, avg, m.Avg)
			}
		}
	})
}

// FuzzDecodeAggregateFile: any bytes either decode or give an error,
// never a panic; what decodes encodes to a fixed point.
func FuzzDecodeAggregateFile(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "golden", FileAggregateJSON))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Add([]byte(aiperfAggregate))
	f.Add([]byte(`{"x":{"unit":null,"avg":1E5,"count":-0},"y":[null,{"a":1}],"metadata":{"submission_valid":null,"w":{}}}`))
	f.Add([]byte(`{"a":{"unit":"ms"},"a":"again","metadata":{},"metadata":{"scenario":"s"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		codectest.FixedPoint(t, b, DecodeAggregateFile, (*AggregateFile).Encode)
	})
}

// aiperfAggregate is an aggregate as aiperf writes it: its own key order,
// run_info keys of its own, an error with a cause, no agentperf metadata,
// a telemetry block and branch stats the schema does not know.
const aiperfAggregate = `{
  "schema_version": "1.4", "aiperf_version": "0.12.0", "benchmark_id": "3c9d",
  "request_latency": {"unit": "ms", "avg": 5210.4, "p1": 402.1, "p5": 880.0, "p10": 1201.3, "p25": 2400.9, "p50": 4700.2, "p75": 7100.5, "p90": 9300.0, "p95": 11020.7, "p99": 15800.1, "min": 210.0, "max": 22011.3, "std": 3301.2, "count": 4120, "sum": 21466848.0},
  "request_count": {"unit": "requests", "avg": 4120.0},
  "theoretical_prefix_cache_hit": {"unit": "%", "avg": 91.3, "count": 880231, "sum": 803650},
  "telemetry_data": {"gpus": []},
  "input_config": {"endpoint": {"urls": ["http://x:8000"], "model_names": ["m"]}, "phases": [{"kind": "profiling", "concurrency": 64}]},
  "run_info": {"benchmark_id": "3c9d", "trial": 0},
  "was_cancelled": false,
  "error_summary": [{"error_details": {"message": "upstream overloaded", "code": 503, "type": "Service Unavailable", "cause": "x"}, "count": 2}],
  "start_time": "2026-08-12T14:03:07.512034", "end_time": "2026-08-12T14:33:07.911210",
  "branch_stats": {"children_spawned": 3},
  "metadata": {"dataset": {"source_type": "public_dataset", "loader": "semianalysis_cc_traces_weka_062126"}, "scenario": "inferencex-agentx-mvp", "submission_valid": true,
    "metric_duration_coverage": [{"expected_duration_seconds": 1800.0, "required_ratio": 0.98, "ttft_ratio": 0.99, "inter_token_latency_ratio": 0.99}]}
}`

// TestDecodeAggregateFileAiperf: aiperf's aggregate decodes: its stat
// objects in order, its keys the schema does not know kept, its metadata
// without agentperf's keys.
func TestDecodeAggregateFileAiperf(t *testing.T) {
	t.Parallel()
	a, err := DecodeAggregateFile([]byte(aiperfAggregate))
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, s := range a.Stats {
		tags = append(tags, s.Tag)
	}
	if strings.Join(tags, ",") != "request_latency,request_count,theoretical_prefix_cache_hit" {
		t.Errorf("stats %v", tags)
	}
	th, _ := a.Stat("theoretical_prefix_cache_hit")
	if sum, _ := th.Sum.Float(); sum != 803650 || th.Sum.kind != numInt {
		t.Errorf("theoretical %+v", th)
	}
	// Value: a statistic by tag and name; a missing tag or statistic is
	// no value.
	if v, ok := a.Value("theoretical_prefix_cache_hit", "sum"); !ok || v != 803650 {
		t.Errorf("Value(theoretical_prefix_cache_hit, sum) = %v, %v", v, ok)
	}
	if _, ok := a.Value("no_such_tag", "avg"); ok {
		t.Error("Value of a missing tag")
	}
	if _, ok := a.Value("request_count", "p99"); ok {
		t.Error("Value of a missing statistic")
	}
	md := a.Metadata
	if a.Extra["branch_stats"] == nil || a.Extra["telemetry_data"] == nil || a.RunInfoID != "3c9d" || md.RequestAccounting != nil ||
		md.SubmissionValid == nil || !*md.SubmissionValid || len(md.MetricDurationCoverage) != 1 || md.MetricDurationCoverage[0].RequiredRatio != 0.98 ||
		a.ErrorSummary[0].Count != 2 || a.ErrorSummary[0].Type != "Service Unavailable" {
		t.Errorf("decoded %+v\nmetadata %+v", a, md)
	}
	// The dataset keeps aiperf's key order: it is copied as is.
	if ds := string(md.Dataset); strings.Index(ds, "source_type") > strings.Index(ds, "loader") {
		t.Errorf("dataset %s", ds)
	}
}

// TestDecodeAggregateFileErrors: a malformed aggregate names the file and
// the field.
func TestDecodeAggregateFileErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`{"request_count":{"unit":"requests","avg":"many"}}`, `request_count: avg: expected a number, found "many"`},
		{`{"metadata":{"request_accounting":{"sent":1.5}}}`, "metadata: request_accounting: sent: expected a whole number, found 1.5"},
		{`{"metadata":{"warnings":"w"}}`, `metadata: warnings: expected a list, found "w"`},
		{`{"was_cancelled":1}`, "was_cancelled: expected true or false, found the number 1"},
		{`{"x":1e400,"y":{"unit":"s","avg":1e400}}`, "y: avg: the number 1e400 is out of range"},
		{`{"a":1} {}`, "text after the JSON object"},
		{`[1]`, "not a JSON object"},
		{`{"a":`, "not JSON"},
	} {
		_, err := DecodeAggregateFile([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.in, err, c.want)
		}
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, FileAggregateJSON), []byte(`{"benchmark_id":7}`), 0o644)
	_, err := ReadAggregateFile(dir)
	if !errors.Is(err, ErrBadAggregate) || !strings.Contains(err.Error(), filepath.Join(dir, FileAggregateJSON)+": benchmark_id: expected a string") {
		t.Errorf("ReadAggregateFile: %v", err)
	}
	if _, err := ReadAggregateFile(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
