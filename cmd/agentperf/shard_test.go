package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/server/sim"
)

// loopbackAddr returns a loopback HOST:PORT whose port was free.
func loopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// shardArgs is the command line of one shard of a 9-lane run.
func shardArgs(url, rdv, out string, i int, duration string) []string {
	return []string{"profile", "--url", url, "--public-dataset", "synthetic:traces=12", "--model", "demo", "--tokenizer", "builtin",
		"--concurrency", "9", "--benchmark-duration", duration, "--benchmark-grace-period", "1", "--streaming", "--use-server-token-count",
		"--trace-idle-gap-cap-seconds", "0.05", "--slice-duration", "0.5", "--ui-type", "none", "--no-plot",
		"--shard", fmt.Sprintf("%d/3", i), "--shard-rendezvous", rdv, "--output-artifact-dir", out}
}

// jsonlLanes reads the worker ids and count of a record export.
func jsonlLanes(t *testing.T, path string) (map[string]int, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lanes := map[string]int{}
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r struct {
			Metadata struct {
				WorkerID string `json:"worker_id"`
				Shard    string `json:"shard"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		lanes[r.Metadata.WorkerID+" "+r.Metadata.Shard]++
		n++
	}
	return lanes, n
}

// TestShardedRunOnLocalhost: three shard processes of one run against one
// sim, met at a rendezvous on loopback, each writing its own folder
// ({shard} in --output-artifact-dir), then merged: each global lane was
// played by shard i mod 3 under its global name, and the merged folder
// holds every record (the request export and the context-overflow
// export): as many as the shards wrote and the sim received.
func TestShardedRunOnLocalhost(t *testing.T) {
	bin := agentperfBinary(t)
	cfg := sim.DefaultConfig()
	cfg.ZeroLatency = true
	s := startSimWith(t, cfg)
	root := t.TempDir()
	rdv := loopbackAddr(t)
	var procs []*proc
	for i := range 3 {
		procs = append(procs, startProc(t, bin, cleanEnv(t.TempDir()), shardArgs(s.URL, rdv, filepath.Join(root, "shard-{shard}"), i, "3")...))
	}
	for i, p := range procs {
		if code := p.wait(t); code != 0 && code != 1 {
			t.Fatalf("shard %d: exit %d\nstderr:\n%s", i, code, p.stderr.String())
		}
	}
	total := 0
	var dirs []string
	for i := range 3 {
		dir := filepath.Join(root, fmt.Sprintf("shard-%d", i))
		dirs = append(dirs, dir)
		checkArtifacts(t, dir)
		lanes, n := jsonlLanes(t, filepath.Join(dir, "profile_export.jsonl"))
		_, ovf := jsonlLanes(t, filepath.Join(dir, "context_overflow_export.jsonl"))
		total += n + ovf
		for k := range lanes {
			var lane int
			var sh string
			fmt.Sscanf(k, "lane_%d %s", &lane, &sh)
			if lane%3 != i || sh != fmt.Sprintf("%d/3", i) {
				t.Fatalf("shard %d wrote records of %q: lanes are dealt i mod 3 and named by their global index", i, k)
			}
		}
		if len(lanes) != 3 {
			t.Fatalf("shard %d played %d lanes, want 3: %v", i, len(lanes), lanes)
		}
	}
	out := filepath.Join(root, "merged")
	var stdout, stderr strings.Builder
	code := runMain(t.Context(), append([]string{"merge", out}, dirs...), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("merge exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	_, merged := jsonlLanes(t, filepath.Join(out, "profile_export.jsonl"))
	_, ovf := jsonlLanes(t, filepath.Join(out, "context_overflow_export.jsonl"))
	merged += ovf
	if merged != total || int64(merged) != s.Stats().Requests {
		t.Fatalf("merged %d records, the shards wrote %d, the sim received %d", merged, total, s.Stats().Requests)
	}
	agg := checkArtifacts(t, out)
	if got := num(agg, "metadata", "request_accounting", "sent"); int(got) != merged {
		t.Fatalf("merged accounting sent %v, %d records", got, merged)
	}
	for _, f := range []string{"report.html", "server_metrics_export.json", "profile_export_aiperf_timeslices.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("merged folder: %v", err)
		}
	}
}

// TestShardKilledStopsTheOthers: one shard of three killed mid-run
// (SIGKILL: it writes nothing more) stops the other two, which write
// every artifact, marked: aborted shard_stopped, and a manifest naming the
// vanished shard. The run cannot be merged: a shard is missing.
func TestShardKilledStopsTheOthers(t *testing.T) {
	bin := agentperfBinary(t)
	cfg := sim.DefaultConfig()
	cfg.ZeroLatency = true
	s := startSimWith(t, cfg)
	root := t.TempDir()
	rdv := loopbackAddr(t)
	var procs []*proc
	for i := range 3 {
		procs = append(procs, startProc(t, bin, cleanEnv(t.TempDir()), shardArgs(s.URL, rdv, filepath.Join(root, "shard-{shard}"), i, "600")...))
	}
	if !waitForLog(filepath.Join(root, "shard-1", "logs", "aiperf.log"), "profiling: started", procs[1].done, 90*time.Second) {
		t.Fatalf("shard 1 never started profiling\nstderr:\n%s", procs[1].stderr.String())
	}
	time.Sleep(300 * time.Millisecond)
	procs[1].cmd.Process.Signal(syscall.SIGKILL)
	for _, i := range []int{0, 2} {
		if code := procs[i].wait(t); code != 1 {
			t.Fatalf("shard %d: exit %d, want 1 (stopped)\nstderr:\n%s", i, code, procs[i].stderr.String())
		}
		dir := filepath.Join(root, fmt.Sprintf("shard-%d", i))
		agg := checkArtifacts(t, dir)
		ap := agg["metadata"].(map[string]any)["agentperf"].(map[string]any)
		if ap["aborted"] != "shard_stopped" {
			t.Fatalf("shard %d: metadata.agentperf.aborted = %v, want shard_stopped", i, ap["aborted"])
		}
		m, err := run.ReadShardManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(m.Stop, "shard 1/3 vanished") {
			t.Fatalf("shard %d: manifest stop %q, want it to name the vanished shard 1", i, m.Stop)
		}
	}
	var stdout, stderr strings.Builder
	code := runMain(t.Context(), []string{"merge", filepath.Join(root, "merged"), filepath.Join(root, "shard-0"), filepath.Join(root, "shard-2")}, &stdout, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "missing shard 1") {
		t.Fatalf("merge without shard 1: exit %d\n%s", code, stderr.String())
	}
}

// TestShardAuto: --shard auto reads the shard from Slurm's or a
// Kubernetes Indexed Job's environment, defaults the rendezvous under
// Slurm, and puts the shard's artifacts in {shard} or a shard-I folder.
func TestShardAuto(t *testing.T) {
	for _, c := range []struct {
		name    string
		env     map[string]string
		flags   shardFlags
		out     string
		want    string // shard
		wantDir string
		addr    string // prefix; "" = as given
		err     string
	}{
		{"slurm", map[string]string{"SLURM_PROCID": "1", "SLURM_NTASKS": "3", "SLURM_STEP_NODELIST": "gpu[07-09]", "SLURM_JOB_ID": "42", "SLURM_STEP_ID": "0"},
			shardFlags{shard: "auto"}, "art/{shard}", "1/3", "art/1", "gpu07:", ""},
		{"kubernetes", map[string]string{"JOB_COMPLETION_INDEX": "2"},
			shardFlags{shard: "auto", count: 4, rendezvous: "bench-0.bench:7070"}, "art", "2/4", "art/shard-2", "bench-0.bench:7070", ""},
		{"kubernetes count from env", map[string]string{"JOB_COMPLETION_INDEX": "0", "AGENTPERF_SHARD_COUNT": "2"},
			shardFlags{shard: "auto", rendezvous: "h:1"}, "art", "0/2", "art/shard-0", "h:1", ""},
		{"kubernetes needs the rendezvous", map[string]string{"JOB_COMPLETION_INDEX": "0"},
			shardFlags{shard: "auto", count: 2}, "art", "", "", "", "--shard-rendezvous HOST:PORT"},
		{"explicit one shard", nil, shardFlags{shard: "0/1"}, "art", "0/1", "art", "", ""},
		{"no lane", nil, shardFlags{shard: "9/10", rendezvous: "h:1"}, "art", "", "", "", "10 shards for --concurrency 9 (the global lane count): shards 9…9 would have no lane"},
		// Every shard of a run with more shards than lanes refuses it, not
		// only the ones without a lane (issue 34, case 8).
		{"a lane, but too many shards", nil, shardFlags{shard: "0/10", rendezvous: "h:1"}, "art", "", "", "", "shards 9…9 would have no lane; run at most 9 shards"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, k := range []string{"SLURM_PROCID", "SLURM_NTASKS", "SLURM_NPROCS", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_JOB_ID", "SLURM_STEP_ID", "JOB_COMPLETION_INDEX", "AGENTPERF_SHARD_COUNT"} {
				t.Setenv(k, c.env[k])
			}
			f := c.flags
			r := &profileRun{p: &profileFlags{shard: &f}}
			r.spec.OutputDir = c.out
			r.spec.Replay.Concurrency = 9
			err := r.resolveShard([]string{"profile", "--shard", f.shard})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one naming %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sp := r.spec
			if got := sp.Replay.Shard.String(); got != c.want || sp.OutputDir != c.wantDir || sp.Shard == nil || !strings.HasPrefix(sp.Shard.Rendezvous, c.addr) {
				t.Fatalf("shard %s, dir %s, spec.Shard %+v; want %s, %s, rendezvous %q…", got, sp.OutputDir, sp.Shard, c.want, c.wantDir, c.addr)
			}
			if len(sp.Shard.Argv) != 1 {
				t.Fatalf("argv for the run key %q: the --shard value must be left out", sp.Shard.Argv)
			}
		})
	}
}
