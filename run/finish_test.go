package run_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/plot"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/servermetrics"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// simRun replays a small synthetic corpus against the simulator (window
// maxModelLen; 0: the default, -1: the median request) into a collector
// on dir.
func simRun(t *testing.T, dir string, maxModelLen int) (*replay.Result, *metrics.Collector, *prompttext.Synthesizer) {
	t.Helper()
	sc := sim.DefaultConfig()
	sc.Model, sc.ZeroLatency = "demo", true
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 1, Traces: 8, MinTurns: 6, MaxTurns: 12, TimeScale: 0.001})
	if maxModelLen < 0 {
		// The median request: about half of the requests overflow, in
		// either phase, however many the run gets to send.
		var sizes []int
		for _, tr := range traces {
			for _, r := range tr.Requests {
				sizes = append(sizes, r.In+r.Out)
			}
		}
		slices.Sort(sizes)
		maxModelLen = sizes[len(sizes)/2]
	}
	if maxModelLen > 0 {
		sc.MaxModelLen = maxModelLen
	}
	srv, err := sim.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	col, err := metrics.NewCollector(dir, metrics.CollectorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	syn, err := prompttext.New(tokenizer.Builtin(), prompttext.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cfg := replay.DefaultConfig()
	cfg.URL, cfg.Models, cfg.Synth, cfg.Concurrency, cfg.Seed = srv.URL, []string{"demo"}, syn, 4, 7
	cfg.Traces = traces
	cfg.BenchmarkDuration, cfg.TraceIdleGapCap = 300*time.Millisecond, 10*time.Millisecond
	cfg.Streaming, cfg.Sink = true, col
	cfg.Classifier = scenario.DefaultClassifier()
	res, err := replay.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res, col, syn
}

// spyCollector wraps the collector: its Flush leaves an undecodable
// server metrics export in the folder (so reading the figure's input
// warns), and its Finish keeps the aggregate JSON as Finish wrote it.
type spyCollector struct {
	*metrics.Collector
	dir     string
	written []byte
}

func (s *spyCollector) Flush() error {
	if err := s.Collector.Flush(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.dir, servermetrics.JSONFile), []byte("{not an export\n"), 0o644)
}

func (s *spyCollector) Finish(info metrics.RunInfo) (*metrics.Summary, error) {
	sum, err := s.Collector.Finish(info)
	s.written, _ = os.ReadFile(filepath.Join(s.dir, metrics.FileAggregateJSON))
	return sum, err
}

