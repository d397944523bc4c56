package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentperf/agentperf/server/sim"
)

// TestProfileOneRunPerFolder (issue 34, case 5): two runs into one
// --output-artifact-dir at once used to leave one run's aggregate beside
// an interleaved record file (one exited 1, the other 0), and a folder
// reused later kept the old run's files (stale timeslices beside a new
// aggregate). Now a run holds a lock on its folder: a second run is
// refused (exit 2) before it touches anything, so the first run's log is
// intact; a finished run's folder is refused too unless
// --overwrite-artifacts, which removes the old files first.
func TestProfileOneRunPerFolder(t *testing.T) {
	bin := agentperfBinary(t)
	cfg := sim.DefaultConfig()
	cfg.DecodeBaseMs = 20
	cfg.PrefillTokensPerSec = 1e6
	s := startSimWith(t, cfg)
	out := filepath.Join(t.TempDir(), "artifacts")
	args := func(extra ...string) []string {
		return append([]string{"profile", "--url", s.URL, "--public-dataset", "synthetic:traces=8",
			"--model", "demo", "--tokenizer", "builtin", "--concurrency", "2",
			"--streaming", "--use-server-token-count", "--trace-idle-gap-cap-seconds", "0.01",
			"--output-artifact-dir", out, "--ui-type", "none", "--no-plot"}, extra...)
	}
	first := startProc(t, bin, cleanEnv(t.TempDir()), args("--benchmark-duration", "600", "--slice-duration", "1")...)
	logPath := filepath.Join(out, "logs", "aiperf.log")
	if !waitForLog(logPath, "profiling: started", first.done, 60*time.Second) {
		t.Fatalf("profiling never started (exited: %v)\nstderr:\n%s", first.err, first.stderr.String())
	}
	second := startProc(t, bin, cleanEnv(t.TempDir()), args("--benchmark-duration", "1")...)
	if code := second.wait(t); code != exitUsage {
		t.Errorf("a second run into the folder of a live one: exit %d, want %d\nstderr:\n%s", code, exitUsage, second.stderr.String())
	}
	if !strings.Contains(second.stderr.String(), "another agentperf run is writing to this artifact folder") {
		t.Errorf("the second run does not say the folder is in use:\n%s", second.stderr.String())
	}
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "replay semantics") || !strings.Contains(string(b), "profiling: started") {
		t.Errorf("the live run's log was truncated by the refused run:\n%s", b)
	}
	time.Sleep(1500 * time.Millisecond) // a timeslice or two
	first.cmd.Process.Signal(syscall.SIGTERM)
	if code := first.wait(t); code != exitInterrupted {
		t.Fatalf("the first run: exit %d, want %d\nstderr:\n%s", code, exitInterrupted, first.stderr.String())
	}
	checkArtifacts(t, out) // one run's files, complete
	slices := filepath.Join(out, "profile_export_aiperf_timeslices.json")
	if _, err := os.Stat(slices); err != nil {
		t.Fatalf("the first run wrote no timeslices: %v", err)
	}

	// Later, the same folder.
	code, _, stderr := runCmd(t, args("--benchmark-duration", "1")...)
	if code != exitUsage || !strings.Contains(stderr, "holds another run's artifacts") || !strings.Contains(stderr, "--overwrite-artifacts") {
		t.Fatalf("a run into a used folder: exit %d, want %d, naming the flag:\n%s", code, exitUsage, stderr)
	}
	code, _, stderr = runCmd(t, args("--benchmark-duration", "1", "--overwrite-artifacts")...)
	if code != exitOK {
		t.Fatalf("--overwrite-artifacts: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(slices); err == nil {
		t.Errorf("the old run's timeslices are left beside the new aggregate")
	}
	checkArtifacts(t, out)
	if b, _ := os.ReadFile(logPath); !strings.Contains(string(b), "removed") {
		t.Errorf("the log does not say the old artifacts were removed:\n%s", b)
	}
}
