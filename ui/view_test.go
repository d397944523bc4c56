package ui

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// busySample is a profiling run against a thrashing server.
func busySample() Sample {
	return Sample{Phase: PhaseProfiling, WarmupDone: 64, WarmupTotal: 64, ProfilingStart: t0.Add(5 * time.Minute),
		ProfilingDuration: 30 * time.Minute, Streaming: true, InFlight: 64,
		Warmup:    Outcomes{OK: 60, Overflows: 4},
		Profiling: Outcomes{OK: 1234, Errors: 2, Overflows: 7},
		Client: ClientWindow{Phase: PhaseProfiling, Window: 10 * time.Second, RequestsPerSec: 3.2, OutputTokensPerSec: 4567, TTFTP50: 812, TTFTP99: 3120,
			ITLP50: 8, ITLP99: 21.25, TheoreticalHitRate: 0.938},
		Server: ServerFigures{Valid: true, Running: 64, Waiting: 60, KVUsage: 0.995, HitRate: 0.01, HitWindow: 10 * time.Second,
			Preemptions: 0, PreemptionsTotal: 3}}
}

// TestDashboardFitsTheWindow renders the dashboard at the sizes a user has
// (80×24, 200×50) after a few minutes of history, and checks that it fills
// the window exactly, never wraps, and shows every part.
func TestDashboardFitsTheWindow(t *testing.T) {
	t.Parallel()
	for _, size := range [][2]int{{80, 24}, {120, 30}, {200, 50}} {
		clk := &fakeClock{t: t0}
		tr := NewTracker(SourceFunc(func() Sample {
			s := busySample()
			s.Client.TTFTP50 = 500 + 300*math.Sin(float64(clk.t.Unix()%60))
			return s
		}), clk.Now)
		for range 400 {
			tr.Update()
			clk.Advance(time.Second)
		}
		r := lipgloss.NewRenderer(&bytes.Buffer{}, termenv.WithProfile(termenv.Ascii))
		m := &model{tr: tr, opt: Options{BarWidth: 30}, st: newStyles(r), w: size[0], h: size[1]}
		m.snap = tr.Update()
		m.logs = []string{"14:00:01 warmup: 64 lanes send their start turn", "14:05:00 profiling: started"}
		out := m.View()
		lines := strings.Split(out, "\n")
		if len(lines) != size[1] {
			t.Errorf("%dx%d: %d lines, want %d:\n%s", size[0], size[1], len(lines), size[1], out)
		}
		for i, l := range lines {
			if w := lipgloss.Width(l); w > size[0] {
				t.Errorf("%dx%d: line %d is %d cells wide: %q", size[0], size[1], i+1, w, l)
			}
		}
		for _, want := range []string{"profiling 01:40 / 30:00, 28:20 left", "warmup", "64/64", "took 05:00", "ok 1234", "errors 2", "overflows 7", "in flight 64",
			"TTFT p50 ", "p99 3120 ms", "ITL p50 8.0 ms", "wait", " 60", "KV 99.5 %", "hit 1.0 %", "93.8 %",
			"prefix cache thrashing", "TTFT p50 (ms, 10 s window)", "output tok/s", "GPU KV usage (%)", "GPU prefix-cache hit (%, server)",
			"(profiling, last 10s)", "theoretical 93.8 % (profiling, last 10s", "profiling: started", "Ctrl-C: 1st", "3rd exit", "█"} {
			if !strings.Contains(out, want) {
				t.Errorf("%dx%d: dashboard lacks %q:\n%s", size[0], size[1], want, out)
			}
		}
	}
}

// TestDashboardNarrowWindowGetsTheBlock: a window below 80×24 shows the
// simple view's block, which fits.
func TestDashboardNarrowWindowGetsTheBlock(t *testing.T) {
	t.Parallel()
	tr := NewTracker(SourceFunc(busySample), (&fakeClock{t: t0.Add(10 * time.Minute)}).Now)
	r := lipgloss.NewRenderer(&bytes.Buffer{}, termenv.WithProfile(termenv.Ascii))
	m := &model{tr: tr, opt: Options{BarWidth: 30}, st: newStyles(r), w: 60, h: 20}
	m.snap = tr.Update()
	out := m.View()
	if !strings.Contains(out, "profiling [") || strings.Contains(out, "╭") {
		t.Errorf("narrow window did not get the block:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// waitForLines waits until out holds at least n lines (a view writes on
// its own goroutine); it fails the test after 10 s.
func waitForLines(t *testing.T, out *syncBuffer, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); strings.Count(out.String(), "\n") < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the view wrote %q after 10 s, want %d lines", out.String(), n)
		}
	}
}

