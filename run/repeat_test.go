package run_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/run"
)

func TestPoolStudentT(t *testing.T) {
	t.Parallel()
	p := run.Pool([]float64{1, 2, 3}, 0.95, "ms")
	// mean 2, s 1, se 1/√3, t(0.975, 2) = 4.302653
	if math.Abs(p.Mean-2) > 1e-12 || math.Abs(p.Std-1) > 1e-12 || math.Abs(p.TCritical-4.302653) > 1e-5 {
		t.Fatalf("%+v", p)
	}
	if w := 4.302653 / math.Sqrt(3); math.Abs(p.CILow-(2-w)) > 1e-5 || math.Abs(p.CIHigh-(2+w)) > 1e-5 {
		t.Errorf("interval [%v, %v]", p.CILow, p.CIHigh)
	}
	if one := run.Pool([]float64{5}, 0.95, ""); one.CILow != 5 || one.CIHigh != 5 || one.Std != 0 {
		t.Errorf("one value: %+v", one)
	}
}

// TestNumProfileRuns: three profile runs on the simulator give three run
// folders with every artifact, and a pooled summary whose interval of
// every headline metric contains each run's value (the TTFT, ITL and
// latency medians among them).
func TestNumProfileRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("three 2 s runs")
	}
	t.Parallel()
	var log lockedBuffer
	s := run.NewSpec()
	s.Corpus.Traces = dataset.Synthesize(dataset.SynthOptions{Seed: 5, Traces: 10, MinTurns: 6, MaxTurns: 12, TimeScale: 0.01})
	s.Replay.URL, s.Replay.Models = "sim://?decode-base-ms=1", []string{"demo"}
	s.Replay.Concurrency, s.Replay.Seed, s.Replay.Streaming = 4, 11, true
	s.Replay.BenchmarkDuration, s.Replay.TraceIdleGapCap = 2*time.Second, 10*time.Millisecond
	s.OutputDir, s.NoPlot, s.Log = t.TempDir(), true, &log
	out, err := run.RunRepeated(context.Background(), s, run.RepeatOptions{Runs: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Runs) != 3 || out.Summary.RunsDone != 3 || out.ExitCode() != run.ExitOK {
		t.Fatalf("runs %d, done %d, exit %d; log:\n%s", len(out.Runs), out.Summary.RunsDone, out.ExitCode(), log.String())
	}
	for k := 1; k <= 3; k++ {
		dir := filepath.Join(s.OutputDir, "profile_runs", "run_000"+string(rune('0'+k)))
		for _, f := range []string{"profile_export.jsonl", "profile_export_aiperf.json", "report.html"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("run %d: %v", k, err)
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(s.OutputDir, "aggregate", "profile_export_aiperf_aggregate.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum run.PooledSummary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"time_to_first_token.p50", "inter_token_latency.p50", "request_latency.p50", "output_token_throughput.avg"} {
		p, ok := sum.Metrics[name]
		if !ok || p.N != 3 || len(p.Values) != 3 {
			t.Errorf("%s: %+v", name, p)
			continue
		}
		if !(p.CIHigh > p.CILow) {
			t.Errorf("%s: empty interval [%v, %v] (values %v)", name, p.CILow, p.CIHigh, p.Values)
		}
		for i, v := range p.Values {
			if v < p.CILow || v > p.CIHigh {
				t.Errorf("%s: run %d's %v outside [%v, %v]", name, i+1, v, p.CILow, p.CIHigh)
			}
		}
	}
	var w strings.Builder
	out.WriteSummary(&w)
	if !strings.Contains(w.String(), "time_to_first_token.p50") || !strings.Contains(w.String(), "pooled over 3 profile runs") {
		t.Errorf("summary:\n%s", w.String())
	}
}

func TestRepeatConvergenceStops(t *testing.T) {
	if testing.Short() {
		t.Skip("runs")
	}
	t.Parallel()
	s := run.NewSpec()
	s.Corpus.Traces = dataset.Synthesize(dataset.SynthOptions{Seed: 5, Traces: 10, MinTurns: 6, MaxTurns: 12, TimeScale: 0.01})
	s.Replay.URL, s.Replay.Models = "sim://?zero-latency=true", []string{"demo"}
	s.Replay.Concurrency, s.Replay.Seed = 2, 11
	// 2 s: under -race on a loaded machine a 0.5 s run could end with
	// no profiling request done, a failed run (exit 1) that stops the
	// repeats before the convergence is judged.
	s.Replay.BenchmarkDuration, s.Replay.TraceIdleGapCap = 2*time.Second, 10*time.Millisecond
	s.OutputDir, s.NoPlot = t.TempDir(), true
	// A threshold nothing can miss: the runs stop at the third.
	out, err := run.RunRepeated(context.Background(), s, run.RepeatOptions{Runs: 6, ConvergenceMetric: "request_throughput.avg", ConvergenceThreshold: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	if out.Summary.RunsDone != 3 || !strings.Contains(out.Summary.StoppedEarly, "converged after 3 runs") {
		t.Errorf("done %d, stopped early %q", out.Summary.RunsDone, out.Summary.StoppedEarly)
	}
	if _, err := run.RunRepeated(context.Background(), s, run.RepeatOptions{Runs: 3, ConvergenceMetric: "ttft"}); err == nil || !strings.Contains(err.Error(), "time_to_first_token.p50") {
		t.Errorf("unknown convergence metric: %v", err)
	}
}
