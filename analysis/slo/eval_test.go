package slo

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeRun writes a minimal artifact folder: one record per ttft (ms;
// negative = an error record), ITL 10 ms, OSL 10, and the benchmark
// duration.
func writeRun(t *testing.T, ttfts []float64, duration float64, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	for _, x := range extra {
		b.WriteString(x + "\n")
	}
	for i, v := range ttfts {
		if v < 0 {
			fmt.Fprintf(&b, `{"metadata":{"request_start_ns":1,"request_end_ns":2,"benchmark_phase":"profiling","x_request_id":"e%d"},"metrics":{},"error":{"code":500,"type":"x","message":"boom"}}`+"\n", i)
			continue
		}
		fmt.Fprintf(&b, `{"metadata":{"request_start_ns":1,"request_end_ns":2,"benchmark_phase":"profiling","was_cancelled":false},"metrics":{"time_to_first_token":{"value":%g,"unit":"ms"},"inter_token_latency":{"value":10,"unit":"ms"},"output_sequence_length":{"value":10,"unit":"tokens"},"input_sequence_length":{"value":100,"unit":"tokens"}},"error":null}`+"\n", v)
	}
	if err := os.WriteFile(filepath.Join(dir, "profile_export.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	agg := fmt.Sprintf(`{"benchmark_duration":{"unit":"sec","avg":%g}}`, duration)
	if err := os.WriteFile(filepath.Join(dir, "profile_export_aiperf.json"), []byte(agg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func mustParse(t *testing.T, s string) SLO {
	t.Helper()
	o, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestEvaluate(t *testing.T) {
	t.Parallel()
	ttfts := make([]float64, 0, 101)
	for i := range 100 {
		ttfts = append(ttfts, float64(i+1)*10) // 10..1000 ms
	}
	ttfts = append(ttfts, -1) // one error of 101
	warm := `{"metadata":{"request_start_ns":1,"request_end_ns":2,"benchmark_phase":"warmup"},"metrics":{"time_to_first_token":{"value":99999,"unit":"ms"}},"error":null}`
	cancelled := `{"metadata":{"request_start_ns":1,"request_end_ns":2,"benchmark_phase":"profiling","was_cancelled":true},"metrics":{},"error":{"code":499,"type":"cancelled","message":"x"}}`
	dir := writeRun(t, ttfts, 10, warm, cancelled)
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Requests() != 100 || run.Errors != 1 || run.Cancelled != 1 {
		t.Fatalf("Load: %d requests, %d errors, %d cancelled; want 100, 1, 1 (the warmup record left out)", run.Requests(), run.Errors, run.Cancelled)
	}
	for _, tc := range []struct {
		slo      string
		met      bool
		observed []float64
		good     int
	}{
		// The failed request counts as a value above every threshold: the
		// 101 values are 10..1000 ms and +Inf, whose numpy-linear p99
		// (rank 99) is 1000 ms and p50 (rank 50) 510 ms.
		{"ttft.p99<=1s", true, []float64{1000}, 100},
		{"ttft.p99<=990ms", false, []float64{1000}, 99},
		{"ttft.p50<=500ms,itl.p99<=10ms", false, []float64{510, 10}, 50},
		{"errors<=1%", true, []float64{100.0 / 101}, 100},
		{"errors<0.5%", false, []float64{100.0 / 101}, 100},
		{"request_throughput>=10,output_token_throughput>=100", true, []float64{10, 100}, 100},
		{"total_token_throughput>1100", false, []float64{1100}, 100},
		// One failed request of 101 decides the max and the average, and
		// under >= the min.
		{"ttft.max<=1s,ttft.min>=10ms,ttft.avg<=505ms", false, []float64{math.Inf(1), math.Inf(-1), math.Inf(1)}, 50},
		{"ttft.min<=10ms", true, []float64{10}, 1},
		// No record has a TTST: the failed request is its one sample.
		{"ttst.p99<=1s", false, []float64{math.Inf(1)}, 100},
	} {
		res := mustParse(t, tc.slo).Evaluate(run)
		if res.Met != tc.met {
			t.Errorf("%s: Met = %v, want %v (%v)", tc.slo, res.Met, tc.met, res.Failed())
		}
		for i, want := range tc.observed {
			got := res.Terms[i].Observed
			if !(got == want || math.Abs(got-want) < 1e-9 || math.IsNaN(got) && math.IsNaN(want)) {
				t.Errorf("%s: term %d observed %v, want %v", tc.slo, i, got, want)
			}
		}
		if res.Good != tc.good || math.Abs(res.Goodput-float64(tc.good)/10) > 1e-12 || res.Throughput != 10 {
			t.Errorf("%s: good %d goodput %v throughput %v; want %d, %v, 10", tc.slo, res.Good, res.Goodput, res.Throughput, tc.good, float64(tc.good)/10)
		}
	}
}

// TestEvaluatePoolsRepeats: two repeats are judged on their pooled
// records. Their p99s are 99 ms and 990 ms; the pooled p99 is near the
// slow run's top, nowhere near the 544.5 ms average of the two.
func TestEvaluatePoolsRepeats(t *testing.T) {
	t.Parallel()
	fast, slow := make([]float64, 100), make([]float64, 100)
	for i := range 100 {
		fast[i], slow[i] = float64(i+1), float64(i+1)*10
	}
	run, err := Load(writeRun(t, fast, 5), writeRun(t, slow, 5))
	if err != nil {
		t.Fatal(err)
	}
	res := mustParse(t, "ttft.p99<=600ms").Evaluate(run)
	if got := res.Terms[0].Observed; math.Abs(got-980.1) > 1e-9 {
		t.Errorf("pooled p99 = %v, want 980.1 (the percentile of all 200 records)", got)
	}
	if res.Met {
		t.Error("the pooled p99 meets the objective: the repeats were averaged")
	}
	if res.Throughput != 20 {
		t.Errorf("throughput %v, want 200 requests / 10 s = 20", res.Throughput)
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	dir := writeRun(t, []float64{1}, 1)
	os.WriteFile(filepath.Join(dir, "profile_export.jsonl"), []byte("{not json\n"), 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "profile_export.jsonl:1") {
		t.Errorf("malformed line: err = %v, want one naming the file and line", err)
	}
	if _, err := Load(t.TempDir()); err == nil {
		t.Error("empty folder: no error")
	}
}

// TestLoadReadsRecordsAsAiperfWritesThem: the records are read by the one
// record decoder, so aiperf's shapes judge too: bare-number metrics, a
// list value (inter_chunk_latency, absent), no phase (profiling).
func TestLoadReadsRecordsAsAiperfWritesThem(t *testing.T) {
	t.Parallel()
	dir := writeRun(t, nil, 2,
		`{"metadata":{"request_end_ns":9,"request_start_ns":5,"credit_issued_ns":4},"metrics":{"time_to_first_token":120,"inter_chunk_latency":{"value":[1.0,2.0],"unit":"ms"}}}`,
		`{"metadata":{"request_start_ns":1,"request_end_ns":2,"benchmark_phase":"profiling"},"metrics":{"time_to_first_token":{"value":80,"unit":"ms"}}}`)
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	res := mustParse(t, "ttft.max<=100ms").Evaluate(run)
	if run.Requests() != 2 || res.Met || res.Terms[0].Observed != 120 || len(run.Lateness) != 1 || run.Lateness[0] != 1e-6 {
		t.Errorf("%d requests, ttft.max %v, lateness %v", run.Requests(), res.Terms[0].Observed, run.Lateness)
	}
}

// TestFailedRequestsCountAgainstEveryTerm (issue 34, case 3): 20 of 24
// requests failed and the 4 that succeeded were fast. Without an errors
// term the objective used to be "met" on the 4; a failed request counts
// as a value worse than any threshold, whatever the direction.
func TestFailedRequestsCountAgainstEveryTerm(t *testing.T) {
	t.Parallel()
	ttfts := []float64{10, 11, 12, 13}
	for range 20 {
		ttfts = append(ttfts, -1)
	}
	run, err := Load(writeRun(t, ttfts, 10))
	if err != nil {
		t.Fatal(err)
	}
	for _, expr := range []string{"ttft.p50<=2s", "ttft.p99<=2s", "ttft.avg<=2s", "input_sequence_length.p10>=1", "ttft.p50<=2s,itl.p90<=1s"} {
		res := mustParse(t, expr).Evaluate(run)
		if res.Met || res.Undecided {
			t.Errorf("%s with 20 of 24 requests failed: met %v, undecided %v (%v); want failed", expr, res.Met, res.Undecided, res.Failed())
		}
		for _, tr := range res.Terms {
			if !tr.Judged || tr.Met || tr.Failed != 20 || tr.Samples != 24 || !math.IsInf(tr.Observed, 0) {
				t.Errorf("%s: %s judged %v met %v, %d failed of %d samples, observed %v; want judged, not met, 20 of 24, infinite",
					expr, tr.Name(), tr.Judged, tr.Met, tr.Failed, tr.Samples, tr.Observed)
			}
		}
		if f := res.Failed(); len(f) == 0 || !strings.Contains(f[0], "decided by failed requests (20 of 24 samples failed") {
			t.Errorf("%s: Failed() = %q", expr, f)
		}
	}
	// The p99 has 24 of the 100 samples it needs, but no outcome of the
	// missing 76 could make it pass: it is judged, and says so.
	res := mustParse(t, "ttft.p99<=2s").Evaluate(run)
	if tr := res.Terms[0]; !tr.TooFew || tr.MinSamples != 100 || !strings.Contains(res.Failed()[0], "fewer than the 100 a p99 needs, but the failed requests decide it") {
		t.Errorf("p99 on 24 samples: too few %v, min %d, %q", tr.TooFew, tr.MinSamples, res.Failed())
	}
}

// TestTooFewSamplesAreNotJudged (issue 34, case 3): a p99 judged on 13
// requests is neither met nor failed; a term that fails on enough samples
// still fails the objective.
func TestTooFewSamplesAreNotJudged(t *testing.T) {
	t.Parallel()
	ttfts := make([]float64, 13)
	for i := range ttfts {
		ttfts[i] = 100
	}
	run, err := Load(writeRun(t, ttfts, 10))
	if err != nil {
		t.Fatal(err)
	}
	res := mustParse(t, "ttft.p99<=2s,ttft.p50<=2s").Evaluate(run)
	tr := res.Terms[0]
	if res.Met || !res.Undecided || tr.Judged || tr.Met || !tr.TooFew || tr.Samples != 13 || tr.MinSamples != 100 {
		t.Errorf("p99 on 13 samples: met %v undecided %v; term judged %v met %v too few %v, %d of %d samples", res.Met, res.Undecided, tr.Judged, tr.Met, tr.TooFew, tr.Samples, tr.MinSamples)
	}
	if !res.Terms[1].Met {
		t.Errorf("p50 on 13 samples (needs 2): %+v", res.Terms[1])
	}
	if f := res.Failed(); len(f) != 1 || !strings.Contains(f[0], "not judged: 13 samples, a p99 needs at least 100") {
		t.Errorf("Failed() = %q", f)
	}
	res = mustParse(t, "ttft.p99<=2s,ttft.p50<=10ms").Evaluate(run)
	if res.Met || res.Undecided {
		t.Errorf("p50 fails on enough samples: met %v undecided %v, want a failed objective", res.Met, res.Undecided)
	}
}

func TestMinSamples(t *testing.T) {
	t.Parallel()
	for stat, want := range map[string]int{"p99": 100, "p1": 100, "p95": 20, "p5": 20, "p90": 10, "p10": 10, "p75": 4, "p25": 4, "p50": 2, "avg": 1, "min": 1, "max": 1, "std": 2, "": 1} {
		if got := MinSamples(stat); got != want {
			t.Errorf("MinSamples(%q) = %d, want %d", stat, got, want)
		}
	}
}

// TestOverflowIsNotAFailure: a profiling record flagged as a context
// overflow is, as the tally counts it, neither a success nor a failure:
// it used to count as a failed request (a worst value in every term); it
// is now left out of every figure, as a cancelled one is, and counted.
func TestOverflowIsNotAFailure(t *testing.T) {
	t.Parallel()
	dir := writeRun(t, []float64{10, 11}, 2,
		`{"metadata":{"request_end_ns":2,"benchmark_phase":"profiling","context_overflow_skip":true,"request_start_ns":5,"credit_issued_ns":4},"metrics":{},"error":{"code":400,"type":"BadRequestError","message":"context length exceeded"}}`,
		`{"metadata":{"request_end_ns":2,"request_start_ns":1,"benchmark_phase":"profiling","was_cancelled":true},"metrics":{},"error":{"type":"cancelled"}}`)
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Requests() != 2 || run.Errors != 0 || run.Overflows != 1 || run.Cancelled != 1 || len(run.Lateness) != 1 {
		t.Errorf("requests %d, errors %d, overflows %d, cancelled %d, lateness %v; want 2 0 1 1 and the overflow's lateness",
			run.Requests(), run.Errors, run.Overflows, run.Cancelled, run.Lateness)
	}
	if res := mustParse(t, "ttft.max<=100ms").Evaluate(run); !res.Met {
		t.Errorf("ttft.max<=100ms on two fast successes and an overflow: %v", res.Failed())
	}
}
