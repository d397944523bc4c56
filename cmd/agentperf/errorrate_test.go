package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestProfileMostlyFailedRun: a run where most profiling requests fail
// (here 60 % HTTP 500s after the warmup) exits 0 without
// --failed-request-threshold, as aiperf does (docs/failed-request-threshold.md:
// the policy), but says so: the summary's first line is the error rate,
// and metadata.warnings carries it. It used to exit 0 with nothing but the
// counts in the second line.
func TestProfileMostlyFailedRun(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	args := append([]string{"profile", "--url", "sim://?zero-latency=true&fault-500-rate=0.6&fault-after-requests=8&seed=3",
		"--public-dataset", "synthetic:traces=8"}, fastRunArgs(dir)...)
	code, stdout, stderr := runProfileCLI(context.Background(), t, args...)
	if code != exitOK {
		t.Fatalf("exit %d, want 0 (no threshold set)\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	first, _, _ := strings.Cut(stdout, "\n")
	if !strings.HasPrefix(first, "WARNING: error rate ") || !strings.Contains(first, "profiling requests that completed failed") {
		t.Fatalf("the summary does not start with the error rate:\n%s", stdout)
	}
	agg := checkArtifacts(t, dir)
	md := agg["metadata"].(map[string]any)
	found := false
	for _, w := range toStrings(md["warnings"]) {
		found = found || strings.HasPrefix(w, "error rate ")
	}
	if !found {
		t.Errorf("metadata.warnings lack the error rate: %v", md["warnings"])
	}
	if rate := num(agg, "request_error_rate", "avg"); rate < 40 {
		t.Errorf("fixture: error rate %v %%, want most requests failed", rate)
	}
}

// TestProfileOverflowsCountedPerPhase: against a context window at the
// corpus's median request size, warmup and profiling requests overflow.
// context_overflow_count (aggregate and metadata) and the summary's
// profiling figure count profiling overflows only, as the validity check
// does; warmup ones are counted apart; the accounting has both. Before,
// context_overflow_count and the summary counted both phases.
func TestProfileOverflowsCountedPerPhase(t *testing.T) {
	clearAIPerfEnv(t)
	dir := t.TempDir()
	args := append([]string{"profile", "--url", "sim://?zero-latency=true&max-model-len=40000",
		"--public-dataset", "synthetic:traces=12"}, fastRunArgs(dir)...)
	args = append(args, "--concurrency", "8", "--benchmark-duration", "2", "--warmup-requests-per-lane", "4")
	code, stdout, stderr := runProfileCLI(context.Background(), t, args...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	agg := checkArtifacts(t, dir)
	md := agg["metadata"].(map[string]any)
	ap := md["agentperf"].(map[string]any)
	prof, warm := num(ap, "profiling_overflows"), num(ap, "warmup_overflows")
	if prof < 1 || warm < 1 {
		t.Fatalf("fixture: want overflows in both phases, got profiling %v, warmup %v", prof, warm)
	}
	if num(agg, "context_overflow_count", "avg") != prof || num(md, "context_overflow_count") != prof || num(md, "warmup_context_overflow_count") != warm {
		t.Errorf("context_overflow_count %v (metadata %v, warmup %v); the engine counted profiling %v, warmup %v",
			num(agg, "context_overflow_count", "avg"), num(md, "context_overflow_count"), num(md, "warmup_context_overflow_count"), prof, warm)
	}
	if num(md, "request_accounting", "context_overflows") != prof+warm {
		t.Errorf("accounting overflows %v, want %v", num(md, "request_accounting", "context_overflows"), prof+warm)
	}
	if !strings.Contains(stdout, fmt.Sprintf("cancelled, %d context overflows; warmup: ", int(prof))) || !strings.Contains(stdout, fmt.Sprintf("cancelled, %d context overflows\n", int(warm))) {
		t.Errorf("the summary does not count each phase's overflows (%v, %v):\n%s", prof, warm, stdout)
	}
}