func TestStartFallsBack(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	for _, c := range []struct {
		name string
		typ  Type
		term *bool
		env  string
		size [2]int
		want string
	}{
		{"not a terminal", TypeDashboard, nil, "xterm", [2]int{200, 50}, "simple (not a terminal)"},
		{"dumb terminal", TypeDashboard, nil, "dumb", [2]int{200, 50}, "simple (not a terminal)"}, // a buffer is never a TTY
		{"forced off", TypeDashboard, &no, "xterm", [2]int{200, 50}, "simple (not a terminal)"},
		{"small window", TypeDashboard, &yes, "xterm", [2]int{70, 20}, "simple (window 70×20 is smaller than 80×24)"},
		{"simple asked", TypeSimple, &yes, "xterm", [2]int{200, 50}, "simple"},
		{"none", TypeNone, &yes, "xterm", [2]int{200, 50}, "none"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tick := make(chan time.Time)
			close(tick)
			tr := NewTracker(SourceFunc(busySample), nil)
			v := Start(c.typ, tr, Options{Out: &syncBuffer{}, Terminal: c.term, Getenv: func(string) string { return c.env },
				Size: func() (int, int, error) { return c.size[0], c.size[1], nil }, Tick: tick})
			if v.Kind() != c.want {
				t.Errorf("Kind = %q, want %q", v.Kind(), c.want)
			}
			if err := v.Stop(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestSimpleViewLines: off a terminal, one line per tick and a last one
// at Stop; log lines pass through in order.
func TestSimpleViewLines(t *testing.T) {
	t.Parallel()
	out := &syncBuffer{}
	no := false
	tick := make(chan time.Time)
	clk := &fakeClock{t: t0.Add(10 * time.Minute)}
	tr := NewTracker(SourceFunc(busySample), clk.Now)
	tr.Update() // the thrashing is seen; it is shown once it has held for DiagnosisHold
	clk.Advance(DiagnosisHold)
	v := Start(TypeSimple, tr, Options{Out: out, Terminal: &no, Tick: tick})
	tick <- time.Time{}
	// The send returns once the view took the tick, not once it printed
	// its line: the log line is written after that line is out, as it
	// would be a tick later in a real run.
	waitForLines(t, out, 1)
	v.Log().Write([]byte("14:05:00 profiling: started\n"))
	tick <- time.Time{}
	close(tick)
	if err := v.Stop(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || lines[1] != "14:05:00 profiling: started" {
		t.Fatalf("want 3 status lines around the log line, got:\n%s", out.String())
	}
	if !strings.HasPrefix(lines[3], "[done; profiling") {
		t.Errorf("the last line (at Stop) does not say the run is done: %q", lines[3])
	}
	for _, l := range []string{lines[0], lines[2], strings.Replace(lines[3], "[done; ", "[", 1)} {
		if !strings.HasPrefix(l, "[profiling") || !strings.Contains(l, "1234 ok, 2 errors, 7 overflows, 0 cancelled, 64 in flight") ||
			!strings.Contains(l, "prefix cache thrashing") || strings.Contains(l, "\x1b") {
			t.Errorf("status line %q", l)
		}
	}
}

// TestSimpleViewRedrawsOnATerminal: the block is redrawn in place and a
// log line goes above it.
func TestSimpleViewRedrawsOnATerminal(t *testing.T) {
	t.Parallel()
	out := &syncBuffer{}
	yes := true
	tick := make(chan time.Time)
	clk := &fakeClock{t: t0.Add(10 * time.Minute)}
	v := Start(TypeSimple, NewTracker(SourceFunc(busySample), clk.Now), Options{Out: out, Terminal: &yes, Tick: tick, BarWidth: 10})
	tick <- time.Time{}
	v.Log().Write([]byte("a log line\n"))
	close(tick)
	v.Stop()
	text := out.String()
	n := strings.Count(text[:max(0, strings.Index(text, "\x1b"))], "\n") // the first block's lines
	up := fmt.Sprintf("\x1b[%dA\x1b[J", n)
	if !strings.HasPrefix(text, "warmup    [") || strings.Count(text, up) != 3 || !strings.Contains(text, up+"a log line\nwarmup") {
		t.Errorf("redraws (want 3 × %q, the log line above the block):\n%q", up, text)
	}
}

// TestFiguresSayTheirWindow: every client-side figure names its phase and
// window, the cache figures say whose they are, and the last frame says it
// is the run's last window, not its totals.
func TestFiguresSayTheirWindow(t *testing.T) {
	t.Parallel()
	warm := busySample()
	warm.Phase, warm.ProfilingStart, warm.Client.Phase, warm.Client.Window = PhaseWarmup, time.Time{}, PhaseWarmup, 8*time.Second
	for _, c := range []struct {
		name  string
		s     Sample
		final bool
		want  []string
	}{
		{"warmup", warm, false, []string{"(warmup, last 8s)", "GPU prefix-cache hit 1.0 % (server, last 10s)", "theoretical 93.8 % (warmup, last 8s requests)"}},
		{"profiling", busySample(), false, []string{"output tok/s (profiling, last 10s)", "ITL p50 8.0 ms p99 21.2 ms (profiling, last 10s)"}},
		{"last frame", busySample(), true, []string{"(profiling, last 10s of the run)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := NewTracker(SourceFunc(func() Sample { return c.s }), (&fakeClock{t: t0.Add(10 * time.Minute)}).Now)
			if c.final {
				tr.finish()
			}
			snap := tr.Update()
			text := strings.Join(Block(&snap, 10), "\n") + "\n" + Line(&snap)
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("lacks %q:\n%s", w, text)
				}
			}
			for _, l := range Block(&snap, 10) {
				if (strings.HasPrefix(l, "rate") || strings.HasPrefix(l, "latency")) && !strings.Contains(l, "last ") {
					t.Errorf("a windowed figure without its window: %q", l)
				}
			}
		})
	}
}

// TestFooterSaysWhatCtrlCDoes: the footer follows the signal handling of
// the process: the first Ctrl-C stops gracefully, the second cancels the
// requests in flight and still writes everything, the third exits; after
// each it says what the next one does, and fits the window.
func TestFooterSaysWhatCtrlCDoes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		s    Snapshot
		want []string
	}{
		{"running", Snapshot{Sample: Sample{Phase: PhaseProfiling}}, []string{"1st", "graceful", "2nd", "cancel", "3rd", "exit"}},
		{"interrupted", Snapshot{Sample: Sample{Phase: PhaseDraining, Interrupted: true}}, []string{"Ctrl-C again", "cancel", "exit"}},
		{"killed", Snapshot{Sample: Sample{Phase: PhaseDraining, Interrupted: true, Killed: true}}, []string{"Ctrl-C again", "exit at once"}},
	} {
		for _, w := range []int{80, 200} {
			f := footer(&c.s, w)
			if lipgloss.Width(f) > w {
				t.Errorf("%s at %d cells: the footer is %d wide", c.name, w, lipgloss.Width(f))
			}
			for _, want := range c.want {
				if !strings.Contains(f, want) {
					t.Errorf("%s at %d cells: footer %q lacks %q", c.name, w, f, want)
				}
			}
			if strings.Contains(f, "Twice: exit") {
				t.Errorf("footer %q says a second Ctrl-C exits", f)
			}
		}
	}
}

// TestChartScaleFromProfiling: slow warmup requests (12 s) do not set the
// TTFT chart's scale once profiling started: its top comes from the
// profiling values (about 100 ms), which stay visible.
func TestChartScaleFromProfiling(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	start := t0.Add(30 * time.Second)
	tr := NewTracker(SourceFunc(func() Sample {
		s := busySample()
		s.ProfilingStart, s.Client.TTFTP50 = start, 12_000
		if !clk.t.Before(start) {
			s.Client.TTFTP50 = 80 + float64(clk.t.Unix()%5)*10
		}
		return s
	}), clk.Now)
	for range 60 {
		tr.Update()
		clk.Advance(time.Second)
	}
	r := lipgloss.NewRenderer(&bytes.Buffer{}, termenv.WithProfile(termenv.Ascii))
	m := &model{tr: tr, opt: Options{BarWidth: 30}, st: newStyles(r), w: 200, h: 50}
	out := m.chart("TTFT", tr.History.TTFTP50.Points, 100, 20, 0, ms)
	if !strings.Contains(out, "scale 0–200 ms") {
		t.Errorf("the scale is not the profiling values' (want scale 0–200 ms):\n%s", out)
	}
}

// TestRepaintAfterInterrupt: the dashboard redraws the whole screen when
// the stop state changes and on every frame after an interrupt, so text
// written under it (signal notes, ^C) leaves no stale row.
func TestRepaintAfterInterrupt(t *testing.T) {
	t.Parallel()
	run := Snapshot{Sample: Sample{Phase: PhaseProfiling}}
	stop := Snapshot{Sample: Sample{Phase: PhaseDraining, Interrupted: true}}
	kill := stop
	kill.Killed = true
	for _, c := range []struct {
		name      string
		prev, cur Snapshot
		want      bool
	}{
		{"steady", run, run, false},
		{"first Ctrl-C", run, stop, true},
		{"while stopping", stop, stop, true},
		{"second Ctrl-C", stop, kill, true},
	} {
		if got := repaint(&c.prev, &c.cur); got != c.want {
			t.Errorf("%s: repaint %v, want %v", c.name, got, c.want)
		}
	}
}

// TestNoCountdownAfterCtrlC: once the run is interrupted, the profiling
// line stops counting down ("stopped early", not "00:44 left"), in the
// simple view's line as in the dashboard's header.
func TestNoCountdownAfterCtrlC(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0.Add(6 * time.Minute)} // 1 min into a 30 min profiling phase
	interrupted := false
	tr := NewTracker(SourceFunc(func() Sample {
		s := busySample()
		if interrupted {
			s.Phase, s.Interrupted = PhaseDraining, true
		}
		return s
	}), clk.Now)
	s := tr.Update()
	if s.ProfilingLeft != 29*time.Minute || !strings.Contains(phaseText(&s), "29:00 left") {
		t.Fatalf("before Ctrl-C: left %v, %q", s.ProfilingLeft, phaseText(&s))
	}
	interrupted = true
	clk.Advance(2 * time.Second)
	s = tr.Update()
	if s.ProfilingLeft != -1 || strings.Contains(phaseText(&s), "left") || !strings.Contains(phaseText(&s), "stopped early") {
		t.Errorf("after Ctrl-C: left %v, %q; want no countdown", s.ProfilingLeft, phaseText(&s))
	}
	r := lipgloss.NewRenderer(&bytes.Buffer{}, termenv.WithProfile(termenv.Ascii))
	m := &model{tr: tr, opt: Options{BarWidth: 30}, st: newStyles(r), w: 120, h: 40}
	m.snap = s
	if v := m.View(); strings.Contains(v, ":44 left") || strings.Contains(v, "29:00 left") || strings.Contains(v, "28:58 left") || !strings.Contains(v, "stopped early") {
		t.Errorf("the dashboard after Ctrl-C:\n%s", v)
	}
}

