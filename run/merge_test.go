package run_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
	"github.com/agentperf/agentperf/timing"
)

// barrier is an in-process replay.Coordinator for the shards of one run
// in a test.
type barrier struct {
	mu      sync.Mutex
	n       int
	count   map[string]int
	align   map[string]timing.Alignment
	release map[string]chan struct{}
	at      map[string]time.Time
	stopped chan struct{}
	once    sync.Once
	reason  string
}

func newBarrier(n int) *barrier {
	return &barrier{n: n, count: map[string]int{}, align: map[string]timing.Alignment{}, release: map[string]chan struct{}{}, at: map[string]time.Time{}, stopped: make(chan struct{})}
}

func (b *barrier) Barrier(ctx context.Context, name string, a timing.Alignment) (time.Time, timing.Alignment, error) {
	b.mu.Lock()
	ch := b.release[name]
	if ch == nil {
		ch = make(chan struct{})
		b.release[name] = ch
	}
	b.align[name] = b.align[name].Combine(a)
	if b.count[name]++; b.count[name] == b.n {
		b.at[name] = time.Now().Add(10 * time.Millisecond)
		close(ch)
	}
	b.mu.Unlock()
	select {
	case <-ch:
	case <-b.stopped:
		return time.Time{}, a, errors.New("stopped")
	case <-ctx.Done():
		return time.Time{}, a, ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.at[name], b.align[name], nil
}
func (b *barrier) Stopped() <-chan struct{} { return b.stopped }
func (b *barrier) StopReason() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reason
}
func (b *barrier) Abort(reason, msg string) {
	b.once.Do(func() { b.mu.Lock(); b.reason = reason; b.mu.Unlock(); close(b.stopped) })
}

