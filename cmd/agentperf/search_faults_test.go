package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/capacity"
)

// TestSearchStreamingOnlyTermNeedsStreaming (issue 34, case 9): a TTFT or
// ITL objective without --streaming is a usage error before any probe,
// not a search whose every probe fails with "no value in the run".
func TestSearchStreamingOnlyTermNeedsStreaming(t *testing.T) {
	clearAIPerfEnv(t)
	s := startTestSim(t)
	dir := t.TempDir()
	args := slices.DeleteFunc(pointArgs(s.URL, dir), func(a string) bool { return a == "--streaming" })
	args = append([]string{"search", "--slo", "ttft.p99<=2s,itl.p99<=50ms,errors<=1%", "--concurrency-range", "1:2"}, args...)
	code, out, errOut := runProfileCLI(context.Background(), t, args...)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d (usage)\n%s\n%s", code, exitUsage, out, errOut)
	}
	if !strings.Contains(errOut, "--streaming") || !strings.Contains(errOut, "ttft.p99<=2s, itl.p99<=50ms") {
		t.Errorf("the error does not name the terms and --streaming:\n%s", errOut)
	}
	if n := s.Stats().Requests; n != 0 {
		t.Errorf("the simulator got %d requests: a probe ran", n)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("the search folder holds %d entries: something ran", len(ents))
	}
	// Request latency is measured without streaming: the same search with
	// an e2el objective runs.
	args[2] = "e2el.p50<=60s,errors<=50%"
	if code, out, errOut := runProfileCLI(context.Background(), t, args...); code != 0 {
		t.Fatalf("e2el objective without streaming: exit %d\n%s\n%s", code, out, errOut)
	}
}

// readSearchResult reads dir's search_result.json.
func readSearchResult(t *testing.T, dir string) capacity.SearchJSON {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, capacity.SearchResultJSON))
	if err != nil {
		t.Fatal(err)
	}
	var res capacity.SearchJSON
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSearchFailedRequestsCount (issue 34, case 3): against a server
// that refuses 80 % of the requests, an objective without an errors term
// is not "met" on the successful few: every failed request counts
// against it.
func TestSearchFailedRequestsCount(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	args := append([]string{"search", "--slo", "ttft.p50<=60s", "--concurrency-range", "2:2",
		"--client-max-cpu", "-1", "--client-max-lateness", "-1", "--client-max-sched-latency", "-1"},
		pointArgs("sim://?zero-latency&fault-503-rate=0.8&fault-after-requests=2&seed=3", dir)...)
	code, out, errOut := runProfileCLI(context.Background(), t, args...)
	if code != exitRunFailed {
		t.Fatalf("exit %d, want %d (no concurrency met the objective)\n%s\n%s", code, exitRunFailed, out, errOut)
	}
	res := readSearchResult(t, dir)
	if len(res.Probes) != 1 {
		t.Fatalf("%d probes, want 1", len(res.Probes))
	}
	p := res.Probes[0]
	tm := p.Terms[0]
	if p.Met || p.Errors == 0 || p.Errors < p.Requests || tm.Met || !tm.Judged || tm.FailedRequests != p.Errors || tm.Samples != p.Requests+p.Errors || !tm.DecidedByFailures {
		t.Errorf("probe: met %v, %d ok + %d failed; term %+v: want failed, decided by the failed requests", p.Met, p.Requests, p.Errors, tm)
	}
	if !strings.Contains(out, "decided by failed requests") || !strings.Contains(res.Note, "not even concurrency 2") {
		t.Errorf("output:\n%s\nnote: %s", out, res.Note)
	}
}

// TestSearchAbortedProbeIsInconclusive (issue 34, case 3): a probe whose
// warmup the server refused (down) aborts; the search stops with
// "inconclusive" and exit 1, not a capacity or "not even … meets".
func TestSearchAbortedProbeIsInconclusive(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	args := append([]string{"search", "--slo", "ttft.p50<=60s", "--concurrency-range", "2:8"},
		pointArgs("sim://?zero-latency&fault-down-after-requests=1&fault-down-for=10m", dir)...)
	code, out, errOut := runProfileCLI(context.Background(), t, args...)
	if code != exitRunFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitRunFailed, out, errOut)
	}
	res := readSearchResult(t, dir)
	if res.Status != capacity.StatusInconclusive || res.Inconclusive == nil || len(res.Probes) != 1 || res.Best != 0 ||
		!strings.Contains(res.Inconclusive.Why, "aborted (warmup_failed") {
		t.Fatalf("status %q, inconclusive %+v, %d probes, best %d", res.Status, res.Inconclusive, len(res.Probes), res.Best)
	}
	if !strings.HasPrefix(res.Note, "inconclusive: the probe at concurrency 2 aborted") || !strings.Contains(out, "INCONCLUSIVE") || strings.Contains(res.Note, "not even") {
		t.Errorf("note %q\n%s", res.Note, out)
	}
}

// TestSearchInterruptedResumes (issue 34, case 4): a search interrupted
// during its second probe exits 130 and its result says what the first
// probe showed, marked interrupted; the same command again reuses the
// first probe and finishes.
func TestSearchInterruptedResumes(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	args := append([]string{"search", "--slo", "ttft.p50<=60s,errors<=50%", "--concurrency-range", "1:4", "--resolution", "1",
		"--client-max-cpu", "-1", "--client-max-lateness", "-1", "--client-max-sched-latency", "-1"}, pointArgs("sim://?zero-latency", dir)...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // interrupt once the second probe has started writing
		for {
			if _, err := os.Stat(filepath.Join(dir, "probe-02-c2", "logs", "aiperf.log")); err == nil {
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
		t.Fatalf("interrupted search: exit %d, want %d\n%s\n%s", code, exitInterrupted, out, errOut)
	}
	res := readSearchResult(t, dir)
	if res.Status != capacity.StatusInterrupted || res.Best != 1 || res.Pending != 2 || len(res.Probes) != 1 || !res.Probes[0].Met ||
		!strings.Contains(res.Note, "capacity is at least 1") || strings.Contains(res.Note, "not even") {
		t.Fatalf("after the interruption: status %q, best %d, pending %d, %d probes; note %q", res.Status, res.Best, res.Pending, len(res.Probes), res.Note)
	}
	first, _ := os.ReadFile(filepath.Join(dir, "probe-01-c1", "profile_export.jsonl"))

	code, out, errOut = runProfileCLI(context.Background(), t, args...)
	if code != 0 {
		t.Fatalf("resumed search: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "probe 1 at concurrency 1: finished by an earlier search") || strings.Contains(errOut, "probe-01-c1.incomplete") {
		t.Errorf("the resumed search did not reuse probe 1:\n%s", errOut)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "probe-01-c1", "profile_export.jsonl")); string(again) != string(first) {
		t.Error("the resumed search rewrote probe 1")
	}
	if res := readSearchResult(t, dir); res.Status != capacity.StatusComplete || res.Best != 4 {
		t.Errorf("resumed result: status %q, best %d; want complete, 4", res.Status, res.Best)
	}
	// Another seed: nothing is reused, and the output says why.
	args = append(args, "--random-seed", "8")
	code, out, errOut = runProfileCLI(context.Background(), t, args...)
	if code != 0 || !strings.Contains(errOut, "--random-seed 7 → 8") || strings.Contains(errOut, "finished by an earlier search") {
		t.Errorf("search with another seed: exit %d\n%s", code, errOut)
	}
}
