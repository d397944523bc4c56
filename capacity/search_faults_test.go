package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/analysis/slo"
	"github.com/agentperf/agentperf/metrics"
)

// TestSearchStopsAtInconclusiveProbe (issue 34, case 3): an inconclusive
// probe is neither a pass nor a failure; the search stops there and says
// what the probes before it showed.
func TestSearchStopsAtInconclusiveProbe(t *testing.T) {
	t.Parallel()
	var calls []int
	probe := func(_ context.Context, c, _ int) (Probe, error) {
		calls = append(calls, c)
		if c >= 4 {
			return Probe{Inconclusive: true, Why: "aborted (warmup_failed: server down)"}, nil
		}
		return Probe{Met: true}, nil
	}
	cfg := Config{Lo: 1, Hi: 64}
	r, err := Search(context.Background(), cfg, probe)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(calls, []int{1, 2, 4}) || r.Inconclusive == nil || r.Inconclusive.Concurrency != 4 || r.Complete() {
		t.Fatalf("calls %v, inconclusive %+v, complete %v: want 1 2 4 and a stop at 4", calls, r.Inconclusive, r.Complete())
	}
	if r.Best != 2 || r.Above != nil {
		t.Errorf("Best %d Above %+v: want 2 (a lower bound) and nothing above", r.Best, r.Above)
	}
	s := Summary(cfg, r)
	for _, want := range []string{"inconclusive: the probe at concurrency 4 aborted (warmup_failed", "capacity is at least 2"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary %q lacks %q", s, want)
		}
	}
	if strings.Contains(s, "capacity 2:") {
		t.Errorf("summary %q states a capacity", s)
	}
}

// TestSearchInterruptedKeepsWhatFinished (issue 34, case 4): interrupted
// during probe 2, the result has what probe 1 showed, not "not even
// concurrency 1 meets".
func TestSearchInterruptedKeepsWhatFinished(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	probe := func(ctx context.Context, c, _ int) (Probe, error) {
		if c == 2 {
			cancel()
			return Probe{}, ctx.Err()
		}
		return Probe{Met: true}, nil
	}
	cfg := Config{Lo: 1, Hi: 64}
	r, err := Search(ctx, cfg, probe)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the cancellation", err)
	}
	if r.Best != 1 || r.BestProbe == nil || !r.Interrupted || r.Pending != 2 || len(r.Probes) != 1 {
		t.Fatalf("Best %d, BestProbe %v, interrupted %v, pending %d, %d probes: want 1, set, true, 2, 1", r.Best, r.BestProbe, r.Interrupted, r.Pending, len(r.Probes))
	}
	s := Summary(cfg, r)
	if !strings.Contains(s, "interrupted while probing concurrency 2") || !strings.Contains(s, "concurrency 1 met every objective") || strings.Contains(s, "not even") {
		t.Errorf("summary %q", s)
	}
}

// writeFakeRun writes a probe folder of n records (p99 TTFT 10·c ms),
// aborted with reason when it is set.
func writeFakeRun(dir string, c, n int, aborted string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	for range n {
		fmt.Fprintf(&b, `{"metadata":{"request_start_ns":1,"request_end_ns":2,"benchmark_phase":"profiling"},"metrics":{"time_to_first_token":{"value":%d,"unit":"ms"}},"error":null}`+"\n", 10*c)
	}
	os.WriteFile(filepath.Join(dir, "profile_export.jsonl"), []byte(b.String()), 0o644)
	agg := `{"benchmark_duration":{"avg":2}`
	if aborted != "" {
		agg += fmt.Sprintf(`,"metadata":{"agentperf":{"aborted":%q,"abort_message":"the server refused every warmup request"}}`, aborted)
	}
	return os.WriteFile(filepath.Join(dir, "profile_export_aiperf.json"), []byte(agg+"}"), 0o644)
}

func readSearchJSON(t *testing.T, dir string) SearchJSON {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, SearchResultJSON))
	if err != nil {
		t.Fatal(err)
	}
	var j SearchJSON
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatal(err)
	}
	return j
}