// shardedRun runs a 3-shard run of 7 lanes against one zero-latency sim,
// each shard finished into its own folder under root (shard-I); it
// returns the folders and the sim.
func shardedRun(t *testing.T, root string) ([]string, *sim.Server) {
	t.Helper()
	sc := sim.DefaultConfig()
	sc.Model, sc.ZeroLatency = "demo", true
	srv, err := sim.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 1, Traces: 8, MinTurns: 6, MaxTurns: 12, TimeScale: 0.001})
	const shards = 3
	co := newBarrier(shards)
	dirs := make([]string, shards)
	var wg sync.WaitGroup
	for i := range shards {
		dirs[i] = filepath.Join(root, fmt.Sprintf("shard-%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			col, err := metrics.NewCollector(dirs[i], metrics.CollectorOptions{SliceDuration: 100 * time.Millisecond})
			if err != nil {
				t.Error(err)
				return
			}
			syn, err := prompttext.New(tokenizer.Builtin(), prompttext.Options{Seed: 1})
			if err != nil {
				t.Error(err)
				return
			}
			cfg := replay.DefaultConfig()
			cfg.URL, cfg.Models, cfg.Synth, cfg.Concurrency, cfg.Seed = srv.URL, []string{"demo"}, syn, 7, 7
			cfg.Traces, cfg.BenchmarkID = traces, "run-merge-test"
			cfg.BenchmarkDuration, cfg.TraceIdleGapCap = 400*time.Millisecond, 10*time.Millisecond
			cfg.Streaming, cfg.Sink = true, col
			cfg.Classifier = scenario.DefaultClassifier()
			cfg.Shard, cfg.Coordinator = timing.Shard{Index: i, Count: shards}, co
			res, err := replay.Run(context.Background(), cfg)
			if err != nil {
				t.Error(err)
				return
			}
			out, err := run.Finish(res, run.Input{Dir: dirs[i], Collector: col, Synth: syn, Duration: cfg.BenchmarkDuration, Concurrency: cfg.Concurrency,
				// Shard 1 draws its plot, without a server export (shard 0
				// scrapes): its warning must not reach the merged folder.
				NoPlot: i != 1,
				Shard:  &run.ShardManifest{RunID: cfg.BenchmarkID, Index: i, Count: shards, Seed: cfg.Seed, Argv: []string{"profile", "--concurrency", "7"}, CorpusDigest: "c0ffee"}})
			if err != nil {
				t.Error(err)
				return
			}
			if out.Failed() {
				t.Errorf("shard %d failed: %v", i, out.Problems)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return dirs, srv
}

// profilingValues reads one metric of every successful profiling record
// of an export.
func exportValues(t *testing.T, path string) (map[string][]float64, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vals := map[string][]float64{}
	lines := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		lines++
		var rec struct {
			Metadata struct {
				Phase     string `json:"benchmark_phase"`
				Cancelled bool   `json:"was_cancelled"`
			} `json:"metadata"`
			Metrics map[string]struct {
				Value json.RawMessage `json:"value"`
			} `json:"metrics"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Metadata.Phase != "profiling" || rec.Metadata.Cancelled || rec.Error != nil {
			continue
		}
		for k, v := range rec.Metrics {
			var x float64
			if json.Unmarshal(v.Value, &x) == nil {
				vals[k] = append(vals[k], x)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return vals, lines
}

// percentile is numpy's linear interpolation between closest ranks.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	r := p / 100 * float64(len(sorted)-1)
	lo := int(math.Floor(r))
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (r-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// TestMergeIsExact: the merged folder of a 3-shard run holds every
// shard's records (as many as the shards wrote and the sim received), and
// each of its statistics is the one computed here from the merged records
// themselves: no statistic of statistics.
func TestMergeIsExact(t *testing.T) {
	root := t.TempDir()
	dirs, srv := shardedRun(t, root)
	out := filepath.Join(root, "merged")
	res, err := run.Merge(run.MergeInput{Dir: out, Shards: []string{dirs[2], dirs[0], dirs[1]}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed() {
		t.Fatalf("merge failed: %v", res.Problems)
	}
	total := 0
	for _, d := range dirs {
		_, n := exportValues(t, filepath.Join(d, metrics.FileRecords))
		total += n
	}
	vals, merged := exportValues(t, filepath.Join(out, metrics.FileRecords))
	if merged != total || int64(merged) != srv.Stats().Requests {
		t.Fatalf("merged %d records; the shards wrote %d, the sim received %d", merged, total, srv.Stats().Requests)
	}
	b, err := os.ReadFile(filepath.Join(out, metrics.FileAggregateJSON))
	if err != nil {
		t.Fatal(err)
	}
	var agg map[string]json.RawMessage
	if err := json.Unmarshal(b, &agg); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for tag, xs := range vals {
		raw, ok := agg[tag]
		if !ok {
			continue
		}
		var st map[string]any
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		slices.Sort(xs)
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		want := map[string]float64{"count": float64(len(xs)), "avg": sum / float64(len(xs)), "min": xs[0], "max": xs[len(xs)-1],
			"p1": percentile(xs, 1), "p50": percentile(xs, 50), "p90": percentile(xs, 90), "p99": percentile(xs, 99)}
		for k, w := range want {
			g, ok := st[k].(float64)
			if !ok {
				continue
			}
			if math.Abs(g-w) > 1e-9*math.Max(1, math.Abs(w)) {
				t.Errorf("%s.%s = %v in the merged aggregates, %v from the merged records", tag, k, g, w)
			}
			checked++
		}
	}
	if checked < 40 {
		t.Fatalf("only %d statistics checked", checked)
	}
	var rc struct {
		Avg float64 `json:"avg"`
	}
	json.Unmarshal(agg["request_count"], &rc)
	if int(rc.Avg) != len(vals["request_latency"]) {
		t.Fatalf("request_count %v, %d successful profiling records", rc.Avg, len(vals["request_latency"]))
	}
	for _, name := range []string{metrics.FileAggregateCSV, metrics.FileTimeslicesJSON, "report.html", metrics.FileOverflow} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("merged folder: %v", err)
		}
	}
	// metadata.agentperf.merged_shards[].records: each shard's record
	// count (it was 0 for every shard: the report was made before the
	// records were copied).
	var md struct {
		Metadata struct {
			Agentperf struct {
				MergedShards []struct {
					Shard   int `json:"shard"`
					Records int `json:"records"`
				} `json:"merged_shards"`
			} `json:"agentperf"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &md); err != nil {
		t.Fatal(err)
	}
	if len(md.Metadata.Agentperf.MergedShards) != len(dirs) {
		t.Fatalf("merged_shards %+v, want %d shards", md.Metadata.Agentperf.MergedShards, len(dirs))
	}
	// Only shard 0 scrapes the server; the merged folder has its export,
	// and says nothing about the other shards' lack of one.
	var mw struct {
		Metadata struct {
			Warnings []string `json:"warnings"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &mw); err != nil {
		t.Fatal(err)
	}
	for _, w := range mw.Metadata.Warnings {
		if strings.Contains(w, "no server metrics export") {
			t.Errorf("merged metadata.warnings: %q", w)
		}
	}
	// Integers stay integers: the merged input_config is shard 0's.
	b0, err := os.ReadFile(filepath.Join(dirs[0], metrics.FileAggregateJSON))
	if err != nil {
		t.Fatal(err)
	}
	var agg0 map[string]json.RawMessage
	if err := json.Unmarshal(b0, &agg0); err != nil {
		t.Fatal(err)
	}
	// and so do the synthesis and tokenizer descriptions (a 64-bit seed
	// and the corpus sizes were written as floats, the seed rounded).
	var meta0, metaM struct {
		Metadata struct {
			Agentperf map[string]json.RawMessage `json:"agentperf"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b0, &meta0); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &metaM); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"synthesis", "tokenizer"} {
		if a, m := meta0.Metadata.Agentperf[k], metaM.Metadata.Agentperf[k]; len(a) == 0 || !bytes.Equal(a, m) {
			t.Errorf("metadata.agentperf.%s differs:\nshard 0: %s\nmerged:  %s", k, a, m)
		}
	}
	if !bytes.Equal(agg0["input_config"], agg["input_config"]) {
		t.Errorf("input_config of the merge differs from shard 0's:\nshard 0: %s\nmerged:  %s", agg0["input_config"], agg["input_config"])
	}
	for _, m := range md.Metadata.Agentperf.MergedShards {
		if _, n := exportValues(t, filepath.Join(dirs[m.Shard], metrics.FileRecords)); m.Records != n || n == 0 {
			t.Errorf("merged_shards: shard %d has records %d, its %s holds %d", m.Shard, m.Records, metrics.FileRecords, n)
		}
	}
}

// TestMergeRefuses: folders that are not one run's complete set of
// shards are refused, naming the problem, and nothing is merged.
func TestMergeRefuses(t *testing.T) {
	root := t.TempDir()
	dirs, _ := shardedRun(t, root)
	other := filepath.Join(root, "other-run")
	if err := os.CopyFS(other, os.DirFS(dirs[1])); err != nil {
		t.Fatal(err)
	}
	mp := filepath.Join(other, run.FileShard)
	b, _ := os.ReadFile(mp)
	var m map[string]any
	json.Unmarshal(b, &m)
	m["run_id"] = "another-run"
	b, _ = json.Marshal(m)
	os.WriteFile(mp, b, 0o644)
	for _, c := range []struct {
		name   string
		shards []string
		want   string
	}{
		{"missing", dirs[:2], "missing shard 2"},
		{"duplicate", []string{dirs[0], dirs[1], dirs[1]}, "both shard 1/3"},
		{"other run", []string{dirs[0], other, dirs[2]}, "run id"},
		{"not a shard", []string{dirs[0], root}, "not a finished shard folder"},
	} {
		out := filepath.Join(root, "out-"+c.name)
		_, err := run.Merge(run.MergeInput{Dir: out, Shards: c.shards})
		if !errors.Is(err, run.ErrMerge) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want ErrMerge naming %q", c.name, err, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: the output folder was created", c.name)
		}
	}
}

