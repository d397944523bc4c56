package run

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/server/gputelemetry"
	"github.com/agentperf/agentperf/server/servermetrics"
	"github.com/agentperf/agentperf/ui"
)

// phaseClock remembers the phase changes the engine reports, for the live
// view.
type phaseClock struct {
	warmup   atomic.Int64 // warmup start, unix ns
	start    atomic.Int64 // profiling start, unix ns
	ended    atomic.Int64 // profiling end, unix ns
	duration time.Duration
}

// serverWindow is the span of the live server figures (hit rate,
// preemptions); the client-side window is the collector's LiveWindow.
const serverWindow = 10 * time.Second

// liveSource feeds the live view from what the engine exposes: the run's
// outcome tally (replay.Progress), the phase changes (phaseClock), the
// collector's live window, and the scraper. It is the only place that
// knows where each figure comes from.
type liveSource struct {
	prog        *replay.Progress
	col         *metrics.Collector
	scr         *servermetrics.Scraper  // nil without server metrics
	gpu         *gputelemetry.Collector // nil without GPU telemetry
	pc          *phaseClock
	streaming   bool
	interrupted func() bool
	// killed reports the second signal (the requests in flight are
	// cancelled); nil: never.
	killed func() bool
	// maxContextLength and advice make the overflow diagnosis's advice
	// (overflowAdvice): the selection's --max-context-length (0: none)
	// and the caller's advice (Input.OverflowAdvice).
	maxContextLength int
	advice           string
}

var _ ui.Source = (*liveSource)(nil)

// Sample implements ui.Source. Outcome counts come from the run's tally
// (the collector's snapshot reads it with its window, so counts and
// rates are taken together), the count the request accounting reads (every request ends in exactly
// one record, counted once), split by the phase on the record; warmup
// progress is the warmup requests done, whatever their outcome, against
// the engine's number of warmup requests. Rates and percentiles come from
// the collector's live window.
func (l *liveSource) Sample() ui.Sample {
	st := l.col.Snapshot()
	c := st.Counts
	s := ui.Sample{
		Phase:             ui.PhaseStarting,
		WarmupTotal:       l.prog.WarmupTotal(),
		WarmupDone:        c.WarmupDone(),
		ProfilingDuration: l.pc.duration,
		InFlight:          c.InFlight,
		Streaming:         l.streaming,
		Warmup:            outcomes(c.Warmup),
		Profiling:         outcomes(c.Profiling),
		Client: ui.ClientWindow{Phase: ui.Phase(st.WindowPhase), Window: st.Window, RequestsPerSec: st.RequestsPerSec, OutputTokensPerSec: st.OutputTokensPerSec,
			TTFTP50: st.TTFTP50, TTFTP99: st.TTFTP99, ITLP50: st.ITLP50, ITLP99: st.ITLP99, SendLateP99: st.SendLateP99,
			TheoreticalHitRate: st.TheoreticalHitRate},
	}
	switch {
	case l.pc.ended.Load() != 0:
		s.Phase = ui.PhaseDraining
	case l.pc.start.Load() != 0:
		s.Phase = ui.PhaseProfiling
	case s.WarmupTotal > 0:
		s.Phase = ui.PhaseWarmup
	}
	if l.interrupted != nil && l.interrupted() {
		s.Phase, s.Interrupted = ui.PhaseDraining, true
	}
	if l.killed != nil && l.killed() {
		s.Killed = true
	}
	if ns := l.pc.start.Load(); ns != 0 {
		s.ProfilingStart = time.Unix(0, ns)
	}
	if ns := l.pc.warmup.Load(); ns != 0 {
		s.WarmupStart = time.Unix(0, ns)
	}
	engine := ""
	if l.scr != nil {
		s.Server = serverFigures(l.scr)
		engine = l.scr.Engine().Name()
	}
	s.Server.OverflowAdvice = overflowAdvice(engine, l.maxContextLength, -1, l.advice)
	if l.gpu != nil {
		g := l.gpu.Live(0)
		s.GPU = ui.GPUFigures{Valid: !math.IsNaN(g.PowerW), GPUs: g.GPUs, PowerW: g.PowerW}
	}
	return s
}

// serverFigures are the live view's server figures from the scraper: the
// latest gauges, the hit rate over the last serverWindow, and the engine
// (engines table) with what it does not export, or that it is unknown.
func serverFigures(scr *servermetrics.Scraper) ui.ServerFigures {
	lf := scr.Live()
	rf := scr.Recent(serverWindow)
	sf := ui.ServerFigures{
		Valid:   lf.KVUsageValid || lf.QueueValid || rf.GPUPrefixHitRateValid,
		Running: nanUnless(lf.Running, lf.QueueValid), Waiting: nanUnless(lf.Waiting, lf.QueueValid),
		KVUsage: nanUnless(lf.KVUsage, lf.KVUsageValid),
		HitRate: nanUnless(rf.GPUPrefixHitRate, rf.GPUPrefixHitRateValid), HitWindow: rf.Window,
		Preemptions:      nanUnless(rf.Preemptions, rf.PreemptionsValid),
		PreemptionsTotal: nanUnless(rf.PreemptionsTotal, rf.PreemptionsValid),
		Scrapes:          lf.Scrapes, ScrapeFailures: lf.ScrapeFailures,
	}
	det := scr.Engine()
	switch {
	case det.Unknown():
		sf.EngineNote = det.UnknownText(6)
	case det.Known():
		sf.Engine, sf.EngineNote = det.Engine.Title, det.Engine.Missing
	}
	return sf
}

// outcomes are a phase's counts as the view shows them (a failed warmup
// attempt that was sent again is among the errors).
func outcomes(p metrics.PhaseCounts) ui.Outcomes {
	return ui.Outcomes{OK: p.OK, Errors: p.Errors, Overflows: p.Overflows, Cancelled: p.Cancelled}
}

func nanUnless(v float64, ok bool) float64 {
	if !ok {
		return math.NaN()
	}
	return v
}

// phaseLog logs the phase changes and keeps them for the live view.
type phaseLog struct {
	lg      *runLog
	pc      *phaseClock
	started time.Time // when the caller started, for the start-up figure
}

func (o *phaseLog) WarmupStarted(requests int, at time.Time) {
	o.pc.warmup.Store(at.UnixNano())
	o.lg.Printf("start-up: first requests sent %s after the command started", at.Sub(o.started).Round(time.Millisecond))
	o.lg.Printf("warmup: %d requests planned (the start state of every lane, each with its full history, then any cache warmup)", requests)
}

func (o *phaseLog) ProfilingStarted(start, deadline time.Time) {
	o.pc.start.Store(start.UnixNano())
	o.lg.Printf("profiling: started, ends at %s", deadline.Format(time.TimeOnly))
}

func (o *phaseLog) ProfilingEnded(at time.Time) {
	o.pc.ended.Store(at.UnixNano())
	o.lg.Printf("profiling: ended")
}

// closed returns a function reporting whether ch is closed; nil for a nil
// channel.
func closed(ch <-chan struct{}) func() bool {
	if ch == nil {
		return nil
	}
	return func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
}
