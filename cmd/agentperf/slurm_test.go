package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/internal/testshared"
	"github.com/agentperf/agentperf/server/sim"
)

// slurmUp reports whether a Slurm cluster answers here (srun in PATH and a
// node up), with why not.
func slurmUp() (bool, string) {
	if _, err := exec.LookPath("srun"); err != nil {
		return false, "srun is not installed"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "sinfo", "-h", "-o", "%T").CombinedOutput()
	if err != nil {
		return false, fmt.Sprintf("sinfo failed: %v: %s", err, strings.TrimSpace(string(out)))
	}
	s := string(out)
	if !strings.Contains(s, "idle") && !strings.Contains(s, "mix") && !strings.Contains(s, "alloc") {
		return false, "no Slurm node is up: " + strings.TrimSpace(s)
	}
	return true, ""
}

// TestSlurmShardedRun runs one sharded run the way a Slurm user does: one
// srun step of three tasks on this machine's single-node cluster, each
// task `agentperf profile --shard auto` (SLURM_PROCID/SLURM_NTASKS, the
// rendezvous defaulted to the step's first node and a port from the job
// and step ids), against one sim; then `agentperf merge`. .ci/run starts
// the cluster (.ci/slurm-up); without one the test skips.
func TestSlurmShardedRun(t *testing.T) {
	testshared.SkipIfShort(t, "a sharded run under Slurm")
	if ok, why := slurmUp(); !ok {
		t.Skipf("no Slurm cluster (%s): start one with .ci/slurm-up (as root; Debian's slurm-wlm and munge)", why)
	}
	bin := agentperfBinary(t)
	cfg := sim.DefaultConfig()
	cfg.ZeroLatency = true
	s := startSimWith(t, cfg)
	root := t.TempDir()
	out := filepath.Join(root, "shard-{shard}")
	args := []string{"--ntasks=3", "--overcommit", "--kill-on-bad-exit=0", "--time=5", bin}
	args = append(args, shardArgs(s.URL, "", out, 0, "3")...)
	// --shard auto, and no --shard-rendezvous: Slurm's defaults.
	for i := range args {
		if args[i] == "--shard" {
			args[i+1] = "auto"
		}
	}
	args = args[:len(args)-4]
	args = append(args, "--output-artifact-dir", out)
	cmd := exec.Command("srun", args...)
	cmd.Env = cleanEnv(t.TempDir())
	cmd.Dir = root
	done := make(chan struct{})
	var outb []byte
	var err error
	go func() { outb, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("srun did not finish in 3 minutes:\n%s", outb)
	}
	if err != nil {
		// A task's exit 1 is a shard whose own lanes completed nothing; the
		// run is judged merged.
		t.Logf("srun: %v", err)
	}
	var dirs []string
	total := 0
	for i := range 3 {
		dir := filepath.Join(root, fmt.Sprintf("shard-%d", i))
		if _, err := os.Stat(filepath.Join(dir, "agentperf_shard.json")); err != nil {
			t.Fatalf("shard %d wrote no manifest: %v\nsrun output:\n%s", i, err, outb)
		}
		dirs = append(dirs, dir)
		_, n := jsonlLanes(t, filepath.Join(dir, "profile_export.jsonl"))
		_, o := jsonlLanes(t, filepath.Join(dir, "context_overflow_export.jsonl"))
		total += n + o
	}
	if !strings.Contains(string(outb), "(from slurm)") {
		t.Errorf("the shards did not take their shard from Slurm:\n%s", outb)
	}
	merged := filepath.Join(root, "merged")
	var stdout, stderr strings.Builder
	if code := runMain(t.Context(), append([]string{"merge", merged}, dirs...), &stdout, &stderr); code != 0 {
		t.Fatalf("merge exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	_, n := jsonlLanes(t, filepath.Join(merged, "profile_export.jsonl"))
	_, o := jsonlLanes(t, filepath.Join(merged, "context_overflow_export.jsonl"))
	if n+o != total || int64(n+o) != s.Stats().Requests {
		t.Fatalf("merged %d records, the shards wrote %d, the sim received %d", n+o, total, s.Stats().Requests)
	}
}
