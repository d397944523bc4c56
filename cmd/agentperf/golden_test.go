package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/servermetrics"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/timing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden (TestGoldenFolder, TestGoldenRequests)")

// goldenInput is the fixture the golden-folder test finishes: the two
// shard folders of one run of the synthetic corpus against the simulator
// (testdata/golden/make-input.sh made them once; the records carry
// wall-clock latencies, so no live run can be compared byte for byte).
const goldenInput = "testdata/golden/input"

// TestGoldenFolder proves that finishing a run writes the same bytes for
// the same inputs, before and after a refactor of the finishing code. It
// finishes the committed fixture three ways and compares every file
// written with testdata/golden/<way>/ byte for byte (go test -run
// TestGoldenFolder -update rewrites them):
//
//   - profile: run.Finish over a metrics.Collector fed shard 0's
//     records, with shard 0's replay.Result and Finish input (the path of
//     run.Run after replay.Run), its server metrics export beside it;
//   - merge: `agentperf merge` of both shards (run.Merge: records,
//     FinishExport's aggregates, the copied server export, the log, then
//     Finish);
//   - report: `agentperf report` on a copy of the merged golden folder
//     (the recomputed aggregates, the re-rendered plot and report.html,
//     the warnings added to the aggregate);
//   - inferencex: `agentperf report --format inferencex` of the merged
//     golden folder (InferenceX's result JSON).
//
// Files compared: profile_export.jsonl, context_overflow_export.jsonl,
// profile_export_aiperf.{json,csv}, the timeslices {json,csv},
// server_metrics_export.{json,csv}, metrics_plots.png, report.html and
// logs/aiperf.log (the merge's). The PNG is compared too: it is drawn
// from the records alone with a fixed font and no timestamp, so its bytes
// are deterministic (the test fails if they are not). Not covered: the
// GPU telemetry export (gpu_telemetry_export.json): it is written from a
// live gputelemetry.Collector, which no folder can recreate.
//
// What legitimately varies between runs of the test, and how the test
// fixes it (nothing is masked):
//   - the time zone: the aggregates and the server export write naive
//     local times (metrics' Location defaults to time.Local), so the
//     package's TestMain sets time.Local to UTC before any test runs;
//   - the version (metadata.agentperf.version, the CSV header): the
//     profile way passes the shard's recorded version to the collector;
//     merge and report read it from the fixture's files;
//   - the output folder's path: the merge's log names the shard folders
//     as given (the relative fixture paths, the same on every machine);
//   - the benchmark id, start and end times: from the fixture's Result;
//   - InferenceX's variables (TP, MODEL, …, read from the environment):
//     each given by a flag or --env, so the job's environment is ignored.
func TestGoldenFolder(t *testing.T) {
	if time.Local != time.UTC {
		t.Fatal("time.Local is not UTC: TestMain sets it before the tests run")
	}
	t.Run("profile", func(t *testing.T) {
		dir := t.TempDir()
		finishShard0(t, dir)
		compareGolden(t, dir, "testdata/golden/profile")
	})
	t.Run("merge", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "merged")
		code, _, stderr := runCLI(t, "merge", dir, goldenInput+"/shard-0", goldenInput+"/shard-1")
		if code != 0 {
			t.Fatalf("merge exit %d: %s", code, stderr)
		}
		compareGolden(t, dir, "testdata/golden/merge")
	})
	t.Run("report", func(t *testing.T) {
		// The merged folder without what report writes again (the
		// aggregate JSON stays: it holds the run's context), so that
		// every file compared was written by report.
		dir := filepath.Join(t.TempDir(), "run")
		copyTree(t, "testdata/golden/merge", dir)
		for _, name := range []string{metrics.FileAggregateCSV, "profile_export_aiperf_timeslices.json", "profile_export_aiperf_timeslices.csv", "metrics_plots.png", "report.html"} {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
		code, _, stderr := runCLI(t, "report", dir)
		if code != 0 {
			t.Fatalf("report exit %d: %s", code, stderr)
		}
		compareGolden(t, dir, "testdata/golden/report")
	})
	t.Run("inferencex", func(t *testing.T) {
		// Every variable InferenceX's result JSON reads is given (empty:
		// its default), so the job's environment cannot change it.
		dir := t.TempDir()
		args := []string{"report", "--format", "inferencex", "--tp", "8", "--hw", "h200", "--framework", "vllm", "--precision", "fp8",
			"--model", "demo", "-o", filepath.Join(dir, "inferencex.json")}
		for _, v := range inferenceXVariables {
			args = append(args, "--env", v+"=")
		}
		code, _, stderr := runCLI(t, append(args, "testdata/golden/merge")...)
		if code != 0 {
			t.Fatalf("report --format inferencex exit %d: %s", code, stderr)
		}
		compareGolden(t, dir, "testdata/golden/inferencex")
	})
}

