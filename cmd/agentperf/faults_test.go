package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// agentperfBinary builds the command once per test process and returns
// its path; it skips the test when go is not on PATH or with -short.
func agentperfBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	binOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			binErr = "go is not on PATH; cannot build the binary"
			return
		}
		dir, err := os.MkdirTemp("", "agentperf-bin-")
		if err != nil {
			binErr = err.Error()
			return
		}
		binPath = filepath.Join(dir, "agentperf")
		if out, err := exec.Command(goBin, "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = "go build: " + err.Error() + "\n" + string(out)
		}
	})
	if binErr != "" {
		t.Skip(binErr)
	}
	return binPath
}

var (
	binOnce sync.Once
	binPath string
	binErr  string
)

// readServerExport parses server_metrics_export.json.
func readServerExport(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "server_metrics_export.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("server_metrics_export.json: %v", err)
	}
	return m
}

// TestProfileServerWhoseSeriesAppearMidRun reproduces the scraper crash
// against a server that exposes histograms only after its first request
// (llm-d-inference-sim; here the in-process sim's lazy-metrics knob): the
// run used to panic in the scraper (index out of range [-1], exit 2, only
// partial files). It must complete, with the late histograms in the
// server export.
func TestProfileServerWhoseSeriesAppearMidRun(t *testing.T) {
	clearAIPerfEnv(t)
	out := t.TempDir()
	args := append([]string{"profile", "--url", "sim://?lazy-metrics=true&decode-base-ms=1&prefill-tokens-per-sec=1e6", "--public-dataset", "synthetic:traces=4"}, fastRunArgs(out)...)
	args = append(args, "--benchmark-duration", "2", "--use-server-token-count")
	t.Setenv("AIPERF_SERVER_METRICS_COLLECTION_INTERVAL", "0.05")
	code, stdout, stderr := runProfileCLI(context.Background(), t, args...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	checkArtifacts(t, out)
	ex := readServerExport(t, out)
	ms, _ := ex["metrics"].(map[string]any)
	e2e, _ := ms["vllm:e2e_request_latency_seconds"].(map[string]any)
	series, _ := e2e["series"].([]any)
	if len(series) == 0 {
		t.Fatalf("the late e2e histogram is missing from the export (metrics: %d)", len(ms))
	}
	if c := num(series[0].(map[string]any), "stats", "count"); c <= 0 {
		t.Fatalf("e2e histogram count over the profiling window = %v", c)
	}
	if strings.Contains(stderr, "internal error") || bytes.Contains([]byte(stdout), []byte("collection stopped")) {
		t.Fatalf("the scraper stopped:\n%s", stderr)
	}
}
