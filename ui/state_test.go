package ui

import (
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 8, 12, 14, 0, 0, 0, time.UTC)

// fakeClock is a settable clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

// nanWindow is a client window with nothing measured yet.
func nanWindow() ClientWindow {
	n := math.NaN()
	return ClientWindow{TTFTP50: n, TTFTP99: n, ITLP50: n, ITLP99: n, TheoreticalHitRate: n}
}

func TestTrackerWarmupETAAndProfilingLeft(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	s := Sample{Phase: PhaseWarmup, WarmupTotal: 8, Streaming: true, Client: nanWindow(), ProfilingDuration: 5 * time.Minute}
	tr := NewTracker(SourceFunc(func() Sample { return s }), clk.Now)
	if snap := tr.Update(); snap.WarmupETA != -1 || !strings.Contains(phaseText(&snap), "ETA after the first warmup request finishes") {
		t.Errorf("ETA before any warmup request finished = %v (%q), want unknown", snap.WarmupETA, phaseText(&snap))
	}
	// 10 s later 2 of 8 are done, one of them an overflow and one an
	// error: every outcome counts, 0.2/s, 6 left → 30 s.
	clk.Advance(10 * time.Second)
	s.Warmup = Outcomes{Overflows: 1, Errors: 1}
	s.WarmupDone = s.Warmup.Done()
	snap := tr.Update()
	if snap.WarmupETA != 30*time.Second || math.Abs(snap.WarmupRate-0.2) > 1e-9 {
		t.Errorf("ETA %v at %v/s, want 30 s at 0.2/s", snap.WarmupETA, snap.WarmupRate)
	}
	if got := Line(&snap); !strings.Contains(got, "[warmup 2/8, ETA 00:30]") || !strings.Contains(got, "0 ok, 1 errors, 1 overflows") {
		t.Errorf("warmup line %q", got)
	}
	// Profiling starts at 40 s; 90 s later 3:30 are left and the counts
	// shown are the profiling ones only.
	clk.Advance(30 * time.Second)
	s.Phase, s.ProfilingStart, s.WarmupDone = PhaseProfiling, clk.Now(), 8
	s.Warmup = Outcomes{OK: 6, Overflows: 1, Errors: 1}
	clk.Advance(90 * time.Second)
	s.Profiling = Outcomes{OK: 120, Errors: 2}
	snap = tr.Update()
	if snap.WarmupTook != 40*time.Second || snap.ProfilingLeft != 210*time.Second {
		t.Errorf("warmup took %v (want 40 s), profiling left %v (want 3:30)", snap.WarmupTook, snap.ProfilingLeft)
	}
	if got := Line(&snap); !strings.Contains(got, "[profiling 01:30 / 05:00, 03:30 left] 120 ok, 2 errors, 0 overflows") {
		t.Errorf("profiling line %q", got)
	}
	// After the duration the engine waits for in-flight requests: draining.
	clk.Advance(4 * time.Minute)
	if snap = tr.Update(); snap.Phase != PhaseDraining || snap.ProfilingLeft != 0 {
		t.Errorf("after the duration: phase %s, left %v", snap.Phase, snap.ProfilingLeft)
	}
}

