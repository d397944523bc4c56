package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	rtmetrics "runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/analysis/slo"
	"github.com/agentperf/agentperf/internal/codectest"
	"github.com/agentperf/agentperf/metrics"
)

// fakeRun writes a minimal artifact folder whose p99 TTFT is 10·c ms.
func fakeRun(ran *[]int) PointFunc {
	return func(ctx context.Context, c int, dir string) error {
		*ran = append(*ran, c)
		return fakeRunInto(c, dir)
	}
}

// fakeRepeatedRun is fakeRun with each point run n times, as a repeated
// run lays them out (profile_runs/run_000K, the pooled summary).
func fakeRepeatedRun(ran *[]int, n int) PointFunc {
	return func(ctx context.Context, c int, dir string) error {
		sum := metrics.PooledSummary{SchemaVersion: 1, RunsRequested: n, RunsDone: n, Confidence: 0.95}
		for k := 1; k <= n; k++ {
			*ran = append(*ran, c)
			rel := filepath.Join(metrics.DirProfileRuns, fmt.Sprintf("run_%04d", k))
			if err := fakeRunInto(c, filepath.Join(dir, rel)); err != nil {
				return err
			}
			sum.Runs = append(sum.Runs, rel)
		}
		b, err := metrics.EncodePooledSummary(sum)
		if err != nil {
			return err
		}
		os.MkdirAll(filepath.Join(dir, metrics.DirPooled), 0o755)
		return os.WriteFile(filepath.Join(dir, metrics.DirPooled, metrics.FilePooledSummary), b, 0o644)
	}
}

func fakeRunInto(c int, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var b strings.Builder
	for i := range 100 { // a p99 needs 100 samples (slo.MinSamples)
		fmt.Fprintf(&b, `{"metadata":{"request_end_ns":9,"benchmark_phase":"profiling","credit_issued_ns":%d,"request_start_ns":%d},"metrics":{"time_to_first_token":{"value":%d,"unit":"ms"}},"error":null}`+"\n",
			1000000, 1000000+i*1000, 10*c)
	}
	os.WriteFile(filepath.Join(dir, "profile_export.jsonl"), []byte(b.String()), 0o644)
	return os.WriteFile(filepath.Join(dir, "profile_export_aiperf.json"), []byte(`{"benchmark_duration":{"avg":2}}`), 0o644)
}

func TestSweepResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var ran []int
	ctx, cancel := context.WithCancel(context.Background())
	run := fakeRun(&ran)
	// The third point is interrupted mid-run: it leaves a partial folder.
	interrupting := func(ctx2 context.Context, c int, d string) error {
		if c == 16 {
			os.MkdirAll(d, 0o755)
			os.WriteFile(filepath.Join(d, "profile_export.jsonl"), []byte("{}\n"), 0o644)
			cancel()
			return nil
		}
		return run(ctx2, c, d)
	}
	var before []int
	cfg := SweepConfig{Dir: dir, Points: []int{4, 8, 16, 32}, Run: interrupting, Before: func(_ context.Context, c int) error { before = append(before, c); return nil }}
	pts, err := Sweep(ctx, cfg)
	if !errors.Is(err, context.Canceled) || len(pts) != 2 {
		t.Fatalf("interrupted sweep: %d points, err %v; want 2 and context.Canceled", len(pts), err)
	}
	ran = nil
	before = nil
	cfg.Run = run
	pts, err = Sweep(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ran, []int{16, 32}) || !slices.Equal(before, []int{16, 32}) {
		t.Errorf("resumed sweep ran %v (reset before %v), want [16 32]", ran, before)
	}
	var concs []int
	for _, p := range pts {
		concs = append(concs, p.Concurrency)
	}
	if !slices.Equal(concs, []int{4, 8, 16, 32}) {
		t.Errorf("points %v", concs)
	}
	if _, err := os.Stat(filepath.Join(dir, "c16.incomplete", "profile_export.jsonl")); err != nil {
		t.Errorf("the interrupted point's folder was not kept aside: %v", err)
	}
	ran = nil
	if _, err := Sweep(context.Background(), cfg); err != nil || len(ran) != 0 {
		t.Errorf("a complete sweep ran %v again (err %v)", ran, err)
	}
}