// TestChartHeaderAgreesWithItsValue: a chart's header names its second
// figure for what it is, the top of the drawn scale, and says when the
// value now is above it (before: "now 26.1 s, max 1.0 ms").
func TestChartHeaderAgreesWithItsValue(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: t0}
	tr := NewTracker(SourceFunc(busySample), clk.Now)
	r := lipgloss.NewRenderer(&bytes.Buffer{}, termenv.WithProfile(termenv.Ascii))
	m := &model{tr: tr, opt: Options{BarWidth: 30}, st: newStyles(r), w: 200, h: 50}
	ms := func(v float64) string { return fmt.Sprintf("%.1f ms", v) }
	var ps []Point
	for i := range 20 {
		ps = append(ps, Point{At: t0.Add(time.Duration(i) * time.Second), V: 1})
	}
	calm := m.chart("TTFT", ps, 80, 8, 0, ms)
	ps = append(ps, Point{At: t0.Add(21 * time.Second), V: 26100})
	spike := m.chart("TTFT", ps, 80, 8, 2, ms) // a fixed scale of 2 ms
	if strings.Contains(calm, " max ") || !strings.Contains(calm, "now 1.0 ms  scale 0–") {
		t.Errorf("a calm chart's header:\n%s", calm)
	}
	if !strings.Contains(spike, "now 26100.0 ms  above the scale (0–2.0 ms)") {
		t.Errorf("a value above the scale:\n%s", spike)
	}
}

