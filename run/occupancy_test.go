package run_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/htmlreport"
	"github.com/agentperf/agentperf/run"
)

// TestAchievedConcurrencyAgainstTheSim: a run against the simulator
// reports the requests it had in flight per phase, and the figures agree
// with the records: the mean is the records' in-flight time inside the
// window over its length (summed record by record here, not swept), and
// the idle share is the window less the union of the records' spans.
// The summary says them beside --concurrency, and report.html shows them.
func TestAchievedConcurrencyAgainstTheSim(t *testing.T) {
	t.Parallel()
	var log lockedBuffer
	s := run.NewSpec()
	s.Corpus.Traces = dataset.Synthesize(dataset.SynthOptions{Seed: 1, Traces: 6, MinTurns: 4, MaxTurns: 8, TimeScale: 0.02})
	s.Replay.URL, s.Replay.Models = "sim://?decode-base-ms=2", []string{"demo"}
	s.Replay.Concurrency, s.Replay.Seed, s.Replay.Streaming = 4, 7, true
	s.Replay.BenchmarkDuration, s.Replay.TraceIdleGapCap = 1500*time.Millisecond, 50*time.Millisecond
	s.OutputDir, s.NoPlot, s.Log = t.TempDir(), true, &log
	out, err := run.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	agg, err := metrics.ReadAggregateFile(out.Dir)
	if err != nil {
		t.Fatal(err)
	}
	ac, _ := agg.Metadata.Agentperf["achieved_concurrency"].(map[string]any)
	prof, _ := ac["profiling"].(map[string]any)
	if prof == nil {
		t.Fatalf("metadata.agentperf.achieved_concurrency = %v", ac)
	}
	num := func(k string) float64 {
		v, ok := metrics.JSONFloat(prof[k])
		if !ok {
			t.Fatalf("achieved_concurrency.profiling.%s = %v", k, prof[k])
		}
		return v
	}
	t0, ok0 := metrics.JSONInt(prof["window_start_ns"])
	t1, ok1 := metrics.JSONInt(prof["window_end_ns"])
	if !ok0 || !ok1 || t1 <= t0 {
		t.Fatalf("achieved_concurrency.profiling window %v .. %v", prof["window_start_ns"], prof["window_end_ns"])
	}
	f, err := os.Open(filepath.Join(out.Dir, metrics.FileRecords))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var busy, spans [][2]int64
	if _, err := metrics.ReadRecords(f, metrics.FileRecords, false, func(l *metrics.RecordLine) error {
		a, b := max(l.Record.RequestStartNs, t0), min(l.Record.RequestEndNs, t1)
		if b > a {
			busy = append(busy, [2]int64{a, b})
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var inFlight float64
	for _, x := range busy {
		inFlight += float64(x[1] - x[0])
	}
	// The union of the spans, by sorting them by start.
	spans = append(spans, busy...)
	for i := 1; i < len(spans); i++ {
		for j := i; j > 0 && spans[j][0] < spans[j-1][0]; j-- {
			spans[j], spans[j-1] = spans[j-1], spans[j]
		}
	}
	var covered, end int64 = 0, t0
	for _, x := range spans {
		a := max(x[0], end)
		if x[1] > a {
			covered += x[1] - a
			end = x[1]
		}
	}
	span := float64(t1 - t0)
	mean, idle := inFlight/span, 1-float64(covered)/span
	if math.Abs(num("mean_requests_in_flight")-mean) > 1e-9 || math.Abs(num("idle_share")-idle) > 1e-9 || !(mean > 0) {
		t.Errorf("achieved_concurrency.profiling mean %v idle %v; from the records: mean %v idle %v", prof["mean_requests_in_flight"], prof["idle_share"], mean, idle)
	}
	if _, ok := ac["warmup"].(map[string]any); !ok {
		t.Errorf("no warmup entry in %v", ac)
	}
	var sum bytes.Buffer
	out.WriteSummary(&sum)
	want := "requests in flight (this client, exact from the records' start and end times; beside --concurrency 4 lanes, which are trace trees replayed at a time, not requests: a lane waits between turns, and its subagents add requests): profiling mean "
	if !strings.Contains(sum.String(), want) || !strings.Contains(sum.String(), "; warmup mean ") {
		t.Errorf("summary lacks the achieved concurrency:\n%s", sum.String())
	}
	page, err := os.ReadFile(filepath.Join(out.Dir, htmlreport.FileName))
	if err != nil || !bytes.Contains(page, []byte("requests in flight, mean / max (profiling window")) || !bytes.Contains(page, []byte("time with no request in flight (profiling window)")) {
		t.Errorf("report.html lacks the achieved concurrency (%v)", err)
	}
}
