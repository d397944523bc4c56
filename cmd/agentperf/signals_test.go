package main

import (
	"bytes"
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

// proc is a started agentperf process.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{} // closed once it exited; err is then its status
	err            error
}

// startProc starts bin with args in env; the process is killed at the end
// of the test if it still runs.
func startProc(t *testing.T, bin string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the exit (a generous bound only turns a hang into a
// failure) and returns the exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(120 * time.Second):
		t.Fatalf("still running after 120 s\nstderr:\n%s", p.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("wait: %v", p.err)
	}
	return 0
}

// startSimWith starts the simulator configured by cfg in the test process (so that its own
// counters can be compared with the artifacts) and returns it.
func startSimWith(t *testing.T, cfg sim.Config) *sim.Server {
	t.Helper()
	cfg.Model = "demo"
	s, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestProfileSecondSignalWritesEveryArtifact is the report's repro on the
// real binary: a run against a server outside the process, SIGINT, and
// 0.3 s later SIGINT again, with requests in flight and an hour of grace
// period. The second signal used to exit at once, leaving only .partial
// files that held 17 of the 32 requests the server saw. Now the second
// signal skips the grace period and every artifact is still written, marked
// cancelled and "interrupted twice"; every request sent is recorded
// (cancelled where it had no response), at least as many as the server
// received. The stalled variant proves the grace period is skipped: its
// requests would otherwise hang for an hour.
func TestProfileSecondSignalWritesEveryArtifact(t *testing.T) {
	bin := agentperfBinary(t)
	cases := []struct {
		name    string
		cfg     func(*sim.Config)
		waitFor string
	}{
		{"streaming requests in flight", func(c *sim.Config) { c.DecodeBaseMs = 20 }, "profiling: started"},
		{"every request stalled in warmup", func(c *sim.Config) {
			c.ZeroLatency = true
			c.Faults.Stall = sim.FaultRule{Every: 1}
			c.Faults.StallFor = time.Hour
		}, "warmup: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sim.DefaultConfig()
			cfg.PrefillTokensPerSec = 1e6
			tc.cfg(&cfg)
			s := startSimWith(t, cfg)
			out := filepath.Join(t.TempDir(), "artifacts")
			p := startProc(t, bin, cleanEnv(t.TempDir()), "profile", "--url", s.URL, "--public-dataset", "synthetic:traces=8",
				"--model", "demo", "--tokenizer", "builtin", "--concurrency", "8", "--benchmark-duration", "600", "--benchmark-grace-period", "3600",
				"--streaming", "--use-server-token-count", "--trace-idle-gap-cap-seconds", "0.01",
				"--output-artifact-dir", out, "--ui-type", "none", "--no-plot")
			if !waitForLog(filepath.Join(out, "logs", "aiperf.log"), tc.waitFor, p.done, 60*time.Second) {
				t.Fatalf("%q never appeared in the log (exited: %v)\nstderr:\n%s", tc.waitFor, p.err, p.stderr.String())
			}
			time.Sleep(500 * time.Millisecond) // requests in flight
			p.cmd.Process.Signal(os.Interrupt)
			time.Sleep(300 * time.Millisecond)
			p.cmd.Process.Signal(os.Interrupt)
			if code := p.wait(t); code != exitInterrupted {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitInterrupted, p.stderr.String())
			}
			stderr := p.stderr.String()
			for _, w := range []string{"second signal: cancelling the requests in flight now", "every artifact is still written"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			agg := checkArtifacts(t, out) // complete, and sent = records in the files
			md := agg["metadata"].(map[string]any)
			acct := md["request_accounting"].(map[string]any)
			ap := md["agentperf"].(map[string]any)
			if agg["was_cancelled"] != true || ap["interrupted"] != "twice" || acct["adds_up"] != true {
				t.Fatalf("was_cancelled %v, metadata.agentperf.interrupted %v, adds_up %v", agg["was_cancelled"], ap["interrupted"], acct["adds_up"])
			}
			if !strings.Contains(strings.Join(toStrings(md["warnings"]), "\n"), "interrupted twice") {
				t.Errorf("metadata.warnings do not say the run was interrupted twice: %v", md["warnings"])
			}
			if end := fmt.Sprint(ap["profiling_end"]); tc.waitFor == "profiling: started" && !strings.HasPrefix(end, "interrupted twice") {
				t.Errorf("profiling_end = %v", ap["profiling_end"])
			}
			if num(acct, "cancelled") < 1 {
				t.Errorf("no request was cancelled by the second signal: %v", acct)
			}
			if got := s.Stats().Requests; num(acct, "sent") < float64(got) {
				t.Errorf("the server received %d requests; only %v are recorded", got, num(acct, "sent"))
			}
			if _, err := os.Stat(filepath.Join(out, "server_metrics_export.json")); err != nil {
				t.Errorf("server metrics export missing: %v", err)
			}
		})
	}
}

// TestProfileThirdSignal: three signals in quick succession end the
// process with 130 whatever it was doing; when the third came before the
// artifacts were written it says so (and only then may .partial files be
// left: see TestProfileReportOnPartialFiles for what report makes of them).
func TestProfileThirdSignal(t *testing.T) {
	bin := agentperfBinary(t)
	cfg := sim.DefaultConfig()
	cfg.ZeroLatency = true
	cfg.Faults.Stall = sim.FaultRule{Every: 1}
	cfg.Faults.StallFor = time.Hour
	s := startSimWith(t, cfg)
	out := filepath.Join(t.TempDir(), "artifacts")
	p := startProc(t, bin, cleanEnv(t.TempDir()), "profile", "--url", s.URL, "--public-dataset", "synthetic:traces=8",
		"--model", "demo", "--tokenizer", "builtin", "--concurrency", "4", "--benchmark-duration", "600", "--benchmark-grace-period", "3600",
		"--streaming", "--trace-idle-gap-cap-seconds", "0.01", "--output-artifact-dir", out, "--ui-type", "none")
	if !waitForLog(filepath.Join(out, "logs", "aiperf.log"), "warmup: ", p.done, 60*time.Second) {
		t.Fatalf("the warmup never started (%v)\nstderr:\n%s", p.err, p.stderr.String())
	}
	time.Sleep(300 * time.Millisecond)
	for range 3 {
		// Apart, so that the kernel does not merge them into one.
		p.cmd.Process.Signal(syscall.SIGTERM)
		time.Sleep(20 * time.Millisecond)
	}
	if code := p.wait(t); code != exitInterrupted {
		t.Fatalf("exit %d, want %d\nstderr:\n%s", code, exitInterrupted, p.stderr.String())
	}
	stderr := p.stderr.String()
	if _, err := os.Stat(filepath.Join(out, "profile_export_aiperf.json")); err != nil {
		if !strings.Contains(stderr, "third signal: exiting at once") {
			t.Fatalf("the artifacts are missing but stderr does not say a third signal ended the run:\n%s", stderr)
		}
		return
	}
	if strings.Contains(stderr, "third signal: exiting at once") {
		// The third signal may come while the artifacts are written (after
		// a SIGTERM the aggregates go first): what is there may be
		// incomplete, as documented.
		return
	}
	checkArtifacts(t, out)
}

// TestProfileReportOnPartialFiles: a run killed (SIGKILL, or a third
// signal) leaves .partial files. `agentperf report` on such a folder used
// to exit 0 with was_cancelled=false and adds_up true; now it says the
// files are partial, marks the run cancelled, does not claim that the
// accounting adds up, exits 1, and --check fails run_completed.
func TestProfileReportOnPartialFiles(t *testing.T) {
	bin := agentperfBinary(t)
	cfg := sim.DefaultConfig()
	cfg.ZeroLatency = true
	s := startSimWith(t, cfg)
	out := filepath.Join(t.TempDir(), "artifacts")
	cacheDir := t.TempDir()
	p := startProc(t, bin, cleanEnv(cacheDir), "profile", "--url", s.URL, "--public-dataset", "synthetic:traces=8",
		"--model", "demo", "--tokenizer", "builtin", "--concurrency", "4", "--benchmark-duration", "600",
		"--streaming", "--trace-idle-gap-cap-seconds", "0.01", "--output-artifact-dir", out, "--ui-type", "none", "--no-plot")
	if !waitForLog(filepath.Join(out, "logs", "aiperf.log"), "profiling: started", p.done, 60*time.Second) {
		t.Fatalf("profiling never started (%v)\nstderr:\n%s", p.err, p.stderr.String())
	}
	time.Sleep(1500 * time.Millisecond) // some records on disk (the writer flushes every second)
	p.cmd.Process.Kill()
	p.wait(t)
	if b, err := os.ReadFile(filepath.Join(out, "profile_export.jsonl.partial")); err != nil || len(b) == 0 {
		t.Fatalf("no partial record file to report on (%v)", err)
	}
	code, stdout, stderr := runBinary(t, bin, cacheDir, "report", "--no-plot", "--no-html", out)
	if code != exitRunFailed {
		t.Fatalf("report on partial files: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitRunFailed, stdout, stderr)
	}
	for _, w := range []string{"run cancelled", "profile_export.jsonl.partial: the run did not finish"} {
		if !strings.Contains(stdout, w) {
			t.Errorf("report does not say %q:\n%s", w, stdout)
		}
	}
	if !strings.Contains(stderr, "how many requests it sent is not recorded") {
		t.Errorf("report does not say the accounting cannot be checked:\n%s", stderr)
	}
	agg := readAggregate(t, out)
	acct := agg["metadata"].(map[string]any)["request_accounting"].(map[string]any)
	if agg["was_cancelled"] != true || acct["adds_up"] != false {
		t.Errorf("report on partial files wrote was_cancelled %v, adds_up %v; want true, false", agg["was_cancelled"], acct["adds_up"])
	}
	code, stdout, _ = runBinary(t, bin, cacheDir, "report", "--check", out)
	if code != exitRunFailed || !strings.Contains(stdout, "FAIL run_completed") || !strings.Contains(stdout, "FAIL request_accounting") {
		t.Errorf("report --check on partial files: exit %d\n%s", code, stdout)
	}
}
