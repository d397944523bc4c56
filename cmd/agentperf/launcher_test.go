//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/server/sim"
)

// launcherScript is InferenceX's way of running the client, in our words:
// the client's stdout and stderr go through `2>&1 | tee` into
// benchmark.log, and the job's status is the client's, from PIPESTATUS.
// The traps keep the shell alive through the signal so that it can record
// that status (the launcher's own traps exit 130/143 instead); a trap is
// reset in the children, so the client and tee get the signal's default
// action as under the real launcher.
const launcherScript = `
trap 'echo signalled >>"$RESULT_DIR/traps"' TERM INT
set +e
"$AGENTPERF" "$@" 2>&1 | tee "$RESULT_DIR/benchmark.log" >/dev/null
replay_rc=${PIPESTATUS[0]}
echo "$replay_rc" >"$RESULT_DIR/replay_rc"
`

// TestLauncherPipelineSignals reproduces the report: InferenceX's command
// line run as its launcher runs it (`| tee`, PIPESTATUS) in a session of
// its own (setsid), and a signal to the whole process group, as scancel or
// a Slurm time limit sends it, in the warmup and in profiling. tee dies
// first, so the client's next write to the pipe fails: it used to die of
// SIGPIPE (status 141) and leave only .partial files. Now terminal output
// turns off, the run stops as documented, every artifact is complete and
// marked cancelled, and the status the launcher reads is 130. The time
// from the signal to the aggregate on disk is logged (the SIGTERM budget
// of docs/stopping-early.md; not asserted, machines differ). After a
// SIGTERM, a SIGKILL follows 30 s later, as Slurm's KillWait sends it: the
// run must have recorded its status before.
func TestLauncherPipelineSignals(t *testing.T) {
	bin := agentperfBinary(t)
	for _, tool := range []string{"bash", "tee"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH: %v", tool, err)
		}
	}
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 5, Traces: 8, MinTurns: 6, MaxTurns: 14, TimeScale: 0.002})
	hub := writeHFCache(t, "semianalysisai/cc-traces-weka-062126-256k", traces)
	phases := []struct {
		name    string
		cfg     func(*sim.Config)
		waitFor string
	}{
		// Every warmup request takes 3 s: the signal finds them in flight.
		{"warmup", func(c *sim.Config) {
			c.ZeroLatency = true
			c.Faults.Stall = sim.FaultRule{Every: 1}
			c.Faults.StallFor = 3 * time.Second
		}, "warmup: "},
		{"profiling", func(c *sim.Config) { c.DecodeBaseMs = 20; c.PrefillTokensPerSec = 1e6 }, "profiling: started"},
	}
	for _, ph := range phases {
		for _, sg := range []struct {
			name string
			sigs []syscall.Signal
			mark string // metadata.agentperf.interrupted
		}{
			{"SIGTERM", []syscall.Signal{syscall.SIGTERM}, "once"},
			{"SIGINT", []syscall.Signal{syscall.SIGINT}, "once"},
			{"SIGINT twice", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, "twice"},
		} {
			sig := sg.sigs[0]
			t.Run(ph.name+"/"+sg.name, func(t *testing.T) {
				cfg := sim.DefaultConfig()
				ph.cfg(&cfg)
				cfg.Model = "served-model"
				s, err := sim.New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })

				resultDir := t.TempDir()
				out := filepath.Join(resultDir, "aiperf_artifacts")
				args := append([]string{"-c", launcherScript, "launcher"}, headArgv(s.URL, out, 8, "600")...)
				cmd := exec.Command("bash", args...)
				cmd.Env = append(cleanEnv(t.TempDir()), "AGENTPERF="+bin, "RESULT_DIR="+resultDir, "HF_HUB_CACHE="+hub)
				cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // setsid: its own process group
				var shellErr bytes.Buffer
				cmd.Stderr = &shellErr
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				go func() { cmd.Wait(); close(done) }()
				t.Cleanup(func() {
					select {
					case <-done:
					default:
						syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
						<-done
					}
				})
				if !waitForLog(filepath.Join(out, "logs", "aiperf.log"), ph.waitFor, done, 60*time.Second) {
					b, _ := os.ReadFile(filepath.Join(resultDir, "benchmark.log"))
					t.Fatalf("%q never appeared in the log\nbenchmark.log:\n%s\nshell:\n%s", ph.waitFor, b, shellErr.String())
				}
				time.Sleep(700 * time.Millisecond) // requests in flight
				agg := filepath.Join(out, "profile_export_aiperf.json")
				sent := time.Now()
				if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil { // the whole process group, tee included
					t.Fatal(err)
				}
				if sig == syscall.SIGTERM {
					// A Slurm time limit: SIGKILL KillWait (30 s) after the
					// SIGTERM. The run must have ended before it.
					kill := time.AfterFunc(30*time.Second, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
					defer kill.Stop()
				}
				if len(sg.sigs) > 1 {
					go func() {
						time.Sleep(300 * time.Millisecond) // apart, so that they are not merged into one
						syscall.Kill(-cmd.Process.Pid, sg.sigs[1])
					}()
				}
				var took time.Duration
				for took == 0 {
					if _, err := os.Stat(agg); err == nil {
						took = time.Since(sent)
						break
					}
					select {
					case <-done:
						if _, err := os.Stat(agg); err == nil {
							took = time.Since(sent)
						} else {
							took = -1
						}
					case <-time.After(10 * time.Millisecond):
					}
				}
				select {
				case <-done:
				case <-time.After(120 * time.Second):
					t.Fatalf("the launcher still runs 120 s after %s", sg.name)
				}
				if took < 0 {
					t.Fatalf("no aggregate after %s", sg.name)
				}
				t.Logf("%s in %s: from the signal to %s on disk: %s", sg.name, ph.name, filepath.Base(agg), took.Round(time.Millisecond))

				b, err := os.ReadFile(filepath.Join(resultDir, "replay_rc"))
				if err != nil {
					t.Fatalf("the launcher recorded no status (%v)\nshell:\n%s", err, shellErr.String())
				}
				rc, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				if rc != exitInterrupted {
					log, _ := os.ReadFile(filepath.Join(out, "logs", "aiperf.log"))
					t.Fatalf("PIPESTATUS[0] = %d, want %d (141 is death by SIGPIPE)\naiperf.log:\n%s", rc, exitInterrupted, log)
				}
				md := checkArtifacts(t, out)["metadata"].(map[string]any)
				aggJSON := readAggregate(t, out)
				ap := md["agentperf"].(map[string]any)
				if aggJSON["was_cancelled"] != true || ap["interrupted"] != sg.mark {
					t.Errorf("was_cancelled %v, interrupted %v; want true, %s", aggJSON["was_cancelled"], ap["interrupted"], sg.mark)
				}
				if acct := md["request_accounting"].(map[string]any); acct["adds_up"] != true {
					t.Errorf("the accounting does not add up: %v", acct)
				}
				for _, f := range []string{"server_metrics_export.json", "server_metrics_export.csv", "report.html", "metrics_plots.png"} {
					if _, err := os.Stat(filepath.Join(out, f)); err != nil {
						t.Errorf("artifact missing: %v", err)
					}
				}
				for _, f := range []string{"profile_export.jsonl.partial", "context_overflow_export.jsonl.partial", ".agentperf-reserve"} {
					if _, err := os.Stat(filepath.Join(out, f)); err == nil {
						t.Errorf("left behind: %s", f)
					}
				}
				reasons := fmt.Sprint(md["submission_invalid_reasons"])
				if !strings.Contains(reasons, "run_cancelled") {
					t.Errorf("submission_invalid_reasons = %s, want run_cancelled", reasons)
				}
				msgs := fmt.Sprint(ap["invalid_messages"])
				if strings.Contains(msgs, "server stopped answering") || !strings.Contains(msgs, "interrupted by a signal") {
					t.Errorf("the verdict does not name the signal as the cause: %s", msgs)
				}
				if sig == syscall.SIGTERM && !strings.Contains(fmt.Sprint(md["warnings"]), "stopped by SIGTERM") {
					t.Errorf("metadata.warnings do not say SIGTERM stopped the run: %v", md["warnings"])
				}
			})
		}
	}
}
