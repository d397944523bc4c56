package metrics

import (
	"bytes"
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func liveFixture() (func() LiveStats, *fakeClock, *Progress) {
	clk := &fakeClock{t: t0}
	p := &Progress{WarmupDone: 3, WarmupTotal: 8}
	stats := func() LiveStats {
		return LiveStats{ProfilingOK: 120, ProfilingErrors: 2, WarmupOK: 8, Overflows: 1, InFlight: 16,
			RequestsPerSec: 12.5, OutputTokensPerSec: 3456.7, TTFTP50: 812.4, TTFTP99: 3120, ITLP50: 8, ITLP99: 21.25}
	}
	return stats, clk, p
}

func TestLiveViewTerminal(t *testing.T) {
	t.Parallel()
	stats, clk, p := liveFixture()
	var out bytes.Buffer
	yes := true
	lv := NewLiveView(stats, LiveViewOptions{Out: &out, Terminal: &yes, Now: clk.Now, BarWidth: 10,
		Progress: func() Progress { return *p }, ServerHitRate: func() (float64, bool) { return 0.912, true }})
	if err := lv.Render(); err != nil {
		t.Fatal(err)
	}
	first := out.String()
	for _, want := range []string{"warmup    [████░░░░░░] 3/8", "120 ok, 2 errors, 1 overflows", "16 in flight",
		"12.50 req/s, 3456.7 output tok/s", "TTFT p50 812.4 p99 3120.0 ms, ITL p50 8.0 p99 21.2 ms", "prefix-cache hit 91.2%"} {
		if !strings.Contains(first, want) {
			t.Errorf("terminal block lacks %q:\n%s", want, first)
		}
	}
	if strings.Contains(first, "\x1b[") {
		t.Error("first block must not move the cursor up")
	}
	// Profiling starts; 90 s of 300 s have passed.
	p.WarmupDone, p.Phase, p.ProfilingStart, p.ProfilingDuration = 8, PhaseProfiling, t0, 5*time.Minute
	clk.Advance(90 * time.Second)
	out.Reset()
	if err := lv.Render(); err != nil {
		t.Fatal(err)
	}
	second := out.String()
	lines := strings.Count(first, "\n")
	if !strings.HasPrefix(second, "\x1b["+itoa(lines)+"A\x1b[J") {
		t.Errorf("redraw does not go back %d lines: %q", lines, second[:12])
	}
	if !strings.Contains(second, "profiling [███░░░░░░░] 01:30 / 05:00") || !strings.Contains(second, "warmup    [██████████] 8/8") {
		t.Errorf("progress bars:\n%s", second)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// progressBox is a Progress shared between a test and a running view.
type progressBox struct {
	mu sync.Mutex
	p  Progress
}

func (b *progressBox) get() Progress { b.mu.Lock(); defer b.mu.Unlock(); return b.p }
func (b *progressBox) set(f func(*Progress)) {
	b.mu.Lock()
	f(&b.p)
	b.mu.Unlock()
}

func TestLiveViewLogLines(t *testing.T) {
	t.Parallel()
	stats, clk, p := liveFixture()
	var out bytes.Buffer
	tick := make(chan time.Time)
	box := &progressBox{p: *p}
	lv := NewLiveView(func() LiveStats {
		s := stats()
		s.TTFTP50, s.TTFTP99 = math.NaN(), math.NaN()
		return s
	}, LiveViewOptions{Out: &out, Now: clk.Now, Tick: tick, Progress: box.get})
	done := make(chan error)
	go func() { done <- lv.Run(context.Background()) }()
	tick <- t0
	box.set(func(p *Progress) { p.ProfilingStart, p.ProfilingDuration = t0, time.Hour })
	clk.Advance(61 * time.Second)
	tick <- t0
	close(tick)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 { // two ticks and the final update
		t.Fatalf("%d lines, want 3:\n%s", len(lines), out.String())
	}
	// Each line counts its own phase: 8 warmup records while warming up,
	// the 120 profiling ones (not 128) once profiling runs.
	if !strings.HasPrefix(lines[0], "[warmup 3/8] 8 ok, 0 errors, 1 overflows, 16 in flight | 12.50 req/s, 3456.7 tok/s | TTFT p50 - p99 - ms") ||
		!strings.HasSuffix(lines[0], "server prefix hit -") {
		t.Errorf("first line %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], "[profiling 01:01/1:00:00] 120 ok, 2 errors") {
		t.Errorf("second line %q", lines[1])
	}
	if strings.Contains(out.String(), "\x1b") {
		t.Error("escape codes in log mode")
	}
}

func TestLiveViewStopsOnContext(t *testing.T) {
	t.Parallel()
	stats, clk, _ := liveFixture()
	var out bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lv := NewLiveView(stats, LiveViewOptions{Out: &out, Now: clk.Now, Tick: make(chan time.Time)})
	if err := lv.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if strings.Count(out.String(), "\n") != 1 || !strings.Contains(out.String(), "[elapsed 00:00]") {
		t.Errorf("final update %q", out.String())
	}
}