func TestShardArgv(t *testing.T) {
	got := run.ShardArgv([]string{"--url", "u", "--shard", "2/3", "--output-artifact-dir", "a/2", "--artifact-dir=b", "--shard=auto", "--concurrency", "9"})
	if want := []string{"--url", "u", "--concurrency", "9"}; !slices.Equal(got, want) {
		t.Fatalf("ShardArgv = %q, want %q", got, want)
	}
}

// TestMergeOverARecordFileCutMidLine (issue 34, case 10): a shard's
// record file cut mid-line used to fail the merge as a run failure (exit
// 1) and leave .partial files in OUT, so the retry was refused as "not
// empty". It is a refusal (ErrMerge: exit 2) naming the file and line,
// and OUT is left as it was: absent, or empty when it existed.
func TestMergeOverARecordFileCutMidLine(t *testing.T) {
	root := t.TempDir()
	dirs, _ := shardedRun(t, root)
	rec := filepath.Join(dirs[2], "profile_export.jsonl")
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(b, []byte("\n"))
	if err := os.WriteFile(rec, b[:len(b)-20], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, existed := range []bool{false, true} {
		out := filepath.Join(root, fmt.Sprintf("out-existed-%v", existed))
		if existed {
			os.Mkdir(out, 0o755)
		}
		_, err := run.Merge(run.MergeInput{Dir: out, Shards: dirs})
		want := fmt.Sprintf("profile_export.jsonl:%d", lines)
		if !errors.Is(err, run.ErrMerge) || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want ErrMerge naming %q", err, want)
		}
		ents, statErr := os.ReadDir(out)
		switch {
		case !existed && statErr == nil:
			t.Errorf("the output folder was created: %d entries", len(ents))
		case existed && len(ents) > 0:
			t.Errorf("the output folder holds %d entries after the failed merge (%s, …)", len(ents), ents[0].Name())
		}
	}
	// The retry after the fix is not refused.
	os.WriteFile(rec, b, 0o644)
	if _, err := run.Merge(run.MergeInput{Dir: filepath.Join(root, "out-existed-true"), Shards: dirs}); err != nil {
		t.Errorf("the retry: %v", err)
	}
}

