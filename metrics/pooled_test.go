package metrics

import (
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/internal/codectest"
)

// TestPoolLeavesOutMissing: a run without the figure (NaN) is left out of
// the pool, not counted as zero.
func TestPoolLeavesOutMissing(t *testing.T) {
	t.Parallel()
	p := Pool([]float64{1, math.NaN(), 3}, 0.95, "ms")
	if p.N != 2 || p.Mean != 2 || len(p.Values) != 2 {
		t.Errorf("%+v: want 2 values of mean 2", p)
	}
	if w := p.HalfWidth(); math.Abs(w-12.706205) > 1e-5 {
		// s = √2, se = 1, t(0.975, 1) = 12.706205
		t.Errorf("half-width %v, want 12.706205", w)
	}
}

// TestRunFolders: the runs a pooled summary lists (not every folder under
// profile_runs), else the run folders found, else the folder itself.
func TestRunFolders(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if got, err := RunFolders(dir); err != nil || !reflect.DeepEqual(got, []string{dir}) {
		t.Errorf("one run: %v %v", got, err)
	}
	for _, r := range []string{"run_0002", "run_0001", "run_0003"} {
		os.MkdirAll(filepath.Join(dir, DirProfileRuns, r), 0o755)
	}
	want := []string{filepath.Join(dir, DirProfileRuns, "run_0001"), filepath.Join(dir, DirProfileRuns, "run_0002"), filepath.Join(dir, DirProfileRuns, "run_0003")}
	if got, err := RunFolders(dir); err != nil || !reflect.DeepEqual(got, want) || !IsRepeated(dir) {
		t.Errorf("run folders without a summary: %v %v", got, err)
	}
	b, _ := EncodePooledSummary(PooledSummary{SchemaVersion: 1, RunsRequested: 3, RunsDone: 2, Runs: []string{"profile_runs/run_0001", "profile_runs/run_0002"}})
	os.MkdirAll(filepath.Join(dir, DirPooled), 0o755)
	os.WriteFile(filepath.Join(dir, DirPooled, FilePooledSummary), b, 0o644)
	if got, err := RunFolders(dir); err != nil || !reflect.DeepEqual(got, want[:2]) {
		t.Errorf("with a summary of two runs: %v %v", got, err)
	}
	os.WriteFile(filepath.Join(dir, DirPooled, FilePooledSummary), []byte(`{"runs":["../../etc"]}`), 0o644)
	if _, err := RunFolders(dir); !errors.Is(err, ErrBadPooledSummary) || !strings.Contains(err.Error(), FilePooledSummary) {
		t.Errorf("a run outside the folder: %v", err)
	}
}

// FuzzPooledSummaryRoundTrip: a pooled summary survives
// EncodePooledSummary → DecodePooledSummary, and the bytes are a fixed
// point.
func FuzzPooledSummaryRoundTrip(f *testing.F) {
	f.Add(3, "time_to_first_token.p50", 1.5, 2.5, "converged")
	f.Add(0, "", 0.0, -1.0, "")
	f.Fuzz(func(t *testing.T, n int, name string, a, b float64, stopped string) {
		if math.IsNaN(a) || math.IsInf(a, 0) || math.IsNaN(b) || math.IsInf(b, 0) {
			return // JSON has no NaN: Pool leaves them out
		}
		name, stopped = strings.ToValidUTF8(name, ""), strings.ToValidUTF8(stopped, "")
		s := PooledSummary{SchemaVersion: 1, RunsRequested: n, RunsDone: 2, Confidence: 0.95, Runs: []string{"profile_runs/run_0001", "profile_runs/run_0002"},
			StoppedEarly: stopped, Warmup: "w", Metrics: map[string]Pooled{name: Pool([]float64{a, b}, 0.95, "ms")}}
		if back, _ := codectest.RoundTrip(t, s, EncodePooledSummary, DecodePooledSummary); !reflect.DeepEqual(back, s) {
			t.Fatalf("decoded %+v, want %+v", back, s)
		}
	})
}

// FuzzDecodePooledSummary: any bytes either decode or give an error, never
// a panic; what decodes encodes to a fixed point.
func FuzzDecodePooledSummary(f *testing.F) {
	f.Add([]byte(`{"schema_version":1,"num_profile_runs":2,"runs_done":2,"runs":["profile_runs/run_0001"],"metrics":{"x":{"values":[1,2],"n":2}}}`))
	f.Add([]byte(`{"runs":["/abs"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		codectest.FixedPoint(t, b, DecodePooledSummary, EncodePooledSummary)
	})
}

// TestRepoolSummary: every metric of the pooled summary is pooled again
// from the aggregates its runs hold (a stale value is replaced, the unit
// and confidence level kept), what else it says is kept, and the file is
// written back; without a summary the error is fs.ErrNotExist.
func TestRepoolSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := RepoolSummary(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no summary: %v", err)
	}
	runs := []string{"profile_runs/run_0001", "profile_runs/run_0002"}
	var want []float64
	for i, r := range runs {
		c, err := NewCollector(filepath.Join(dir, r), CollectorOptions{Now: fixedClock(t0), Location: time.UTC})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range randomRecords(uint64(i+1), 20) {
			c.Add(rec)
		}
		s, err := c.Finish(RunInfo{})
		if err != nil && !errors.Is(err, ErrAccounting) {
			t.Fatal(err)
		}
		a, err := ReadAggregateFile(filepath.Join(dir, r))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := a.Stat("request_latency")
		v, ok := st.Get("p50").Float()
		if !ok || s == nil {
			t.Fatalf("run %d has no request_latency.p50", i+1)
		}
		want = append(want, v)
	}
	stale := PooledSummary{SchemaVersion: 1, RunsRequested: 3, RunsDone: 2, Confidence: 0.9, Runs: runs, StoppedEarly: "converged", Warmup: "w",
		Metrics: map[string]Pooled{"request_latency.p50": Pool([]float64{1, 2}, 0.9, "ms"), "nodot": {Unit: "x", Mean: 7}}}
	b, _ := EncodePooledSummary(stale)
	os.MkdirAll(filepath.Join(dir, DirPooled), 0o755)
	if err := os.WriteFile(filepath.Join(dir, DirPooled, FilePooledSummary), b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := RepoolSummary(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p := got.Metrics["request_latency.p50"]; !reflect.DeepEqual(p, Pool(want, 0.9, "ms")) {
		t.Errorf("request_latency.p50 pooled %+v, want the runs' %v", p, want)
	}
	if got.StoppedEarly != "converged" || got.Warmup != "w" || got.RunsRequested != 3 || got.Metrics["nodot"].Mean != 7 {
		t.Errorf("what else the summary says was not kept: %+v", got)
	}
	if onDisk, err := ReadPooledSummary(dir); err != nil || !reflect.DeepEqual(onDisk, got) {
		t.Errorf("written back: %+v, %v", onDisk, err)
	}
}