// inferenceXVariables are the environment variables inferencex.LoadEnv reads.
var inferenceXVariables = []string{"CONC", "DCP_SIZE", "DECODE", "DISAGG", "DP_ATTENTION", "EP_SIZE", "FRAMEWORK", "IMAGE", "IS_MULTINODE",
	"KV_OFFLOADING", "KV_OFFLOAD_BACKEND", "KV_OFFLOAD_BACKEND_METADATA", "MODEL", "MODEL_PREFIX", "OFFLOADING", "PCP_SIZE", "PP_SIZE",
	"PRECISION", "PREFILL", "RECIPE_FINGERPRINT", "ROUTER_METADATA", "RUNNER_TYPE", "SPEC_DECODING", "TOTAL_CPU_DRAM_GB", "TP"}

// shardInput is what the test reads of a shard manifest: the replay
// Result and the part of Finish's Input a shard records.
type shardInput struct {
	Result *replay.Result `json:"result"`
	Finish struct {
		Scenario        string           `json:"scenario"`
		StaticReasons   []string         `json:"static_reasons"`
		Generation      string           `json:"generation"`
		DurationNs      int64            `json:"duration_ns"`
		Concurrency     int              `json:"concurrency"`
		OverflowAdvice  string           `json:"overflow_advice"`
		InputConfig     map[string]any   `json:"input_config"`
		Corpus          dataset.Identity `json:"corpus"`
		PublicDataset   bool             `json:"public_dataset"`
		Described       run.Described    `json:"described"`
		CoverageReq     float64          `json:"coverage_required"`
		CoverageMinNs   int64            `json:"coverage_min_phase_ns"`
		Warnings        []string         `json:"warnings"`
		SliceDurationNs int64            `json:"slice_duration_ns"`
		Version         string           `json:"version"`
	} `json:"finish"`
}

