package metrics

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// Progress is where the run stands, supplied to the live view by the
// engine.
type Progress struct {
	Phase                   Phase // "" before warmup starts
	WarmupDone, WarmupTotal int
	ProfilingStart          time.Time     // zero until profiling starts
	ProfilingDuration       time.Duration // 0 when the run is not time-bound
}

// LiveViewOptions configure a LiveView. Out is required.
type LiveViewOptions struct {
	Out io.Writer
	// Interval between updates (--stats-interval; default 5 s).
	Interval time.Duration
	// Terminal selects the redrawn block with progress bars; nil means
	// "Out is an *os.File that is a terminal" (golang.org/x/term).
	Terminal *bool
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Tick, when set, drives the updates instead of a time.Ticker (tests).
	Tick <-chan time.Time
	// Progress reports the phase and warmup progress; optional.
	Progress func() Progress
	// ServerHitRate returns the server's prefix-cache hit rate (0..1) over
	// the recent past, and whether it is known; optional (metrics/server).
	ServerHitRate func() (float64, bool)
	// Width of the progress bars in cells (default 30).
	BarWidth int
}

// LiveView prints live progress and statistics: on a terminal a redrawn
// block with progress bars for warmup (done/total) and profiling
// (elapsed/duration) and a stats block; elsewhere one log line per
// interval.
type LiveView struct {
	stats func() LiveStats
	opt   LiveViewOptions
	term  bool
	drawn int // lines of the last terminal block, to redraw over
}

// NewLiveView returns a live view over stats (usually Collector.Snapshot).
func NewLiveView(stats func() LiveStats, opt LiveViewOptions) *LiveView {
	if opt.Interval <= 0 {
		opt.Interval = 5 * time.Second
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.BarWidth <= 0 {
		opt.BarWidth = 30
	}
	lv := &LiveView{stats: stats, opt: opt}
	if opt.Terminal != nil {
		lv.term = *opt.Terminal
	} else if f, ok := opt.Out.(*os.File); ok {
		lv.term = term.IsTerminal(int(f.Fd()))
	}
	return lv
}

// Run prints an update every interval until ctx is done (or the injected
// Tick channel is closed), then prints a last one.
func (lv *LiveView) Run(ctx context.Context) error {
	tick := lv.opt.Tick
	if tick == nil {
		t := time.NewTicker(lv.opt.Interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return lv.Render()
		case _, ok := <-tick:
			if !ok {
				return lv.Render()
			}
			if err := lv.Render(); err != nil {
				return err
			}
		}
	}
}

// Render prints one update now.
func (lv *LiveView) Render() error {
	s := lv.stats()
	var p Progress
	if lv.opt.Progress != nil {
		p = lv.opt.Progress()
	}
	hit, hitOK := math.NaN(), false
	if lv.opt.ServerHitRate != nil {
		hit, hitOK = lv.opt.ServerHitRate()
	}
	now := lv.opt.Now()
	var b strings.Builder
	if lv.term {
		if lv.drawn > 0 {
			fmt.Fprintf(&b, "\x1b[%dA\x1b[J", lv.drawn) // back to the block's top, clear below
		}
		lines := lv.block(s, p, hit, hitOK, now)
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		lv.drawn = len(lines)
	} else {
		b.WriteString(lv.line(s, p, hit, hitOK, now))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(lv.opt.Out, b.String())
	return err
}

// bar renders a progress bar of frac (0..1).
func bar(frac float64, width int) string {
	frac = math.Max(0, math.Min(1, frac))
	full := int(math.Round(frac * float64(width)))
	return "[" + strings.Repeat("█", full) + strings.Repeat("░", width-full) + "]"
}

// clock formats a duration as [h:]mm:ss.
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%02d:%02d", m, s)
}

// ms formats milliseconds, "-" when unknown.
func msStr(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

func (lv *LiveView) hitStr(hit float64, ok bool) string {
	if !ok || math.IsNaN(hit) {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", hit*100)
}

// block is the terminal view.
func (lv *LiveView) block(s LiveStats, p Progress, hit float64, hitOK bool, now time.Time) []string {
	var out []string
	if p.WarmupTotal > 0 {
		out = append(out, fmt.Sprintf("warmup    %s %d/%d", bar(float64(p.WarmupDone)/float64(p.WarmupTotal), lv.opt.BarWidth), p.WarmupDone, p.WarmupTotal))
	}
	if !p.ProfilingStart.IsZero() {
		el := now.Sub(p.ProfilingStart)
		if p.ProfilingDuration > 0 {
			out = append(out, fmt.Sprintf("profiling %s %s / %s", bar(float64(el)/float64(p.ProfilingDuration), lv.opt.BarWidth), clock(min(el, p.ProfilingDuration)), clock(p.ProfilingDuration)))
		} else {
			out = append(out, fmt.Sprintf("profiling %s elapsed", clock(el)))
		}
	}
	out = append(out,
		fmt.Sprintf("requests  %d ok, %d errors, %d overflows, %d cancelled, %d in flight (warmup %d ok, %d errors)",
			s.ProfilingOK, s.ProfilingErrors, s.Overflows, s.Cancelled, s.InFlight, s.WarmupOK, s.WarmupErrors),
		fmt.Sprintf("rate      %.2f req/s, %.1f output tok/s", s.RequestsPerSec, s.OutputTokensPerSec),
		fmt.Sprintf("latency   TTFT p50 %s p99 %s ms, ITL p50 %s p99 %s ms", msStr(s.TTFTP50), msStr(s.TTFTP99), msStr(s.ITLP50), msStr(s.ITLP99)),
		fmt.Sprintf("server    prefix-cache hit %s", lv.hitStr(hit, hitOK)))
	return out
}

// line is the one-line log form.
func (lv *LiveView) line(s LiveStats, p Progress, hit float64, hitOK bool, now time.Time) string {
	var phase string
	switch {
	case !p.ProfilingStart.IsZero() && p.ProfilingDuration > 0:
		phase = fmt.Sprintf("profiling %s/%s", clock(min(now.Sub(p.ProfilingStart), p.ProfilingDuration)), clock(p.ProfilingDuration))
	case !p.ProfilingStart.IsZero():
		phase = "profiling " + clock(now.Sub(p.ProfilingStart))
	case p.WarmupTotal > 0:
		phase = fmt.Sprintf("warmup %d/%d", p.WarmupDone, p.WarmupTotal)
	default:
		phase = "elapsed " + clock(s.Elapsed)
	}
	// Counts are the phase's own: warmup records never count as
	// profiling ones (the summary's figures are profiling only).
	ok, errs := s.WarmupOK, s.WarmupErrors
	if !p.ProfilingStart.IsZero() {
		ok, errs = s.ProfilingOK, s.ProfilingErrors
	}
	return fmt.Sprintf("[%s] %d ok, %d errors, %d overflows, %d in flight | %.2f req/s, %.1f tok/s | TTFT p50 %s p99 %s ms | ITL p50 %s p99 %s ms | server prefix hit %s",
		phase, ok, errs, s.Overflows, s.InFlight, s.RequestsPerSec, s.OutputTokensPerSec,
		msStr(s.TTFTP50), msStr(s.TTFTP99), msStr(s.ITLP50), msStr(s.ITLP99), lv.hitStr(hit, hitOK))
}