// TestRunSearchInconclusiveProbes (issue 34, case 3): a probe whose run
// aborted (warmup_failed), or that had too few requests for a p99, stops
// the search as inconclusive; the result file says so with the sample
// counts.
func TestRunSearchInconclusiveProbes(t *testing.T) {
	t.Parallel()
	o, err := slo.Parse("ttft.p99<=255ms")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		n       int
		aborted string
		why     string
	}{
		{"aborted", 100, "warmup_failed", "aborted (warmup_failed: the server refused every warmup request; probe-03-c4)"},
		{"too few", 13, "", "had too few requests to judge time_to_first_token.p99 on 13 samples of the 100 it needs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			run := func(_ context.Context, c int, d string) error {
				if c >= 4 {
					return errors.Join(ErrPointFailed, writeFakeRun(d, c, tc.n, tc.aborted))
				}
				return writeFakeRun(d, c, 100, "")
			}
			res, err := RunSearch(context.Background(), SearchConfig{Dir: dir, SLO: o, Search: Config{Lo: 1, Hi: 64, Resolution: Resolution{Abs: 1}}, Run: run,
				Client: ClientCheck{MaxCPU: -1, MaxSchedP99: -1}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Inconclusive == nil || res.Inconclusive.Concurrency != 4 || len(res.Probes) != 3 || res.Best != 2 {
				t.Fatalf("inconclusive %+v, %d probes, best %d: want a stop at 4 after 1 and 2", res.Inconclusive, len(res.Probes), res.Best)
			}
			if !strings.Contains(res.Inconclusive.Why, tc.why) {
				t.Errorf("why %q, want %q", res.Inconclusive.Why, tc.why)
			}
			j := readSearchJSON(t, dir)
			if j.Status != StatusInconclusive || j.Inconclusive == nil || j.Best != 2 || !strings.HasPrefix(j.Note, "inconclusive") {
				t.Errorf("result: status %q, inconclusive %v, best %d, note %q", j.Status, j.Inconclusive, j.Best, j.Note)
			}
			if tm := j.Probes[0].Terms[0]; tm.Samples != 100 || tm.MinSamples != 100 || !tm.Judged {
				t.Errorf("probe 1's term: %+v, want 100 samples of the 100 needed, judged", tm)
			}
		})
	}
}

// TestRunSearchResumes (issue 34, case 4): a search interrupted during
// its second probe writes what the first showed, marked interrupted; the
// same search again reuses the first probe and runs on from the second.
// Another objective or other settings reuse nothing and say why.
func TestRunSearchResumes(t *testing.T) {
	t.Parallel()
	o, err := slo.Parse("ttft.p99<=255ms")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var ran []int
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupt := true
	run := func(ctx context.Context, c int, d string) error {
		ran = append(ran, c)
		if c == 2 && interrupt {
			interrupt = false
			os.MkdirAll(d, 0o755) // a partial folder
			cancel()
			return ctx.Err()
		}
		return writeFakeRun(d, c, 100, "")
	}
	var log strings.Builder
	cfg := SearchConfig{Dir: dir, SLO: o, Search: Config{Lo: 1, Hi: 64, Resolution: Resolution{Abs: 1}}, Run: run,
		Settings: map[string]string{"--random-seed": "7"}, Client: ClientCheck{MaxCPU: -1, MaxSchedP99: -1},
		Logf: func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) }}
	if _, err := RunSearch(ctx, cfg); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted search: %v", err)
	}
	j := readSearchJSON(t, dir)
	if j.Status != StatusInterrupted || j.Best != 1 || j.Pending != 2 || len(j.Probes) != 1 || !strings.Contains(j.Note, "capacity is at least 1") {
		t.Fatalf("after the interruption: status %q best %d pending %d, %d probes, note %q", j.Status, j.Best, j.Pending, len(j.Probes), j.Note)
	}
	first, _ := os.ReadFile(filepath.Join(dir, "probe-01-c1", "profile_export.jsonl"))

	ran = nil
	res, err := RunSearch(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Best != 25 || slices.Contains(ran, 1) || ran[0] != 2 {
		t.Errorf("resumed: best %d, ran %v; want 25, probe 1 reused", res.Best, ran)
	}
	if !strings.Contains(log.String(), "probe 1 at concurrency 1: finished by an earlier search") {
		t.Errorf("the log does not say probe 1 was reused:\n%s", log.String())
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "probe-01-c1", "profile_export.jsonl")); string(again) != string(first) {
		t.Error("the resumed search rewrote probe 1")
	}
	if _, err := os.Stat(filepath.Join(dir, "probe-02-c2.incomplete")); err != nil {
		t.Errorf("the interrupted probe's folder was not kept aside: %v", err)
	}
	if j := readSearchJSON(t, dir); j.Status != StatusComplete || j.Best != 25 {
		t.Errorf("resumed result: %q, best %d", j.Status, j.Best)
	}
	// The same command once more runs nothing.
	ran = nil
	if _, err := RunSearch(context.Background(), cfg); err != nil || len(ran) != 0 {
		t.Errorf("a finished search run again ran %v (%v)", ran, err)
	}
	// Another seed: nothing is reused, the log says what differs, and the
	// earlier result is kept.
	log.Reset()
	ran = nil
	cfg.Settings = map[string]string{"--random-seed": "8"}
	if _, err := RunSearch(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ran, 1) || !strings.Contains(log.String(), "--random-seed 7 → 8") {
		t.Errorf("other settings: ran %v, log:\n%s", ran, log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, SearchResultJSON+".replaced")); err != nil {
		t.Errorf("the earlier result was not kept: %v", err)
	}
}