// TestMergeNamesTheSignalThatStoppedTheShards (issue 34, case 12): under
// scancel (SIGTERM to every shard) the shard that heard the signal first
// stops the others, which record shard_stopped. The merged folder used to
// say aborted=shard_stopped; it now says what stopped them: an
// interrupted run (no abort, cancelled, its profiling_end), exit 130.
func TestMergeNamesTheSignalThatStoppedTheShards(t *testing.T) {
	root := t.TempDir()
	dirs, _ := shardedRun(t, root)
	for i, d := range dirs {
		mp := filepath.Join(d, run.FileShard)
		b, _ := os.ReadFile(mp)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		r := m["result"].(map[string]any)
		if i == 0 {
			r["Cancelled"], r["EndReason"] = true, "interrupted: stopped by SIGTERM"
		} else {
			r["Aborted"], r["AbortMessage"] = replay.AbortShardStopped, "the run was stopped by another shard: shard 0/3 was interrupted"
		}
		b, _ = json.Marshal(m)
		os.WriteFile(mp, b, 0o644)
	}
	out, err := run.Merge(run.MergeInput{Dir: filepath.Join(root, "merged"), Shards: dirs})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Aborted != "" || !out.Interrupted || out.ExitCode() != run.ExitInterrupted {
		t.Errorf("merged: aborted %q, interrupted %v, exit %d; want no abort, interrupted, 130", out.Result.Aborted, out.Interrupted, out.ExitCode())
	}
	agg, err := metrics.ReadAggregateFile(filepath.Join(root, "merged"))
	if err != nil {
		t.Fatal(err)
	}
	ap := agg.Metadata.Agentperf
	if ap["aborted"] != "" || !strings.Contains(fmt.Sprint(ap["profiling_end"]), "SIGTERM") {
		t.Errorf("merged metadata.agentperf: aborted %v, profiling_end %v", ap["aborted"], ap["profiling_end"])
	}
}