func TestDiagnose(t *testing.T) {
	t.Parallel()
	srv := func(kv, hit, running, waiting float64) ServerFigures {
		return ServerFigures{Valid: true, KVUsage: kv, HitRate: hit, Running: running, Waiting: waiting, Preemptions: math.NaN(), PreemptionsTotal: math.NaN()}
	}
	for _, c := range []struct {
		name string
		sv   ServerFigures
		th   float64
		prof Outcomes
		want string
	}{
		{"thrashing", srv(0.995, 0.0, 64, 0), 0.938, Outcomes{OK: 10}, "prefix cache thrashing: working set exceeds KV capacity"},
		{"full but hitting", srv(0.99, 0.80, 64, 0), 0.938, Outcomes{OK: 10}, ""},
		{"little reuse in the workload", srv(0.99, 0.01, 64, 0), 0.05, Outcomes{OK: 10}, ""},
		{"kv not full", srv(0.60, 0.0, 64, 0), 0.938, Outcomes{OK: 10}, ""},
		{"kv at 93 % is full", srv(0.93, 0.0, 4, 7), 0.986, Outcomes{OK: 10}, "prefix cache thrashing"},
		{"saturated", srv(0.5, 0.9, 4, 60), 0.938, Outcomes{OK: 10}, "server saturated: 60 requests waiting, 4 running"},
		{"a short queue is no saturation", srv(0.5, 0.9, 1, 3), 0.938, Outcomes{OK: 10}, ""},
		{"thrashing wins over saturation", srv(0.99, 0.0, 4, 60), 0.9, Outcomes{OK: 10}, "prefix cache thrashing"},
		{"overflows", ServerFigures{}, math.NaN(), Outcomes{OK: 90, Overflows: 10}, "context overflows: 10 of 100 requests exceed the server's context window (raise the server's per-request context window)"},
		{"overflows, with the caller's advice", ServerFigures{OverflowAdvice: "llama.cpp's per-request window is -c / -np"}, math.NaN(), Outcomes{OK: 90, Overflows: 10}, "context overflows: 10 of 100 requests exceed the server's context window (llama.cpp's per-request window is -c / -np)"},
		{"no server data", ServerFigures{}, 0.9, Outcomes{OK: 10}, ""},
		{"kv not full but requests wait for room", srv(0.60, 0.0, 1, 10), 0.98, Outcomes{OK: 10}, "prefix cache thrashing: working set exceeds KV capacity (hits 0.0 % vs 98.0 % theoretical; 10 waiting for KV room, 1 running, KV peak 60.0 %)"},
		{"requests wait for a sequence slot, not KV room", srv(0.04, 0.30, 2, 6), 0.97, Outcomes{OK: 10}, "server saturated"},
		{"preempting", ServerFigures{Valid: true, KVUsage: 0.5, HitRate: 0.1, Running: 8, Waiting: 0, Preemptions: 3, PreemptionsTotal: 9}, 0.9, Outcomes{OK: 10}, "prefix cache thrashing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Snapshot{Sample: Sample{Server: c.sv, Profiling: c.prof, Client: ClientWindow{TheoreticalHitRate: c.th, SendLateP99: math.NaN()}}, KVPeak: math.NaN()}
			got := Diagnose(&s)
			if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
				t.Errorf("Diagnose = %q, want prefix %q", got, c.want)
			}
		})
	}
}

// TestDiagnoseNeedsOneSpan: early in profiling the server's hit-rate
// window still holds the warmup primers (all misses) while the theoretical
// rate covers profiling requests: no thrashing is diagnosed until the
// server's window lies inside profiling.
func TestDiagnoseNeedsOneSpan(t *testing.T) {
	t.Parallel()
	sv := ServerFigures{Valid: true, KVUsage: 0.99, HitRate: 0.05, HitWindow: 10 * time.Second, Running: 8, Waiting: 0,
		Preemptions: math.NaN(), PreemptionsTotal: math.NaN()}
	for _, c := range []struct {
		elapsed time.Duration
		want    string
	}{{3 * time.Second, ""}, {12 * time.Second, "prefix cache thrashing"}} {
		s := Snapshot{Sample: Sample{Phase: PhaseProfiling, Server: sv, Client: ClientWindow{Phase: PhaseProfiling, TheoreticalHitRate: 0.9, SendLateP99: math.NaN()}},
			ProfilingElapsed: c.elapsed, KVPeak: math.NaN()}
		if got := Diagnose(&s); !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("%v into profiling: Diagnose = %q, want %q", c.elapsed, got, c.want)
		}
	}
}

// TestDiagnoseLateClient: a client that sends its requests late is named
// first: the server's figures then describe a lighter load than the
// trace's.
func TestDiagnoseLateClient(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		late float64
		want string
	}{{0.6, ""}, {40, ""}, {180, "client is the bottleneck: requests are sent late (p99 180 ms behind schedule, profiling, last 10s)"}} {
		s := Snapshot{Sample: Sample{Phase: PhaseProfiling, Client: ClientWindow{Phase: PhaseProfiling, Window: 10 * time.Second, SendLateP99: c.late, TheoreticalHitRate: math.NaN()},
			Server: ServerFigures{Valid: true, Running: 4, Waiting: 60, KVUsage: 0.5, HitRate: 0.9, Preemptions: math.NaN()}}}
		got := Diagnose(&s)
		if c.want == "" {
			if strings.HasPrefix(got, "client") {
				t.Errorf("p99 lateness %v ms: %q, want no client diagnosis", c.late, got)
			}
			continue
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("p99 lateness %v ms: Diagnose = %q, want %q", c.late, got, c.want)
		}
	}
}

func TestNonStreamingShowsNoLatency(t *testing.T) {
	t.Parallel()
	s := Snapshot{Sample: Sample{Phase: PhaseProfiling, Client: ClientWindow{TTFTP50: 12, TTFTP99: 30, ITLP50: 1, ITLP99: 2}}}
	for _, text := range []string{Line(&s), strings.Join(Block(&s, 10), "\n")} {
		if !strings.Contains(text, "TTFT/ITL n/a (not streaming)") || strings.Contains(text, "TTFT p50") {
			t.Errorf("non-streaming view shows latencies:\n%s", text)
		}
	}
}

