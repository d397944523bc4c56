package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/capacity"
	"github.com/agentperf/agentperf/internal/testshared"
	"github.com/agentperf/agentperf/server/sim"
)

// pointArgs are the profile flags of the sweep and search tests: a small
// synthetic corpus whose sessions send back to back.
func pointArgs(url, dir string, extra ...string) []string {
	return append([]string{"--url", url, "--public-dataset", "synthetic:traces=6", "--model", "agentperf-sim", "--tokenizer", "builtin",
		"--streaming", "--use-server-token-count", "--trace-idle-gap-cap-seconds", "0.01", "--benchmark-duration", "1",
		"--random-seed", "7", "--ui-type", "simple", "--output-artifact-dir", dir}, extra...)
}

// startTestSim starts a zero-latency simulator for a test.
func startTestSim(t *testing.T) *sim.Server {
	t.Helper()
	s, err := sim.New(sim.Config{ZeroLatency: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// repeatHits looks at the first request of each conversation of point b
// that point a sent requests of too: its prompt (the conversation's
// history) was in a's cache. It returns how many there are and their
// cached prompt tokens.
func repeatHits(t *testing.T, a, b string) (n int, cached float64) {
	t.Helper()
	conv := func(r map[string]any) string { return r["metadata"].(map[string]any)["conversation_id"].(string) }
	start := func(r map[string]any) float64 { return r["metadata"].(map[string]any)["request_start_ns"].(float64) }
	inA := map[string]bool{}
	for _, r := range readRecords(t, filepath.Join(a, "profile_export.jsonl")) {
		inA[conv(r)] = true
	}
	first := map[string]map[string]any{}
	for _, r := range readRecords(t, filepath.Join(b, "profile_export.jsonl")) {
		if f, ok := first[conv(r)]; !ok || start(r) < start(f) {
			first[conv(r)] = r
		}
	}
	for c, r := range first {
		if !inA[c] {
			continue
		}
		n++
		if m, ok := r["metrics"].(map[string]any)["usage_prompt_cache_read_tokens"].(map[string]any); ok {
			cached += m["value"].(float64)
		}
	}
	return n, cached
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

// TestSweepResetPrefixCache: with --reset-prefix-cache the simulator is
// reset before every point (its counter shows it), and the prompts the
// second point repeats from the first find nothing cached; without it
// they hit the first point's cache.
func TestSweepResetPrefixCache(t *testing.T) {
	testshared.SkipIfShort(t, "two sweeps against the simulator")
	clearAIPerfEnv(t)
	for _, reset := range []bool{true, false} {
		s := startTestSim(t)
		dir := t.TempDir()
		args := append([]string{"sweep"}, pointArgs(s.URL, dir, "--concurrency", "2,4")...)
		if reset {
			args = append(args, "--reset-prefix-cache")
		}
		code, out, errOut := runProfileCLI(context.Background(), t, args...)
		if code != 0 {
			t.Fatalf("reset=%v: exit %d\n%s\n%s", reset, code, out, errOut)
		}
		want := int64(0)
		if reset {
			want = 2
		}
		if got := s.Stats().CacheResets; got != want {
			t.Errorf("reset=%v: the simulator counted %d resets, want %d (one before each point)", reset, got, want)
		}
		n, cached := repeatHits(t, filepath.Join(dir, "c2"), filepath.Join(dir, "c4"))
		if n == 0 {
			t.Fatalf("reset=%v: c4 repeats no prompt of c2: the test shows nothing", reset)
		}
		if reset && cached != 0 {
			t.Errorf("with the reset, the first requests of %d conversations c4 repeats from c2 found %v cached tokens: the first point's cache leaked", n, cached)
		}
		if !reset && cached == 0 {
			t.Errorf("without the reset, the first requests of the %d conversations c4 repeats from c2 found nothing cached: the leak check cannot fail", n)
		}
		if reset && !strings.Contains(errOut, "prefix cache reset (POST /reset_prefix_cache)") {
			t.Errorf("the log does not say the cache was reset:\n%s", errOut)
		}
	}
}

// TestSweepResume: a sweep interrupted during its third point resumes
// from the third; the table, the Pareto plot and the page are what the
// same point folders give (what an uninterrupted sweep over them
// writes), and an uninterrupted sweep with the same seed has the same
// rows.
func TestSweepResume(t *testing.T) {
	testshared.SkipIfShort(t, "a sweep of three points, interrupted and resumed")
	clearAIPerfEnv(t)
	dir := t.TempDir()
	args := append([]string{"sweep"}, pointArgs("sim://?zero-latency", dir, "--concurrency", "2,3,4", "--reset-prefix-cache")...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // interrupt once the third point has started writing
		for {
			if _, err := os.Stat(filepath.Join(dir, "c4", "logs", "aiperf.log")); err == nil {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	code, out, errOut := runProfileCLI(ctx, t, args...)
	if code != exitInterrupted {
		t.Fatalf("interrupted sweep: exit %d, want %d\n%s\n%s", code, exitInterrupted, out, errOut)
	}
	pts, err := capacity.ReadManifest(dir)
	if err != nil || len(pts) != 2 {
		t.Fatalf("after the interruption the manifest has %v (%v), want c2 and c3", pts, err)
	}
	first, _ := os.ReadFile(filepath.Join(dir, "c2", "profile_export.jsonl"))

	code, out, errOut = runProfileCLI(context.Background(), t, args...)
	if code != 0 {
		t.Fatalf("resumed sweep: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, c := range []string{"concurrency 2): complete from an earlier sweep", "concurrency 3): complete from an earlier sweep", "point 3/3: concurrency 4"} {
		if !strings.Contains(errOut, c) {
			t.Errorf("resume log lacks %q:\n%s", c, errOut)
		}
	}
	if strings.Contains(errOut, "point 1/3: concurrency 2 →") {
		t.Error("the resumed sweep ran the first point again")
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "c2", "profile_export.jsonl")); !bytes.Equal(first, again) {
		t.Error("the resumed sweep rewrote c2")
	}
	if _, err := os.Stat(filepath.Join(dir, "c4.incomplete")); err != nil {
		t.Errorf("the interrupted point's folder was not kept: %v", err)
	}
	for _, f := range []string{"c4/profile_export_aiperf.json", "c4/inferencex.json", "sweep.md", "sweep.csv", "sweep_table.json", "pareto.png", "sweep.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing: %v", err)
		}
	}
	// What an uninterrupted sweep writes from the same point folders.
	fresh := t.TempDir()
	pts, _ = capacity.ReadManifest(dir)
	for _, p := range pts {
		if err := os.Symlink(filepath.Join(dir, p.Dir), filepath.Join(fresh, p.Dir)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := capacity.WriteSweepReport(fresh, pts, capacity.SweepLabels{TP: 1}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"sweep.md", "sweep_table.json", "pareto.png", "sweep.html"} {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, _ := os.ReadFile(filepath.Join(fresh, f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s of the resumed sweep differs from the one its point folders give", f)
		}
	}
	// An uninterrupted sweep: the same points in the same rows.
	whole := t.TempDir()
	args = append([]string{"sweep"}, pointArgs("sim://?zero-latency", whole, "--concurrency", "2,3,4", "--reset-prefix-cache")...)
	if code, out, errOut := runProfileCLI(context.Background(), t, args...); code != 0 {
		t.Fatalf("uninterrupted sweep: exit %d\n%s\n%s", code, out, errOut)
	}
	if a, b := tableShape(t, dir), tableShape(t, whole); !slices.Equal(a, b) || len(a) != 3 {
		t.Errorf("rows of the resumed sweep %v, of the uninterrupted one %v", a, b)
	}
}

// tableShape is the sweep table's rows as tp/conc/requests>0.
func tableShape(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "sweep_table.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tab struct {
		Runs []map[string]any `json:"runs"`
	}
	if err := json.Unmarshal(b, &tab); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range tab.Runs {
		out = append(out, string(mustJSON(r["tp"]))+"/"+string(mustJSON(r["conc"])))
	}
	return out
}

// TestSearchClientBound: starved of CPU (GOMAXPROCS=1, a zero-latency
// simulator in the same process, 64 sessions sending back to back), the
// probe is reported as client-bound, not as the capacity.
func TestSearchClientBound(t *testing.T) {
	testshared.SkipIfShort(t, "a search on one CPU until a probe is client-bound")
	clearAIPerfEnv(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	dir := t.TempDir()
	args := append([]string{"search", "--slo", "ttft.p99<=10s,errors<=5%", "--concurrency-range", "64:64", "--client-bound-retries", "0", "--allow-dataset-wrap"},
		pointArgs("sim://?zero-latency", dir)...)
	code, out, errOut := runProfileCLI(context.Background(), t, args...)
	if code != exitRunFailed {
		t.Fatalf("exit %d, want %d (no capacity found)\n%s\n%s", code, exitRunFailed, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, capacity.SearchResultJSON))
	if err != nil {
		t.Fatal(err)
	}
	var res capacity.SearchJSON
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Probes) != 1 || !res.Probes[0].ClientBound || res.Best != 0 || res.ClientBoundAt != 64 {
		t.Fatalf("result %s, want one client-bound probe at 64 and no capacity", b)
	}
	t.Logf("probe at 64: %s", res.Probes[0].ClientReason)
	if !strings.Contains(out, "CLIENT-BOUND") || !strings.Contains(res.Note, "client") {
		t.Errorf("the output does not say the probe was client-bound:\n%s\nnote: %s", out, res.Note)
	}
}

// TestSearchSim: a search against the simulator ends with a capacity,
// every probe's folder, the result and the plot.
func TestSearchSim(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	args := append([]string{"search", "--slo", "ttft.p90<=60s,errors<=50%", "--concurrency-range", "1:4", "--resolution", "1",
		"--client-max-cpu", "-1", "--client-max-lateness", "-1", "--client-max-sched-latency", "-1"}, pointArgs("sim://?zero-latency", dir)...)
	code, out, errOut := runProfileCLI(context.Background(), t, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "every concurrency up to the range's top, 4, meets the objective") {
		t.Errorf("output:\n%s", out)
	}
	for _, f := range []string{"probe-01-c1/profile_export_aiperf.json", "probe-02-c2/report.html", "probe-03-c4/profile_export.jsonl", capacity.SearchResultJSON, capacity.SearchPlot} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing: %v", err)
		}
	}
}

// TestSweepSaysInferenceXWarningsOnce: InferenceX's environment variables
// are the same at every point of a sweep; against the simulator, whose
// inferencex.json no InferenceX processor reads, one note replaces the
// nine warnings each point printed before.
func TestSweepSaysInferenceXWarningsOnce(t *testing.T) {
	clearAIPerfEnv(t)
	for _, k := range []string{"RUNNER_TYPE", "PRECISION", "FRAMEWORK", "MODEL", "MODEL_PREFIX", "IMAGE", "KV_OFFLOADING", "RECIPE_FINGERPRINT", "SPEC_DECODING"} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	code, _, stderr := runProfileCLI(context.Background(), t, "sweep", "--url", "sim://?zero-latency=true", "--public-dataset", "synthetic:traces=6",
		"--model", "demo", "--concurrency", "1,2", "--benchmark-duration", "1", "--trace-idle-gap-cap-seconds", "0.01",
		"--ui-type", "none", "--no-plot", "--output-artifact-dir", dir)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if n := strings.Count(stderr, "inferencex.json: written with"); n != 1 {
		t.Errorf("%d notes about inferencex.json, want 1:\n%s", n, stderr)
	}
	if regexp.MustCompile(`warning: .*inferencex\.json`).MatchString(stderr) {
		t.Errorf("InferenceX warnings against the simulator:\n%s", stderr)
	}
	for _, c := range []string{"c1", "c2"} {
		if _, err := os.Stat(filepath.Join(dir, c, "inferencex.json")); err != nil {
			t.Errorf("point %s: %v", c, err)
		}
	}
}