// TestSimpleViewNarrowTerminal: in a window narrower than the block's
// lines (60 columns; the dashboard needs 80), every redrawn line is cut to
// the window, so none wraps onto a second row that the next redraw would
// leave behind as a duplicate.
func TestSimpleViewNarrowTerminal(t *testing.T) {
	t.Parallel()
	out := &syncBuffer{}
	yes := true
	tick := make(chan time.Time)
	clk := &fakeClock{t: t0.Add(10 * time.Minute)}
	v := Start(TypeSimple, NewTracker(SourceFunc(busySample), clk.Now), Options{Out: out, Terminal: &yes, Tick: tick,
		Size: func() (int, int, error) { return 60, 20, nil }})
	tick <- time.Time{}
	tick <- time.Time{}
	close(tick)
	v.Stop()
	long := 0
	for _, l := range strings.Split(out.String(), "\n") {
		if i := strings.LastIndex(l, "\x1b[J"); i >= 0 {
			l = l[i+len("\x1b[J"):]
		}
		if w := lipgloss.Width(l); w > 59 {
			t.Errorf("a line %d cells wide in a 60-column window: %q", w, l)
		}
		long = max(long, lipgloss.Width(l))
	}
	if long < 40 {
		t.Errorf("fixture: the widest line is %d cells:\n%s", long, out.String())
	}
}