func TestSweepPointFailedContinues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var ran []int
	ok := fakeRun(&ran)
	pts, err := Sweep(context.Background(), SweepConfig{Dir: dir, Points: []int{1, 2, 3}, Run: func(ctx context.Context, c int, d string) error {
		if err := ok(ctx, c, d); err != nil {
			return err
		}
		if c == 2 {
			return fmt.Errorf("%w: invalid submission", ErrPointFailed)
		}
		return nil
	}})
	if err != nil || len(pts) != 3 || pts[1].Status != PointFailed || pts[2].Status != PointOK {
		t.Fatalf("points %+v, err %v", pts, err)
	}
	_, err = Sweep(context.Background(), SweepConfig{Dir: t.TempDir(), Points: []int{1, 2}, Run: func(context.Context, int, string) error { return errors.New("boom") }})
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("a fatal point error: %v", err)
	}
	if _, err := Sweep(context.Background(), SweepConfig{Dir: t.TempDir(), Points: []int{2, 2}, Run: ok}); err == nil {
		t.Error("duplicate points accepted")
	}
}

func TestParsePoints(t *testing.T) {
	t.Parallel()
	if p, err := ParsePoints("4, 8,16"); err != nil || !slices.Equal(p, []int{4, 8, 16}) {
		t.Errorf("%v %v", p, err)
	}
	for _, bad := range []string{"", "4,,8", "0", "4,4", "x"} {
		if _, err := ParsePoints(bad); err == nil {
			t.Errorf("ParsePoints(%q): no error", bad)
		}
	}
}

func TestClientCheck(t *testing.T) {
	t.Parallel()
	late := make([]float64, 100)
	for i := range late {
		late[i] = 0.5
	}
	idle := CPUUse{CPU: 100 * time.Millisecond, Wall: time.Second, Procs: 2, OK: true}
	if b, why := (ClientCheck{}).Judge(late, idle); b {
		t.Errorf("an idle client on time is client-bound: %s", why)
	}
	late[99] = 500
	if b, why := (ClientCheck{}).Judge(late, idle); b {
		t.Errorf("one late request of 100 marks the probe: %s", why)
	}
	late[98] = 500
	if b, why := (ClientCheck{}).Judge(late, idle); !b || !strings.Contains(why, "lateness") || !strings.Contains(why, "2 of 100") {
		t.Errorf("two late requests of 100: %v %q", b, why)
	}
	busy := CPUUse{CPU: 1900 * time.Millisecond, Wall: time.Second, Procs: 2, OK: true}
	if b, why := (ClientCheck{}).Judge(nil, busy); !b || !strings.Contains(why, "CPU 95%") {
		t.Errorf("95%% CPU: %v %q", b, why)
	}
	if b, _ := (ClientCheck{}).Judge(nil, CPUUse{CPU: 2 * time.Second, Wall: time.Second, Procs: 1}); b {
		t.Error("an unmeasured CPU use counts as saturated")
	}
	starved := idle
	starved.SchedP99, starved.SchedOK = 200*time.Millisecond, true
	if b, why := (ClientCheck{}).Judge(nil, starved); !b || !strings.Contains(why, "scheduler latency") {
		t.Errorf("scheduler latency p99 200 ms: %v %q", b, why)
	}
	if b, _ := (ClientCheck{MaxSchedP99: -1}).Judge(nil, starved); b {
		t.Error("a disabled scheduler check still marks the probe")
	}
	m := StartCPU()
	x := 0.0
	for i := range 20_000_000 {
		x += math.Sqrt(float64(i))
	}
	u := m.Stop()
	if u.OK && !(u.CPU > 0) {
		t.Errorf("a busy loop (%g) used no CPU: %+v", x, u)
	}
	h0 := &rtmetrics.Float64Histogram{Counts: []uint64{0, 0, 0}, Buckets: []float64{0, 0.001, 0.1, math.Inf(1)}}
	h := &rtmetrics.Float64Histogram{Counts: []uint64{98, 1, 1}, Buckets: h0.Buckets}
	if p, ok := histP99(h, h0); !ok || p != 100*time.Millisecond {
		t.Errorf("histP99 = %v %v, want 100ms (the bucket holding the 99th of 100)", p, ok)
	}
}