// TestSeriesStaysEvenlySpaced: a series over a long run keeps at most Cap
// points, each the mean of the same number of samples.
func TestSeriesStaysEvenlySpaced(t *testing.T) {
	t.Parallel()
	var s Series
	for i := range 1000 {
		s.add(t0.Add(time.Duration(i)*time.Second), float64(i), 64)
	}
	if n := len(s.Points); n > 64 || n < 32 {
		t.Fatalf("%d points, want 32..64", n)
	}
	step := s.Points[1].At.Sub(s.Points[0].At)
	for i := 1; i < len(s.Points); i++ {
		if d := s.Points[i].At.Sub(s.Points[i-1].At); d != step {
			t.Fatalf("point %d is %v after the previous, want %v", i, d, step)
		}
	}
	// Values are means of consecutive samples, so they increase by the
	// stride.
	if d := s.Points[1].V - s.Points[0].V; d != step.Seconds() {
		t.Errorf("consecutive means differ by %v, want %v", d, step.Seconds())
	}
}

func TestChartRows(t *testing.T) {
	t.Parallel()
	rows := chartRows([]float64{0, 50, 100, math.NaN(), 200, 1}, 2, 100)
	want := []string{"  █ █ ", "_██ █▁"}
	if strings.Join(rows, "|") != strings.Join(want, "|") {
		t.Errorf("chart rows %q, want %q", rows, want)
	}
	if got := niceTop([]float64{3, 340, math.NaN()}); got != 500 {
		t.Errorf("niceTop = %v, want 500", got)
	}
	cols := columns([]Point{{V: 1}, {V: 3}, {V: 5}, {V: math.NaN()}}, 2)
	if cols[0] != 2 || cols[1] != 5 {
		t.Errorf("columns = %v, want [2 5]", cols)
	}
}

// TestTrackerKVPeak: the KV peak covers the server's window: a full cache
// a few seconds ago still counts, one older than the window does not.
func TestTrackerKVPeak(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	kv := 0.95
	tr := NewTracker(SourceFunc(func() Sample {
		return Sample{Phase: PhaseProfiling, Server: ServerFigures{Valid: true, KVUsage: kv, HitWindow: 10 * time.Second}}
	}), clk.Now)
	tr.Update()
	kv = 0.3
	for _, c := range []struct {
		after time.Duration
		want  float64
	}{{4 * time.Second, 0.95}, {7 * time.Second, 0.3}} {
		clk.Advance(c.after)
		if s := tr.Update(); s.KVPeak != c.want {
			t.Errorf("after %v more: KV peak %v, want %v", c.after, s.KVPeak, c.want)
		}
	}
}

func TestGPULineAndSparkline(t *testing.T) {
	t.Parallel()
	s := &Snapshot{Sample: Sample{GPU: GPUFigures{Valid: true, GPUs: 2, PowerW: 800}, Client: ClientWindow{OutputTokensPerSec: 400}}}
	if got := s.TokensPerJoule(); got != 0.5 {
		t.Fatalf("TokensPerJoule = %v, want 0.5", got)
	}
	found := false
	for _, l := range Block(s, 20) {
		if strings.HasPrefix(l, "gpu ") && strings.Contains(l, "800 W") && strings.Contains(l, "output tok/J") {
			found = true
		}
	}
	if !found {
		t.Errorf("Block has no GPU line: %q", Block(s, 20))
	}
	s.GPU.Valid = false
	for _, l := range Block(s, 20) {
		if strings.HasPrefix(l, "gpu ") {
			t.Errorf("GPU line without GPU telemetry: %q", l)
		}
	}
	ps := []Point{{V: 100}, {V: math.NaN()}, {V: 200}, {V: 150}}
	if got := Sparkline(ps, 10); got != "▁ █▅" {
		t.Errorf("Sparkline = %q", got)
	}
	if got := Sparkline(ps, 2); got != "█▁" { // scaled over the points shown
		t.Errorf("Sparkline(2) = %q", got)
	}
}

// TestDiagnoseThrashingBeforeLateClient: a thrashing cache is named even
// when the client also sends late (a loaded client does not make the
// server's misses go away).
func TestDiagnoseThrashingBeforeLateClient(t *testing.T) {
	t.Parallel()
	s := Snapshot{Sample: Sample{Phase: PhaseProfiling,
		Client: ClientWindow{Phase: PhaseProfiling, Window: 10 * time.Second, SendLateP99: 180, TheoreticalHitRate: 0.95},
		Server: ServerFigures{Valid: true, Running: 4, Waiting: 60, KVUsage: 0.97, HitRate: 0, Preemptions: math.NaN()}},
		KVPeak: math.NaN()}
	if got := Diagnose(&s); !strings.HasPrefix(got, "prefix cache thrashing") {
		t.Errorf("Diagnose = %q, want thrashing first", got)
	}
}

