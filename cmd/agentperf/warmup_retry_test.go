package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileWarmupRetries is the report's case on the real binary: 10 %
// of requests fail transiently (503, 429, a reset before the headers)
// during a v1.0 warmup of 10 requests per lane. A single such failure used
// to abort the run with warmup_failed (4 of 7 runs in the report, 7 of 7
// here). Now none aborts; every failed attempt is its own record (a warmup
// error marked retried, counted as sent: the accounting adds up), and the
// replay core saw each warmup request once: the warmup records that are not
// retried attempts are exactly the warmup requests it planned.
func TestProfileWarmupRetries(t *testing.T) {
	bin := agentperfBinary(t)
	type run struct {
		seed, out string
		cmd       *exec.Cmd
		output    *bytes.Buffer
	}
	var runs []*run
	for _, seed := range []string{"1", "2", "3", "4", "5", "6", "7"} {
		r := &run{seed: seed, out: t.TempDir(), output: &bytes.Buffer{}}
		r.cmd = exec.Command(bin, "profile",
			"--url", "sim://?zero-latency=true&fault-503-rate=0.04&fault-429-rate=0.03&fault-reset-before-headers-rate=0.03&seed="+seed,
			"--public-dataset", "synthetic:traces=8,seed="+seed, "--model", "demo", "--concurrency", "4",
			"--benchmark-duration", "2", "--warmup-requests-per-lane", "10", "--streaming", "--use-server-token-count",
			"--trace-idle-gap-cap-seconds", "0.01", "--ui-type", "none", "--no-plot", "--output-artifact-dir", r.out)
		r.cmd.Env = cleanEnv(t.TempDir())
		r.cmd.Stdout, r.cmd.Stderr = r.output, r.output
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	retried := 0
	for _, r := range runs {
		if err := r.cmd.Wait(); err != nil {
			t.Errorf("seed %s: %v\n%s", r.seed, err, r.output)
			continue
		}
		agg := checkArtifacts(t, r.out) // sent = every record
		md := agg["metadata"].(map[string]any)
		ap := md["agentperf"].(map[string]any)
		final := 0.0
		n := 0
		for _, rec := range readRecords(t, filepath.Join(r.out, "profile_export.jsonl")) {
			m := rec["metadata"].(map[string]any)
			if m["benchmark_phase"] != "warmup" {
				continue
			}
			if m["retried"] == true {
				n++
				if rec["error"] == nil {
					t.Fatalf("seed %s: a retried attempt without an error: %v", r.seed, rec)
				}
				continue
			}
			final++
		}
		for _, rec := range readRecords(t, filepath.Join(r.out, "context_overflow_export.jsonl")) {
			if rec["metadata"].(map[string]any)["benchmark_phase"] == "warmup" {
				final++
			}
		}
		if planned := num(ap, "schedule", "warmup_requests"); final != planned {
			t.Errorf("seed %s: %v final warmup records for %v warmup requests the core sent", r.seed, final, planned)
		}
		if float64(n) != num(ap, "warmup_retries") {
			t.Errorf("seed %s: %d retried records, metadata says %v", r.seed, n, ap["warmup_retries"])
		}
		retried += n
	}
	if retried < 5 {
		t.Errorf("only %d warmup attempts were retried over all runs; the test proves little", retried)
	}
}

// TestProfileWarmupRetryLimits: a root warmup request that keeps failing
// transiently aborts the run once its retry budget (5 attempts) is spent,
// and one that fails with an error that is not transient (a 404 for an
// unknown model) aborts at once, without a retry; both name the trace and
// the last error, and every attempt is recorded.
func TestProfileWarmupRetryLimits(t *testing.T) {
	bin := agentperfBinary(t)
	cases := []struct {
		name, url, model string
		want             []string
		attempts         float64 // warmup error records of the lane
	}{
		{"budget spent", "sim://?zero-latency=true&fault-503-every=1", "demo",
			[]string{"run aborted (warmup_failed)", "the last of 5 attempts", "503 Service Unavailable", "(trace synth_"}, 5},
		{"not transient", "sim://?zero-latency=true&model=served", "demo",
			[]string{"run aborted (warmup_failed)", "not retried: an HTTP 4xx other than 429", "404", "(trace synth_"}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := runBinary(t, bin, t.TempDir(), "profile", "--url", tc.url,
				"--public-dataset", "synthetic:traces=4", "--model", tc.model, "--concurrency", "1",
				"--benchmark-duration", "2", "--streaming", "--trace-idle-gap-cap-seconds", "0.01",
				"--ui-type", "none", "--no-plot", "--output-artifact-dir", out)
			if code != exitRunFailed {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, exitRunFailed, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			agg := checkArtifacts(t, out)
			acct := agg["metadata"].(map[string]any)["request_accounting"].(map[string]any)
			if num(acct, "warmup_errors") != tc.attempts {
				t.Errorf("warmup errors %v, want %v (every attempt recorded)", num(acct, "warmup_errors"), tc.attempts)
			}
		})
	}
}