// TestRunSearchReport runs a search over fake probe folders (p99 TTFT
// 10·c ms against 255 ms) and checks the result file and plot.
func TestRunSearchReport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var ran []int
	o, err := slo.Parse("ttft.p99<=255ms,errors<=1%")
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunSearch(context.Background(), SearchConfig{Dir: dir, SLO: o, Search: Config{Lo: 1, Hi: 64, Resolution: Resolution{Abs: 1}}, Run: fakeRepeatedRun(&ran, 2), Repeats: 2,
		// The fake runs take no time: the CPU of the tests running beside
		// this one would make them look saturated.
		Client: ClientCheck{MaxCPU: -1, MaxSchedP99: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Best != 25 || res.Above == nil || res.Above.Concurrency != 26 {
		t.Errorf("Best %d Above %+v, want 25 and 26", res.Best, res.Above)
	}
	if len(ran) != 2*len(res.Probes) {
		t.Errorf("%d runs for %d probes with 2 repeats", len(ran), len(res.Probes))
	}
	b, err := os.ReadFile(filepath.Join(dir, SearchResultJSON))
	if err != nil || !strings.Contains(string(b), `"best_concurrency": 25`) || !strings.Contains(string(b), "probe-01-c1/profile_runs/run_0002") {
		t.Errorf("%s: %v\n%s", SearchResultJSON, err, b)
	}
	if st, err := os.Stat(filepath.Join(dir, SearchPlot)); err != nil || st.Size() < 10000 {
		t.Errorf("%s: %v", SearchPlot, err)
	}
}

// FuzzManifestRoundTrip: the sweep's points survive EncodeManifest →
// DecodeManifest, and the bytes are a fixed point.
func FuzzManifestRoundTrip(f *testing.F) {
	f.Add(3, "ok", "")
	f.Add(64, "failed", "exit 1: \"quoted\" <&> é")
	f.Fuzz(func(t *testing.T, c int, status, msg string) {
		status, msg = strings.ToValidUTF8(status, ""), strings.ToValidUTF8(msg, "") // encoding/json replaces invalid bytes
		pts := []PointRecord{{Concurrency: c, Dir: PointDir(c), Status: status, Message: msg}, {Concurrency: c + 1, Dir: PointDir(c + 1), Status: PointOK}}
		if back, _ := codectest.RoundTrip(t, pts, EncodeManifest, DecodeManifest); !reflect.DeepEqual(back, pts) {
			t.Fatalf("decoded %+v, want %+v", back, pts)
		}
	})
}

// FuzzDecodeManifest: any bytes either decode or give an error, never a
// panic; what decodes encodes to a fixed point.
func FuzzDecodeManifest(f *testing.F) {
	f.Add([]byte(`{"points":[{"concurrency":4,"dir":"c4","status":"ok"}]}`))
	f.Add([]byte(`{"points":null,"other":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		codectest.FixedPoint(t, b, DecodeManifest, EncodeManifest)
	})
}

// TestReadManifestNamesTheFile: a malformed manifest names the file, the
// field and what to do.
func TestReadManifestNamesTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(`{"points":[{"concurrency":"four"}]}`), 0o644)
	_, err := ReadManifest(dir)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, ManifestFile)) || !strings.Contains(err.Error(), "points.concurrency") ||
		!strings.Contains(err.Error(), "delete it") {
		t.Errorf("ReadManifest: %v", err)
	}
}
