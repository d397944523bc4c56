package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentperf/agentperf/server/sim"
)

// TestProfileSIGHUPStopsLikeSIGTERM (issue 34, case 7): a dropped ssh
// session or a closed terminal sends SIGHUP. It used to kill the run
// (status 129, no aggregate, the reserve file left behind); now it stops
// the run as a scheduler's SIGTERM does: exit 130, every artifact
// written, the reason named, and no reserve file left.
func TestProfileSIGHUPStopsLikeSIGTERM(t *testing.T) {
	bin := agentperfBinary(t)
	cfg := sim.DefaultConfig()
	cfg.DecodeBaseMs = 20
	cfg.PrefillTokensPerSec = 1e6
	s := startSimWith(t, cfg)
	out := filepath.Join(t.TempDir(), "artifacts")
	p := startProc(t, bin, cleanEnv(t.TempDir()), "profile", "--url", s.URL, "--public-dataset", "synthetic:traces=8",
		"--model", "demo", "--tokenizer", "builtin", "--concurrency", "8", "--benchmark-duration", "600",
		"--streaming", "--use-server-token-count", "--trace-idle-gap-cap-seconds", "0.01",
		"--output-artifact-dir", out, "--ui-type", "none", "--no-plot")
	if !waitForLog(filepath.Join(out, "logs", "aiperf.log"), "profiling: started", p.done, 60*time.Second) {
		t.Fatalf("profiling never started (exited: %v)\nstderr:\n%s", p.err, p.stderr.String())
	}
	time.Sleep(300 * time.Millisecond)
	p.cmd.Process.Signal(syscall.SIGHUP)
	if code := p.wait(t); code != exitInterrupted {
		t.Fatalf("exit %d (%v), want %d\nstderr:\n%s", code, p.err, exitInterrupted, p.stderr.String())
	}
	agg := checkArtifacts(t, out)
	md := agg["metadata"].(map[string]any)
	if w := strings.Join(toStrings(md["warnings"]), "\n"); !strings.Contains(w, "SIGHUP") {
		t.Errorf("metadata.warnings do not name SIGHUP: %v", md["warnings"])
	}
	if _, err := os.Stat(filepath.Join(out, ".agentperf-reserve")); err == nil {
		t.Errorf("the reserve file is left behind")
	}
}

// TestCrashEndsBySIGABRT (issue 34, case 7): a crash of the Go runtime (an
// unrecovered panic here; out of memory and SIGQUIT take the same path)
// used to exit 2, the code of a usage error. With crashBySIGABRT, as main
// sets it up, the process prints its stacks and ends by SIGABRT (134 in a
// shell).
func TestCrashEndsBySIGABRT(t *testing.T) {
	if os.Getenv("AGENTPERF_TEST_CRASH") != "" {
		crashBySIGABRT()
		if os.Getenv("AGENTPERF_TEST_CRASH") == "quit" {
			syscall.Kill(os.Getpid(), syscall.SIGQUIT)
			time.Sleep(10 * time.Second)
		}
		go func() { panic("a crash") }()
		time.Sleep(10 * time.Second)
		return
	}
	for _, how := range []string{"panic", "quit"} {
		t.Run(how, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashEndsBySIGABRT$")
			var env []string
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "GOTRACEBACK=") {
					env = append(env, kv)
				}
			}
			cmd.Env = append(env, "AGENTPERF_TEST_CRASH="+how)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("the process did not fail: %v\n%s", err, out)
			}
			ws := ee.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != syscall.SIGABRT {
				t.Fatalf("ended with %v (exit code %d), want SIGABRT\n%s", err, ee.ExitCode(), out)
			}
			if !strings.Contains(string(out), "goroutine ") {
				t.Errorf("no stacks printed:\n%s", out)
			}
		})
	}
}

// TestProfileRefusesLanesTheMachineCannotHold (issue 34, case 1): with
// --concurrency 99999999999 a run used to fill the disk with its reserve,
// then die allocating 11.2 TB (exit 2, the reserve left behind). It is
// refused before anything is loaded or written, with the limit named.
func TestProfileRefusesLanesTheMachineCannotHold(t *testing.T) {
	out := filepath.Join(t.TempDir(), "artifacts")
	code, _, stderr := runCmd(t, "profile", "--url", "sim://", "--public-dataset", "synthetic:traces=8",
		"--model", "demo", "--tokenizer", "builtin", "--concurrency", "99999999999", "--allow-dataset-wrap", "--benchmark-duration", "20",
		"--streaming", "--output-artifact-dir", out, "--ui-type", "none")
	if code != exitUsage {
		t.Fatalf("exit %d, want %d\n%s", code, exitUsage, stderr)
	}
	for _, want := range []string{"99999999999 lanes", "at most", "per lane"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("the artifact folder was created")
	}
}

// runCmd runs the command line args in this process and returns the exit
// code, stdout and stderr.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMain(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestMergeOfAnInterruptedRunExits130 (issue 34, case 12): merging the
// shards of a run that scancel stopped printed "merged run was
// interrupted" and exited 1 (the merge process itself had no signal, so
// its context.Canceled did not count); the merged run's status is 130.
func TestMergeOfAnInterruptedRunExits130(t *testing.T) {
	var errb bytes.Buffer
	err := fmt.Errorf("%w (the merged run's profiling_end: interrupted)", errRunInterrupted)
	if code := exitCode(context.Background(), err, &errb); code != exitInterrupted {
		t.Fatalf("exit %d, want %d", code, exitInterrupted)
	}
	if !strings.Contains(errb.String(), "interrupted") {
		t.Errorf("stderr %q does not say the run was interrupted", errb.String())
	}
}