// diagRun feeds a Tracker one sample per second from next (called with
// the frame's index) on a fake clock and returns each frame's diagnosis.
func diagRun(frames int, next func(i int) Sample) []string {
	clk := &fakeClock{t: t0}
	i := 0
	tr := NewTracker(SourceFunc(func() Sample { return next(i) }), clk.Now)
	var out []string
	for ; i < frames; i++ {
		out = append(out, tr.Update().Diagnosis)
		clk.Advance(time.Second)
	}
	return out
}

// changes counts the frames whose diagnosis differs from the frame before.
func changes(d []string) int {
	n := 0
	for i := 1; i < len(d); i++ {
		if d[i] != d[i-1] {
			n++
		}
	}
	return n
}

// TestDiagnosisDoesNotFlicker: a queue that hovers around the saturation
// threshold (4 waiting for 1 running, then 3, frame after frame) leaves
// the line as it is; a saturation that holds appears after DiagnosisHold,
// stays through the same hovering, and goes once it has been gone for
// DiagnosisHold.
func TestDiagnosisDoesNotFlicker(t *testing.T) {
	t.Parallel()
	queue := func(waiting float64) Sample {
		return Sample{Phase: PhaseProfiling, Client: nanWindow(),
			Server: ServerFigures{Valid: true, Running: 1, Waiting: waiting, KVUsage: 0.3, HitRate: math.NaN(), Preemptions: math.NaN()}}
	}
	hover := func(i int) float64 { return []float64{4, 3}[i%2] }
	if got := diagRun(30, func(i int) Sample { return queue(hover(i)) }); changes(got) != 0 || got[len(got)-1] != "" {
		t.Errorf("a queue hovering around the threshold from the start: %d changes, last %q; want none", changes(got), got[len(got)-1])
	}
	// 0–9 s: saturated (10 waiting); 10–28 s: hovering; 29–39 s: quiet.
	got := diagRun(40, func(i int) Sample {
		switch {
		case i < 10:
			return queue(10)
		case i < 29:
			return queue(hover(i))
		}
		return queue(0)
	})
	hold := int(DiagnosisHold / time.Second)
	for i, d := range got {
		want := "server saturated: "
		if i < hold || i >= 29+hold {
			want = ""
		}
		if (want == "") != (d == "") || !strings.HasPrefix(d, want) {
			t.Errorf("second %d: %q, want %q", i, d, want)
		}
	}
	// The figures of a diagnosis that holds are the frame's own.
	if got[9] != "server saturated: 10 requests waiting, 1 running" {
		t.Errorf("second 9: %q", got[9])
	}
}

// TestDiagnosisThrashingThroughout: five minutes of a 0 % server hit rate
// against a 92–99 % theoretical one, with the KV cache at 88–99 % and a
// queue that is also saturation's evidence, say thrashing on every frame
// from DiagnosisHold after the onset, through the start of profiling
// (when the server's window still holds warmup) to the end.
func TestDiagnosisThrashingThroughout(t *testing.T) {
	t.Parallel()
	const warmup = 20 // seconds
	got := diagRun(300, func(i int) Sample {
		s := Sample{Phase: PhaseWarmup, WarmupTotal: 10,
			Client: ClientWindow{Phase: PhaseWarmup, Window: 10 * time.Second, TheoreticalHitRate: 0.92 + 0.07*float64(i%5)/4, SendLateP99: math.NaN()},
			Server: ServerFigures{Valid: true, HitWindow: 10 * time.Second, HitRate: 0, KVUsage: []float64{0.99, 0.88, 0.95}[i%3],
				Running: 2, Waiting: 6, Preemptions: math.NaN()}}
		if i >= warmup {
			s.Phase, s.Client.Phase = PhaseProfiling, PhaseProfiling
			s.ProfilingStart, s.ProfilingDuration = t0.Add(warmup*time.Second), 10*time.Minute
		}
		return s
	})
	hold := int(DiagnosisHold / time.Second)
	for i, d := range got {
		if i >= hold && !strings.HasPrefix(d, "prefix cache thrashing: working set exceeds KV capacity (hits 0.0 % vs 9") {
			t.Fatalf("second %d: %q, want thrashing", i, d)
		}
	}
}