// TestSearchErrorIsNotAnAnswer: an error that stops the search (a probe
// that cannot run) leaves a result that says so, not a capacity.
func TestSearchErrorIsNotAnAnswer(t *testing.T) {
	t.Parallel()
	probe := func(_ context.Context, c, _ int) (Probe, error) {
		if c == 8 {
			return Probe{}, errors.New("the corpus has 6 traces")
		}
		return Probe{Met: true}, nil
	}
	cfg := Config{Lo: 1, Hi: 64}
	r, err := Search(context.Background(), cfg, probe)
	if err == nil || r.Complete() || r.status() != StatusError || r.Best != 4 || r.Pending != 8 {
		t.Fatalf("err %v, complete %v, status %q, best %d, pending %d", err, r.Complete(), r.status(), r.Best, r.Pending)
	}
	if s := Summary(cfg, r); !strings.HasPrefix(s, "stopped by an error while probing concurrency 8 (probe at concurrency 8: the corpus has 6 traces)") || !strings.Contains(s, "capacity is at least 4") {
		t.Errorf("summary %q", s)
	}
}

// TestRunSearchRepeatedProbe: a probe of two runs (a repeated run's
// folder) is judged on both runs' records pooled; a probe with an aborted
// second run is inconclusive, naming that run, although its first run met
// the objective; a search resumed in the folder judges the repeated
// probes again from their run folders.
func TestRunSearchRepeatedProbe(t *testing.T) {
	t.Parallel()
	o, err := slo.Parse("ttft.p50<=255ms")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	calls := 0
	run := func(_ context.Context, c int, d string) error {
		calls++
		sum := metrics.PooledSummary{SchemaVersion: 1, RunsRequested: 2, RunsDone: 2, Confidence: 0.95}
		for k := 1; k <= 2; k++ {
			rel := filepath.Join(metrics.DirProfileRuns, fmt.Sprintf("run_%04d", k))
			aborted := ""
			if c >= 4 && k == 2 {
				aborted = "failed_request_threshold"
			}
			if err := writeFakeRun(filepath.Join(d, rel), c, 10*k, aborted); err != nil {
				return err
			}
			sum.Runs = append(sum.Runs, rel)
		}
		b, _ := metrics.EncodePooledSummary(sum)
		os.MkdirAll(filepath.Join(d, metrics.DirPooled), 0o755)
		return os.WriteFile(filepath.Join(d, metrics.DirPooled, metrics.FilePooledSummary), b, 0o644)
	}
	cfg := SearchConfig{Dir: dir, SLO: o, Search: Config{Lo: 1, Hi: 64, Resolution: Resolution{Abs: 1}}, Run: run, Repeats: 2,
		Client: ClientCheck{MaxCPU: -1, MaxSchedP99: -1}}
	res, err := RunSearch(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inconclusive == nil || res.Inconclusive.Concurrency != 4 || res.Best != 2 || len(res.Probes) != 3 {
		t.Fatalf("inconclusive %+v, best %d, %d probes: want a stop at 4 after 1 and 2", res.Inconclusive, res.Best, len(res.Probes))
	}
	if want := "aborted (failed_request_threshold: the server refused every warmup request; run_0002)"; !strings.Contains(res.Inconclusive.Why, want) {
		t.Errorf("why %q, want %q", res.Inconclusive.Why, want)
	}
	j := readSearchJSON(t, dir)
	if p := j.Probes[0]; p.Requests != 30 || p.Terms[0].Samples != 30 || len(p.Dirs) != 2 || p.Dirs[1] != "probe-01-c1/profile_runs/run_0002" {
		t.Errorf("probe 1: %d requests, term %+v, dirs %v; want the 10 + 20 records of its two runs", p.Requests, p.Terms[0], p.Dirs)
	}
	// Resumed: probes 1 and 2 are judged from their runs, the
	// inconclusive one runs again.
	calls = 0
	var log strings.Builder
	cfg.Logf = func(f string, a ...any) { fmt.Fprintf(&log, f+"\n", a...) }
	if _, err := RunSearch(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || strings.Count(log.String(), "judged again from its records") != 2 {
		t.Errorf("resumed: %d probe runs, want 1 (the inconclusive one); log:\n%s", calls, log.String())
	}
}