// TestFinishWritesTheAggregatesOnce: every warning (the caller's, the
// plot's, report.html's) is in metadata.warnings, and the aggregate JSON
// is not touched after the collector wrote it; report.html shows each
// warning once.
func TestFinishWritesTheAggregatesOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res, col, syn := simRun(t, dir, 0)
	spy := &spyCollector{Collector: col, dir: dir}
	out, err := run.Finish(res, run.Input{Dir: dir, Collector: spy, Synth: syn, Duration: 300 * time.Millisecond,
		Concurrency: 4, Warnings: []string{"a warning from before the run"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Failed() || len(out.LateWarnings) > 0 {
		t.Fatalf("problems %v, late warnings %q", out.Problems, out.LateWarnings)
	}
	var plotW, pageW string
	for _, w := range out.Warnings {
		switch {
		case strings.HasPrefix(w, "plot: ") && strings.Contains(w, "server panels empty"):
			plotW = w
		case strings.HasPrefix(w, "report.html: ") && strings.Contains(w, "server panels empty"):
			pageW = w
		}
	}
	if plotW == "" || pageW == "" {
		t.Fatalf("warnings %q lack the plot's and the page's about the bad server export", out.Warnings)
	}
	final, err := os.ReadFile(filepath.Join(dir, metrics.FileAggregateJSON))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(final, spy.written) {
		t.Fatal("the aggregate JSON was rewritten after the collector wrote it")
	}
	var agg struct {
		Metadata struct {
			Warnings []string `json:"warnings"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(final, &agg); err != nil {
		t.Fatal(err)
	}
	want := append([]string{"a warning from before the run"}, out.Warnings...)
	if !slices.Equal(agg.Metadata.Warnings, want) {
		t.Errorf("metadata.warnings %q, want %q", agg.Metadata.Warnings, want)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	quoted, _ := json.Marshal(pageW)
	if n := bytes.Count(page, quoted); n != 1 {
		t.Errorf("report.html shows the page's warning %d times, want once", n)
	}
	for _, name := range []string{metrics.FileRecords, "metrics_plots.png"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
}

// TestFinishOverflowLimit: the overflow-rate limit of Input, unset (the
// 1 % default) or set to 0, decides validity under a scenario; without a
// scenario the finding is a warning with the caller's advice, not a
// problem.
func TestFinishOverflowLimit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A window that about half the requests do not fit.
	res, col, syn := simRun(t, dir, -1)
	if res.ProfilingOverflows == 0 || res.Accounting.ProfilingOK == 0 {
		t.Fatalf("fixture: %d profiling overflows, %d ok; want some of each", res.ProfilingOverflows, res.Accounting.ProfilingOK)
	}
	out, err := run.Finish(res, run.Input{Dir: dir, Collector: col, Synth: syn, NoPlot: true, OverflowAdvice: "use a larger window"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Failed() || out.Verdict.Valid {
		t.Fatalf("without a scenario: failed %v (%v), valid %v; want a warning only", out.Failed(), out.Problems, out.Verdict.Valid)
	}
	if !slices.ContainsFunc(out.Warnings, func(w string) bool {
		return strings.HasPrefix(w, scenario.ReasonOverflowRateExceeded) && strings.HasSuffix(w, "; use a larger window")
	}) {
		t.Errorf("warnings %q lack the overflow rate with the advice", out.Warnings)
	}

	// The same counts judged under a scenario, with the limit set to 1
	// (every rate passes) and to 0.
	for _, c := range []struct {
		limit scenario.Opt[float64]
		valid bool
	}{{scenario.Some(1.0), true}, {scenario.Some(0.0), false}} {
		dir := t.TempDir()
		res, col, syn := simRun(t, dir, -1)
		out, err := run.Finish(res, run.Input{Dir: dir, Collector: col, Synth: syn, NoPlot: true, Scenario: "inferencex-agentx-mvp", OverflowRateLimit: c.limit})
		if err != nil {
			t.Fatal(err)
		}
		hasProblem := slices.ContainsFunc(out.Problems, func(p run.Problem) bool {
			return p.Kind == run.ProblemInvalid && p.Reason == scenario.ReasonOverflowRateExceeded
		})
		if out.Verdict.Valid != c.valid || hasProblem == c.valid {
			t.Errorf("limit %v: valid %v, problems %v; want valid %v", c.limit, out.Verdict.Valid, out.Problems, c.valid)
		}
	}
}

// TestFinishRejectsAnIncompleteInput: nothing is written for an Input that
// lacks what Finish needs, and the error names the fields.
func TestFinishRejectsAnIncompleteInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := run.Finish(&replay.Result{}, run.Input{Dir: dir, OverflowRateLimit: scenario.Some(-1.0)})
	if err == nil {
		t.Fatal("an Input without a collector or synthesizer was accepted")
	}
	for _, field := range []string{"Input.Collector", "Input.Synth", "Input.OverflowRateLimit"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		t.Errorf("%d files written for a rejected Input", len(ents))
	}
}

// TestOutcomeExitCode: the exit-code rule (docs/artifacts.md). Under a
// scenario the pinned aiperf's: a completed run whose only reasons are
// unsafe_override or the overflow rate exits 0 with submission_valid
// false; coverage and a run without results fail it; FailOnInvalid fails
// every reason; without a scenario only a run that completed nothing
// fails; a signal is 130 whatever else.
func TestOutcomeExitCode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res, col, syn := simRun(t, dir, 0)
	base := run.Input{Dir: dir, Collector: col, Synth: syn, Duration: 300 * time.Millisecond, Concurrency: 4, NoPlot: true}
	out, err := run.Finish(res, base)
	if err != nil {
		t.Fatal(err)
	}
	if out.ExitCode() != run.ExitOK {
		t.Fatalf("a clean run: exit %d (%v)", out.ExitCode(), out.Problems)
	}
	// The rule reads the problems; these are the ones Finish finds.
	for _, tc := range []struct {
		name    string
		reasons []string
		strict  bool
		want    int
	}{
		{"unsafe_override", []string{scenario.ReasonUnsafeOverride}, false, run.ExitOK},
		{"overflow rate", []string{scenario.ReasonUnsafeOverride, scenario.ReasonOverflowRateExceeded}, false, run.ExitOK},
		{"coverage is fatal in the pin", []string{scenario.ReasonInsufficientCoverage}, false, run.ExitFailed},
		{"no result", []string{scenario.ReasonZeroCompleted}, false, run.ExitFailed},
		{"--fail-on-invalid", []string{scenario.ReasonUnsafeOverride}, true, run.ExitFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := t.TempDir()
			res, col, syn := simRun(t, d, 0)
			in := run.Input{Dir: d, Collector: col, Synth: syn, Duration: 300 * time.Millisecond, Concurrency: 4, NoPlot: true,
				Scenario: "inferencex-agentx-mvp", StaticReasons: tc.reasons, FailOnInvalid: tc.strict}
			out, err := run.Finish(res, in)
			if err != nil {
				t.Fatal(err)
			}
			if got := out.ExitCode(); got != tc.want {
				t.Errorf("exit %d, want %d (problems %v)", got, tc.want, out.Problems)
			}
			if out.Verdict.Valid {
				t.Errorf("valid with reasons %v", tc.reasons)
			}
		})
	}
}

// TestFinishSignalWhileWriting: a signal that comes after the replay
// ended, while the artifacts are written, used to leave exit 0 and no
// mark. Before the aggregates are written it is in them (interrupted once
// or twice, a warning); after, in their warnings; either way the outcome
// is interrupted (exit 130), and the accounting still adds up.
func TestFinishSignalWhileWriting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		signals  []int // what Signals returns on each call
		wantMark string
	}{
		{"two signals before the aggregates", []int{2, 2}, "twice"},
		{"one signal before the aggregates", []int{1, 1}, "once"},
		{"a signal after the aggregates", []int{0, 1}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			res, col, syn := simRun(t, dir, 0)
			calls := 0
			signals := func() int {
				n := tc.signals[min(calls, len(tc.signals)-1)]
				calls++
				return n
			}
			out, err := run.Finish(res, run.Input{Dir: dir, Collector: col, Synth: syn, Duration: 300 * time.Millisecond,
				Concurrency: 4, NoPlot: true, Signals: signals})
			if err != nil {
				t.Fatal(err)
			}
			if !out.Interrupted || out.ExitCode() != run.ExitInterrupted {
				t.Fatalf("interrupted %v, exit %d; want an interrupted run (130)", out.Interrupted, out.ExitCode())
			}
			b, err := os.ReadFile(filepath.Join(dir, metrics.FileAggregateJSON))
			if err != nil {
				t.Fatal(err)
			}
			var agg struct {
				Metadata struct {
					Warnings  []string       `json:"warnings"`
					Agentperf map[string]any `json:"agentperf"`
					Acct      struct {
						AddsUp bool `json:"adds_up"`
					} `json:"request_accounting"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(b, &agg); err != nil {
				t.Fatal(err)
			}
			if got, _ := agg.Metadata.Agentperf["interrupted"].(string); got != tc.wantMark {
				t.Errorf("metadata.agentperf.interrupted = %q, want %q", got, tc.wantMark)
			}
			if !strings.Contains(strings.Join(agg.Metadata.Warnings, "\n"), "interrupted while the artifacts were written") {
				t.Errorf("metadata.warnings do not say the run was interrupted: %q", agg.Metadata.Warnings)
			}
			if !agg.Metadata.Acct.AddsUp {
				t.Errorf("the accounting does not add up")
			}
		})
	}
}

// TestFinishCarriesClientCost: the engine's count of responses decoded
// with encoding/json reaches metadata.agentperf.response_fallbacks (a run
// against the simulator has none), and its CPU time of the profiling
// phase metadata.agentperf.client_cpu.
func TestFinishCarriesClientCost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res, col, syn := simRun(t, dir, 0)
	if res.ResponseFallbacks != 0 {
		t.Errorf("%d of the simulator's responses went to encoding/json, want 0", res.ResponseFallbacks)
	}
	if runtime.GOOS == "linux" && res.ProfilingUserCPU+res.ProfilingSystemCPU <= 0 {
		t.Errorf("profiling CPU %v + %v, want some", res.ProfilingUserCPU, res.ProfilingSystemCPU)
	}
	res.ResponseFallbacks = 3
	res.ProfilingUserCPU, res.ProfilingSystemCPU = 2*time.Second, time.Second
	sent := res.Schedule.Sent[1]
	if sent == 0 {
		t.Fatal("no profiling request sent")
	}
	if _, err := run.Finish(res, run.Input{Dir: dir, Collector: col, Synth: syn, Duration: 300 * time.Millisecond, Concurrency: 4, NoPlot: true}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, metrics.FileAggregateJSON))
	if err != nil {
		t.Fatal(err)
	}
	var agg struct {
		Metadata struct {
			Agentperf struct {
				ResponseFallbacks *int `json:"response_fallbacks"`
				ClientCPU         struct {
					User       float64 `json:"profiling_user_s"`
					System     float64 `json:"profiling_system_s"`
					PerRequest float64 `json:"per_profiling_request_us"`
				} `json:"client_cpu"`
			} `json:"agentperf"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &agg); err != nil {
		t.Fatal(err)
	}
	if got := agg.Metadata.Agentperf.ResponseFallbacks; got == nil || *got != 3 {
		t.Errorf("metadata.agentperf.response_fallbacks = %v, want 3", got)
	}
	if c := agg.Metadata.Agentperf.ClientCPU; c.User != 2 || c.System != 1 || c.PerRequest != 3e6/float64(sent) {
		t.Errorf("metadata.agentperf.client_cpu = %+v, want 2 s, 1 s, %v µs per request", c, 3e6/float64(sent))
	}
}

// TestFigureFromTheAggregates: the figure's request points, taken from what
// the collector holds, are the points a read of the finished record file
// gives (same requests, same order, same values): finishing needs no
// second read of profile_export.jsonl. Concurrent records may reach the
// two sinks in different orders, so the points are compared sorted.
func TestFigureFromTheAggregates(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res, col, syn := simRun(t, dir, 0)
	mem := plot.PointsFrom(col.EachRequest)
	if _, err := run.Finish(res, run.Input{Dir: dir, Collector: col, Synth: syn, NoPlot: true}); err != nil {
		t.Fatal(err)
	}
	file, warnings, err := plot.ReadRequests(filepath.Join(dir, metrics.FileRecords))
	if err != nil || len(warnings) > 0 {
		t.Fatalf("read back: %v %q", err, warnings)
	}
	if len(mem) == 0 || len(mem) != len(file) {
		t.Fatalf("%d points from the aggregates, %d in the record file", len(mem), len(file))
	}
	byTime := func(a, b plot.RequestPoint) int {
		return cmp.Or(cmp.Compare(a.StartNs, b.StartNs), cmp.Compare(a.EndNs, b.EndNs), cmp.Compare(a.Phase, b.Phase))
	}
	slices.SortStableFunc(mem, byTime)
	slices.SortStableFunc(file, byTime)
	same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) < 1e-9 }
	for i := range mem {
		m, f := mem[i], file[i]
		if m.StartNs != f.StartNs || m.EndNs != f.EndNs || m.OK != f.OK || m.Phase != f.Phase ||
			!same(m.TTFTms, f.TTFTms) || !same(m.LatencyMs, f.LatencyMs) || !same(m.ITLms, f.ITLms) {
			t.Fatalf("point %d: from the aggregates %+v, from the file %+v", i, m, f)
		}
	}
}

// TestFinishCoverageGate: the coverage rule as Finish applies it to a
// run's measured signals, at the harness's boundaries of an 1800 s phase
// whose TTFT and ITL stop early and whose last streamed content reaches
// 1790, 1710 or 1709 s, the grace period, or nothing: the reason
// insufficient_profile_metric_coverage and exit 1 exactly when none
// reaches 95 %; metadata.metric_duration_coverage holds the three ratios;
// a cancelled run is not judged.
func TestFinishCoverageGate(t *testing.T) {
	t.Parallel()
	const phase = 1800 * time.Second
	rule := scenario.Coverage{Required: scenario.RequiredCoverage, MinPhase: 900 * time.Second}
	for _, tc := range []struct {
		name      string
		content   time.Duration // after the profiling start; < 0: none
		cancelled bool
		pass      bool
		ratio     float64
	}{
		{"1790 s", 1790 * time.Second, false, true, 1790.0 / 1800},
		{"1710 s", 1710 * time.Second, false, true, 0.95},
		{"1709 s", 1709 * time.Second, false, false, 1709.0 / 1800},
		{"grace period, clamped", 1830 * time.Second, false, true, 1},
		{"no content at all", -1, false, false, 0},
		{"cancelled: not judged", 100 * time.Second, true, true, 100.0 / 1800},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			res, col, syn := simRun(t, dir, 0)
			start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			res.ProfilingStart = start
			res.LastTTFT, res.LastITL = start.Add(1000*time.Second), start.Add(1200*time.Second)
			res.LastContent = time.Time{}
			if tc.content >= 0 {
				res.LastContent = start.Add(tc.content)
			}
			res.Cancelled = tc.cancelled
			out, err := run.Finish(res, run.Input{Dir: dir, Collector: col, Synth: syn, NoPlot: true,
				Scenario: scenario.NameAgentX, Duration: phase, Coverage: rule, Concurrency: 4})
			if err != nil {
				t.Fatal(err)
			}
			failed := slices.Contains(out.Verdict.Reasons, scenario.ReasonInsufficientCoverage)
			if failed == tc.pass {
				t.Errorf("reasons %v, want insufficient coverage: %v", out.Verdict.Reasons, !tc.pass)
			}
			if !tc.cancelled {
				want := run.ExitOK
				if !tc.pass {
					want = run.ExitFailed
				}
				if got := out.ExitCode(); got != want {
					t.Errorf("exit %d, want %d (%v)", got, want, out.Problems)
				}
			}
			agg, err := metrics.ReadAggregateFile(dir)
			if err != nil {
				t.Fatal(err)
			}
			cov := agg.Metadata.MetricDurationCoverage
			if len(cov) != 1 || cov[0].RequiredRatio != 0.95 || cov[0].ContentRatio != tc.ratio || cov[0].TTFTRatio != 1000.0/1800 || cov[0].ITLRatio != 1200.0/1800 {
				t.Errorf("metric_duration_coverage %+v, want content ratio %v", cov, tc.ratio)
			}
		})
	}
}

// TestFinishShardStoppedBySignalExitsInterrupted (issue 34, case 12):
// under scancel every shard gets SIGTERM, and a shard that heard of
// another's stop first recorded shard_stopped and exited 1. A process
// that was signalled exits 130 whatever stopped its replay first.
func TestFinishShardStoppedBySignalExitsInterrupted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		signals int
		want    int
	}{
		{"signalled", 1, run.ExitInterrupted},
		{"not signalled", 0, run.ExitFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			res, col, syn := simRun(t, dir, 0)
			res.Aborted, res.AbortMessage = replay.AbortShardStopped, "the run was stopped by another shard"
			out, err := run.Finish(res, run.Input{Dir: dir, Collector: col, Synth: syn, Duration: 300 * time.Millisecond,
				Concurrency: 4, NoPlot: true, Signals: func() int { return tc.signals }})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.ExitCode(); got != tc.want {
				t.Errorf("exit %d, want %d", got, tc.want)
			}
		})
	}
}

// TestFinishInterruptedNamesItInTheWarnings (issue 34, case 14): after a
// SIGINT metadata.warnings was null although the docs say the reason is
// there; a SIGTERM's was.
func TestFinishInterruptedNamesItInTheWarnings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res, col, syn := simRun(t, dir, 0)
	res.Cancelled = true
	out, err := run.Finish(res, run.Input{Dir: dir, Collector: col, Synth: syn, Duration: 300 * time.Millisecond,
		Concurrency: 4, NoPlot: true})
	if err != nil {
		t.Fatal(err)
	}
	agg, err := metrics.ReadAggregateFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(agg.Metadata.Warnings, "\n"); !strings.Contains(w, "interrupted (SIGINT") {
		t.Errorf("metadata.warnings = %q, want the interruption", agg.Metadata.Warnings)
	}
	if !out.Interrupted {
		t.Errorf("not marked interrupted")
	}
}

// TestFinishOverflowAdviceWithMaxContextLength: requests overflowed
// although --max-context-length was given. The advice does not loop back
// to "pass --max-context-length N": it says that the chat template and the
// tokenizer add tokens and gives a margin from the run's measured overhead
// (here the server counted up to 300 tokens more than the traces).
func TestFinishOverflowAdviceWithMaxContextLength(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res, col, syn := simRun(t, dir, -1)
	if res.ProfilingOverflows == 0 {
		t.Fatal("fixture: no overflow")
	}
	res.PromptOverheadMax = 300
	out, err := run.Finish(res, run.Input{Dir: dir, Collector: col, Synth: syn, NoPlot: true,
		OverflowAdvice: "or pass --max-context-length N", MaxContextLength: 131072})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(out.Warnings, func(w string) bool { return strings.HasPrefix(w, scenario.ReasonOverflowRateExceeded) })
	if i < 0 {
		t.Fatalf("no overflow-rate warning in %q", out.Warnings)
	}
	w := out.Warnings[i]
	for _, want := range []string{"--max-context-length 131072 is already given", "chat template", "tokenizer",
		"measured up to 300 tokens more", "pass --max-context-length 130696"} {
		if !strings.Contains(w, want) {
			t.Errorf("advice lacks %q:\n%s", want, w)
		}
	}
	if strings.Contains(w, "pass --max-context-length N") {
		t.Errorf("the advice loops back to the flag already given:\n%s", w)
	}
}
