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

	"github.com/agentperf/agentperf/server/sim"
)

// TestAgentXPublishedArgvInterrupted runs the command line people publish
// for AgentX (`--scenario agentx`, an hour, the warmup and threshold
// flags spelled out, server metrics) as they run it, `2>&1 | tee
// client.log` under a launcher that records PIPESTATUS, and stops it with
// SIGINT to the process group mid-profiling: the aggregate is complete
// (the accounting adds up), the run is marked cancelled with the one
// reason run_cancelled (the coverage rule is not judged for a cancelled
// run), and the status the launcher reads is 130 (docs/artifacts.md, "Exit
// codes").
func TestAgentXPublishedArgvInterrupted(t *testing.T) {
	bin := agentperfBinary(t)
	for _, tool := range []string{"bash", "tee"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not on PATH: %v", tool, err)
		}
	}
	hub := agentxHubCache(t)
	cfg := sim.DefaultConfig()
	cfg.DecodeBaseMs, cfg.PrefillTokensPerSec = 20, 1e6
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
	argv := []string{"profile", "--scenario", "agentx", "--url", s.URL, "--model", "served-model", "--tokenizer", agentxTokenizer,
		"--concurrency", "8", "--benchmark-duration", "3600", "--warmup-requests-per-lane", "10", "--warmup-grace-period", "1800",
		"--failed-request-threshold", "0.10", "--server-metrics", s.URL + "/metrics", s.URL + "/metrics",
		"--output-artifact-dir", out, "--public-dataset", agentxAlias}
	args := append([]string{"-c", launcherScript, "launcher"}, argv...)
	cmd := exec.Command("bash", args...)
	cmd.Env = append(cleanEnv(t.TempDir()), "AGENTPERF="+bin, "RESULT_DIR="+resultDir, "HF_HUB_CACHE="+hub, "HF_HUB_OFFLINE=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
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
	if !waitForLog(filepath.Join(out, "logs", "aiperf.log"), "profiling: started", done, 90*time.Second) {
		b, _ := os.ReadFile(filepath.Join(resultDir, "benchmark.log"))
		t.Fatalf("profiling never started\nclient log:\n%s\nshell:\n%s", b, shellErr.String())
	}
	time.Sleep(1500 * time.Millisecond)                                    // requests in flight
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil { // the whole group, tee included
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		t.Fatal("the launcher still runs 120 s after SIGINT")
	}
	b, err := os.ReadFile(filepath.Join(resultDir, "replay_rc"))
	if err != nil {
		t.Fatalf("the launcher recorded no status (%v)\nshell:\n%s", err, shellErr.String())
	}
	if rc, _ := strconv.Atoi(strings.TrimSpace(string(b))); rc != exitInterrupted {
		log, _ := os.ReadFile(filepath.Join(out, "logs", "aiperf.log"))
		t.Fatalf("PIPESTATUS[0] = %d, want %d\naiperf.log:\n%s", rc, exitInterrupted, log)
	}
	agg := checkArtifacts(t, out)
	md := agg["metadata"].(map[string]any)
	if agg["was_cancelled"] != true || md["scenario"] != "agentx" || md["submission_valid"] != false {
		t.Errorf("was_cancelled %v, scenario %v, submission_valid %v; want true, agentx, false", agg["was_cancelled"], md["scenario"], md["submission_valid"])
	}
	if r := fmt.Sprint(md["submission_invalid_reasons"]); r != "[run_cancelled]" {
		t.Errorf("submission_invalid_reasons = %s, want [run_cancelled]", r)
	}
	if acct := md["request_accounting"].(map[string]any); acct["adds_up"] != true {
		t.Errorf("the accounting does not add up: %v", acct)
	}
	if n := num(agg, "request_count", "avg"); n <= 0 {
		t.Errorf("request_count %v: no profiling request in the aggregate", n)
	}
	ic := agg["input_config"].(map[string]any)
	if ic["benchmark_duration"] != 3600.0 || ic["random_seed"] != 42.0 || ic["num_dataset_entries"] != 393.0 || ic["trace_idle_gap_cap_seconds"] != 300.0 {
		t.Errorf("input_config lacks the preset's defaults: %v", ic)
	}
}