// finishShard0 finishes shard 0's records into dir as run.Run does
// after replay.Run: a metrics.Collector receives every record, then
// run.Finish writes the artifacts.
func finishShard0(t *testing.T, dir string) {
	t.Helper()
	src := goldenInput + "/shard-0"
	b, err := os.ReadFile(filepath.Join(src, run.FileShard))
	if err != nil {
		t.Fatal(err)
	}
	var m shardInput
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	gen, err := timing.LookupGeneration(m.Finish.Generation)
	if err != nil {
		t.Fatal(err)
	}
	m.Result.Generation = gen
	col, err := metrics.NewCollector(dir, metrics.CollectorOptions{SliceDuration: time.Duration(m.Finish.SliceDurationNs), Version: m.Finish.Version})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{metrics.FileRecords, metrics.FileOverflow} {
		f, err := os.Open(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		_, err = metrics.ReadRecords(f, name, false, func(l *metrics.RecordLine) error {
			r := l.Record
			if name == metrics.FileOverflow {
				col.AddOverflow(&r)
			} else {
				col.Add(&r)
			}
			return nil
		})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{servermetrics.JSONFile, servermetrics.CSVFile} {
		copyFileT(t, filepath.Join(src, name), filepath.Join(dir, name))
	}
	out, err := run.Finish(m.Result, run.Input{
		Dir: dir, Collector: col,
		Scenario: m.Finish.Scenario, StaticReasons: m.Finish.StaticReasons,
		Duration: time.Duration(m.Finish.DurationNs), Concurrency: m.Finish.Concurrency,
		OverflowAdvice: m.Finish.OverflowAdvice, InputConfig: m.Finish.InputConfig,
		Corpus: m.Finish.Corpus, PublicDataset: m.Finish.PublicDataset,
		Described: &m.Finish.Described, Warnings: m.Finish.Warnings,
		Coverage: scenario.Coverage{Required: m.Finish.CoverageReq, MinPhase: time.Duration(m.Finish.CoverageMinNs)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Failed() {
		t.Fatalf("finishing the fixture failed: %v", out.Problems)
	}
}

// goldenSkip are the files of a finished folder that are not artifacts:
// the folder lock (empty or a pid).
var goldenSkip = map[string]bool{".agentperf-lock": true}

// compareGolden compares every file under dir with the same path under
// golden, both ways (a file missing on either side fails), or rewrites
// golden with -update.
func compareGolden(t *testing.T, dir, golden string) {
	t.Helper()
	got := listFiles(t, dir)
	if *update {
		os.RemoveAll(golden)
		for _, rel := range got {
			copyFileT(t, filepath.Join(dir, rel), filepath.Join(golden, rel))
		}
		return
	}
	want := listFiles(t, golden)
	if !slices.Equal(got, want) {
		t.Errorf("files written: %v\nwant (%s): %v", got, golden, want)
	}
	for _, rel := range got {
		a, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(golden, rel))
		if err != nil {
			continue // reported above
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s: %s (go test -run TestGoldenFolder -update rewrites the golden files, for a change made on purpose)",
				rel, filepath.Join(golden, rel), firstDiff(a, b))
		}
	}
}

// firstDiff describes where a and b first differ.
func firstDiff(a, b []byte) string {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	lo, hi := max(0, i-40), min(n, i+40)
	if i == n {
		return fmt.Sprintf("lengths %d and %d, equal up to the shorter", len(a), len(b))
	}
	return fmt.Sprintf("first difference at byte %d of %d/%d: got %q, want %q", i, len(a), len(b), a[lo:min(len(a), hi)], b[lo:min(len(b), hi)])
}

func listFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || goldenSkip[d.Name()] {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func copyFileT(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	for _, rel := range listFiles(t, src) {
		copyFileT(t, filepath.Join(src, rel), filepath.Join(dst, rel))
	}
}

// recorder is a reverse proxy in front of the simulator that keeps every
// chat request's body by its conversation (X-Correlation-ID), in arrival
// order.
// simBehind starts a zero-latency simulator serving "demo" (seed seed)
// behind wrap, a handler that sees each request before the simulator
// does, and returns the front server.
func simBehind(t *testing.T, seed int64, wrap func(next http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	sc := sim.DefaultConfig()
	sc.Model, sc.ZeroLatency, sc.Seed = "demo", true, seed
	srv, err := sim.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	target, _ := url.Parse(srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	front := httptest.NewServer(wrap(proxy))
	t.Cleanup(front.Close)
	return front
}

type recorder struct {
	mu     sync.Mutex
	bodies map[string][][]byte
}

func (rc *recorder) ServeHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/completions") {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			rc.mu.Lock()
			id := r.Header.Get("X-Correlation-ID")
			rc.bodies[id] = append(rc.bodies[id], b)
			rc.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// conversations returns each conversation as the list of its bodies'
// digests (sha256, 16 hex digits), keyed by its first body's digest (the
// correlation id is a random uuid).
func (rc *recorder) conversations() map[string][]string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string][]string{}
	for _, bodies := range rc.bodies {
		var ds []string
		for _, b := range bodies {
			s := sha256.Sum256(b)
			ds = append(ds, hex.EncodeToString(s[:8]))
		}
		out[ds[0]] = ds
	}
	return out
}

// TestGoldenRequests: for a fixed seed, the request bodies `agentperf
// profile` sends are the same bytes, before and after a refactor. A
// recording proxy in front of a zero-latency simulator keeps every body
// by conversation; each conversation's digests must agree with
// testdata/golden/requests.txt. How many turns a lane reaches in the
// run's wall-clock duration varies, so the test compares each
// conversation on the turns both have, and needs every conversation the
// golden file names with at least two turns. The traces are long
// (60 to 80 turns) and their think times, a hundredth of the recorded
// ones, bound how fast a lane goes however fast the machine, so no lane
// reaches the end of its first trace in the run and the conversations
// are the lanes' first ones (and their warmup's), fixed by the seed.
// -update rewrites the file.
func TestGoldenRequests(t *testing.T) {
	rc := &recorder{bodies: map[string][][]byte{}}
	front := simBehind(t, 11, rc.ServeHTTP)

	code, _, stderr := runCLI(t, "profile", "--url", front.URL, "--model", "demo", "--tokenizer", "builtin", "--streaming",
		"--public-dataset", "synthetic:seed=5,traces=8,min-turns=60,max-turns=80,time-scale=0.01",
		"--concurrency", "3", "--benchmark-duration", "1", "--random-seed", "9", "--no-server-metrics", "--no-gpu-telemetry",
		"--no-plot", "--ui-type", "none", "--output-artifact-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("profile exit %d: %s", code, stderr)
	}
	got := rc.conversations()
	const path = "testdata/golden/requests.txt"
	if *update {
		var lines []string
		for _, ds := range got {
			lines = append(lines, strings.Join(ds, " "))
		}
		slices.Sort(lines)
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		ds := strings.Fields(line)
		want[ds[0]] = ds
	}
	for first, ds := range got {
		w, ok := want[first]
		if !ok {
			t.Errorf("a conversation whose first request body has digest %s is not in %s (its %d requests): the first request of a lane changed", first, path, len(ds))
			continue
		}
		n := min(len(ds), len(w))
		if i := slices.Compare(ds[:n], w[:n]); i != 0 {
			for k := range n {
				if ds[k] != w[k] {
					t.Errorf("conversation %s: request %d's body has digest %s, want %s", first, k+1, ds[k], w[k])
					break
				}
			}
		}
	}
	for first, w := range want {
		if len(w) >= 2 && len(got[first]) < 2 {
			t.Errorf("conversation %s (%d requests in %s) sent %d requests, want at least 2", first, len(w), path, len(got[first]))
		}
	}
}
