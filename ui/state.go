package ui

import (
	"fmt"
	"math"
	"time"
)

// Phase is where a run stands.
type Phase string

// The phases of a run, in order.
const (
	PhaseStarting  Phase = "starting"  // before the first request
	PhaseWarmup    Phase = "warmup"    // warmup requests in flight
	PhaseProfiling Phase = "profiling" // the measured window
	PhaseDraining  Phase = "draining"  // no new requests; in-flight ones finish
	PhaseDone      Phase = "done"
)

// Outcomes counts finished requests of one phase. Every request ends in
// exactly one bucket.
type Outcomes struct {
	OK, Errors, Overflows, Cancelled int
}

// Done is the number of finished requests.
func (o Outcomes) Done() int { return o.OK + o.Errors + o.Overflows + o.Cancelled }

// Sample is what a Source reports at one instant: raw counters and
// figures, nothing derived. Unknown float values are NaN.
type Sample struct {
	// Phase is where the engine is. Interrupted is set once the user
	// asked the run to stop (the engine drains).
	Phase       Phase
	Interrupted bool
	// Killed is set once the user asked a second time: the requests in
	// flight are cancelled, then every artifact is written.
	Killed bool
	// WarmupStart is when the first warmup request was sent (zero before,
	// or when unknown: then the first sample with WarmupTotal > 0 counts).
	WarmupStart time.Time
	// WarmupDone counts every finished warmup request, whatever its
	// outcome (ok, error, context overflow, cancelled); WarmupTotal is the
	// number of warmup requests (0 before warmup starts).
	WarmupDone, WarmupTotal int
	// ProfilingStart is zero until profiling starts; ProfilingDuration is
	// its planned length (0 when the run is not time-bound).
	ProfilingStart    time.Time
	ProfilingDuration time.Duration
	// Warmup and Profiling count the finished requests of each phase;
	// InFlight the requests sent and not finished (subagents included).
	Warmup, Profiling Outcomes
	InFlight          int
	// Streaming is false when the responses are not streamed: TTFT and ITL
	// cannot be measured then.
	Streaming bool
	Client    ClientWindow
	Server    ServerFigures
	GPU       GPUFigures
}

// GPUFigures are the GPUs' side, from their exporters (DCGM, AMD). Valid
// is false without GPU telemetry or before its first power sample.
type GPUFigures struct {
	Valid bool
	// GPUs is the number of GPUs seen; PowerW their summed power at the
	// last scrape, in watts.
	GPUs   int
	PowerW float64
}

// TokensPerJoule is the client window's output tokens per second over the
// GPUs' power now (NaN when either is unknown or zero).
func (s *Sample) TokensPerJoule() float64 {
	if !s.GPU.Valid || !(s.GPU.PowerW > 0) || math.IsNaN(s.Client.OutputTokensPerSec) {
		return math.NaN()
	}
	return s.Client.OutputTokensPerSec / s.GPU.PowerW
}

// ClientWindow holds the client-side figures over a recent window of
// successful requests of one phase.
type ClientWindow struct {
	// Phase is the phase of the window's requests: PhaseWarmup before
	// profiling starts, PhaseProfiling after (then no warmup request is in
	// any figure). Empty: unknown.
	Phase              Phase
	Window             time.Duration
	RequestsPerSec     float64
	OutputTokensPerSec float64
	TTFTP50, TTFTP99   float64 // ms
	ITLP50, ITLP99     float64 // ms
	// SendLateP99 is the 99th percentile of how late the window's
	// requests were sent against their schedule, in ms (NaN: unknown).
	SendLateP99 float64
	// TheoreticalHitRate is the prefix-cache hit rate an infinite cache
	// would reach on the window's requests (0..1).
	TheoreticalHitRate float64
}

// ServerFigures are the server's side, from its /metrics. Valid is false
// when nothing is scraped (no scraper, or no successful scrape yet).
type ServerFigures struct {
	Valid bool
	// Running and Waiting are request counts summed over engines (NaN:
	// not exported).
	Running, Waiting float64
	// KVUsage is the GPU KV-cache usage (0..1) averaged over engines.
	KVUsage float64
	// HitRate is the GPU prefix-cache hit rate over HitWindow (0..1).
	HitRate   float64
	HitWindow time.Duration
	// Preemptions over the window and in all (NaN: not exported).
	Preemptions, PreemptionsTotal float64
	// ScrapeFailures counts failed fetches of /metrics so far.
	Scrapes, ScrapeFailures int
	// Engine is the engine the scraped metric families belong to (its
	// title, "" while none is known); EngineNote says what the view
	// cannot show: an unknown engine with the families it exports, or
	// the figures a known one does not export.
	Engine, EngineNote string
	// OverflowAdvice is what the overflow diagnosis advises: the server
	// settings that set the context window (the engine's, engines.Advice)
	// and what the caller can do ("": a generic line).
	OverflowAdvice string
}

// Source supplies samples. It is the only thing the views read, so an
// engine feeds every view by implementing it.
type Source interface {
	Sample() Sample
}

// SourceFunc adapts a function to Source.
type SourceFunc func() Sample

// Sample calls f.
func (f SourceFunc) Sample() Sample { return f() }

// Snapshot is the live state every view shows: a Sample and what is
// derived from it and from the samples before.
type Snapshot struct {
	Sample
	// At is when the sample was taken; Elapsed is the time since the
	// first sample.
	At      time.Time
	Elapsed time.Duration
	// WarmupRate is finished warmup requests per second since warmup
	// started; WarmupETA the time left at that rate (-1: unknown).
	WarmupRate float64
	WarmupETA  time.Duration
	// WarmupTook is how long warmup lasted, once it is over.
	WarmupTook time.Duration
	// ProfilingElapsed and ProfilingLeft measure the profiling window
	// (ProfilingLeft -1 when the run is not time-bound, or was
	// interrupted: no countdown after a Ctrl-C).
	ProfilingElapsed, ProfilingLeft time.Duration
	// KVPeak is the highest GPU KV usage (0..1) of the samples over the
	// server's hit-rate window (10 s when unknown); NaN without data.
	KVPeak float64
	// Diagnosis is one line naming what limits the server, when the
	// picture is clear; empty otherwise.
	Diagnosis string
}

// Counts are the outcomes of the current phase's requests: warmup's
// during warmup, profiling's after.
func (s *Snapshot) Counts() Outcomes {
	if s.Phase == PhaseStarting || s.Phase == PhaseWarmup {
		return s.Warmup
	}
	return s.Profiling
}

// Point is one value of a chart series.
type Point struct {
	At time.Time
	V  float64 // NaN: no value at that time
}

// Series is a chart series over the whole run in at most Cap points: when
// it is full, neighbouring points are merged (their mean), and each later
// point is the mean of as many samples, so the points stay evenly spaced.
type Series struct {
	Points []Point
	stride int     // samples per point
	acc    float64 // pending samples of the next point
	accN   int     // samples pending
	accK   int     // non-NaN samples pending
}

func (s *Series) add(at time.Time, v float64, capacity int) {
	if s.stride == 0 {
		s.stride = 1
	}
	s.accN++
	if !math.IsNaN(v) {
		s.acc += v
		s.accK++
	}
	if s.accN < s.stride {
		return
	}
	m := math.NaN()
	if s.accK > 0 {
		m = s.acc / float64(s.accK)
	}
	s.Points = append(s.Points, Point{at, m})
	s.acc, s.accN, s.accK = 0, 0, 0
	if capacity > 1 && len(s.Points) >= capacity {
		half := s.Points[:0]
		for i := 0; i+1 < len(s.Points); i += 2 {
			a, b := s.Points[i].V, s.Points[i+1].V
			switch {
			case math.IsNaN(a):
				a = b
			case !math.IsNaN(b):
				a = (a + b) / 2
			}
			half = append(half, Point{s.Points[i+1].At, a})
		}
		s.Points = half
		s.stride *= 2
	}
}

// History keeps the dashboard's chart series, one sample per update.
type History struct {
	TTFTP50, Throughput, KVUsage, HitRate Series
	// Power is the GPUs' summed power in watts (NaN without GPU
	// telemetry).
	Power Series
	// Cap bounds the points of each series (default 512).
	Cap int
	// ProfilingStart is when profiling started (zero before), for a mark
	// on the charts.
	ProfilingStart time.Time
}

func (h *History) add(s *Snapshot) {
	if h.Cap == 0 {
		h.Cap = 512
	}
	nan := math.NaN()
	ttft := s.Client.TTFTP50
	if !s.Streaming {
		ttft = nan
	}
	h.TTFTP50.add(s.At, ttft, h.Cap)
	h.Throughput.add(s.At, s.Client.OutputTokensPerSec, h.Cap)
	kv, hit := nan, nan
	if s.Server.Valid {
		kv, hit = 100*s.Server.KVUsage, 100*s.Server.HitRate
	}
	h.KVUsage.add(s.At, kv, h.Cap)
	h.HitRate.add(s.At, hit, h.Cap)
	power := nan
	if s.GPU.Valid {
		power = s.GPU.PowerW
	}
	h.Power.add(s.At, power, h.Cap)
	h.ProfilingStart = s.ProfilingStart
}

// Tracker turns samples into snapshots: it remembers when warmup started
// and ended (for the ETA and the warmup length) and keeps the chart
// history. It is used from one goroutine.
type Tracker struct {
	src Source
	now func() time.Time

	first, warmupStart, warmupEnd time.Time
	final                         bool // the run is over: the next snapshot is the last
	History                       History
	kv                            []Point // recent KV usage samples, for KVPeak
	diag                          hysteresis
}

// DiagnosisHold is how long a diagnosis must be the one the rules give,
// frame after frame, before the view shows it, and how long another one
// (or none) must be before it goes: 3 s, four frames at the default 1 s
// refresh. A figure that hovers around a threshold then leaves the line
// as it is instead of flipping it every frame.
const DiagnosisHold = 3 * time.Second

// hysteresis holds the shown diagnosis against the rules' frame-to-frame
// answer (see DiagnosisHold).
type hysteresis struct {
	shown     diagKind
	text      string    // the shown diagnosis's text, from the last frame its rule held
	cand      diagKind  // the rules' answer that differs from shown
	candSince time.Time // since when cand has been the answer, every frame
}

// next takes the rules' answer at now and returns the line to show.
// undecided: the rules cannot tell this frame (see diagnose); the line
// stays as it is, and the pending change waits.
func (h *hysteresis) next(now time.Time, k diagKind, text string, undecided bool) string {
	switch {
	case undecided:
	case k == h.shown:
		h.text, h.cand = text, k
	default:
		if k != h.cand {
			h.cand, h.candSince = k, now
		}
		if now.Sub(h.candSince) >= DiagnosisHold {
			h.shown, h.text = k, text
		}
	}
	return h.text
}

// kvPeak adds the sample's KV usage and returns the peak over window.
func (t *Tracker) kvPeak(s *Snapshot) float64 {
	window := s.Server.HitWindow
	if window <= 0 {
		window = 10 * time.Second
	}
	if s.Server.Valid && !math.IsNaN(s.Server.KVUsage) {
		t.kv = append(t.kv, Point{s.At, s.Server.KVUsage})
	}
	i := 0
	for i < len(t.kv) && s.At.Sub(t.kv[i].At) > window {
		i++
	}
	t.kv = append(t.kv[:0], t.kv[i:]...)
	peak := math.NaN()
	for _, p := range t.kv {
		if math.IsNaN(peak) || p.V > peak {
			peak = p.V
		}
	}
	return peak
}

// finish marks the run as over: the next snapshot's phase is PhaseDone.
func (t *Tracker) finish() { t.final = true }

// NewTracker returns a tracker over src; now is the clock (nil:
// time.Now).
func NewTracker(src Source, now func() time.Time) *Tracker {
	if now == nil {
		now = time.Now
	}
	return &Tracker{src: src, now: now}
}

// Update takes a sample and returns the snapshot.
func (t *Tracker) Update() Snapshot {
	now := t.now()
	s := Snapshot{Sample: t.src.Sample(), At: now, WarmupETA: -1, ProfilingLeft: -1}
	if t.first.IsZero() {
		t.first = now
	}
	s.Elapsed = now.Sub(t.first)
	if s.WarmupTotal > 0 && t.warmupStart.IsZero() {
		t.warmupStart = now
		if !s.WarmupStart.IsZero() {
			t.warmupStart = s.WarmupStart
		}
	}
	if !s.ProfilingStart.IsZero() && t.warmupEnd.IsZero() {
		t.warmupEnd = s.ProfilingStart
	}
	if !t.warmupStart.IsZero() {
		end := now
		if !t.warmupEnd.IsZero() {
			end = t.warmupEnd
			s.WarmupTook = max(0, t.warmupEnd.Sub(t.warmupStart))
		}
		if el := end.Sub(t.warmupStart); el > 0 && s.WarmupDone > 0 {
			s.WarmupRate = float64(s.WarmupDone) / el.Seconds()
			left := max(0, s.WarmupTotal-s.WarmupDone)
			s.WarmupETA = time.Duration(float64(left) / s.WarmupRate * float64(time.Second)).Round(time.Second)
		}
	}
	if !s.ProfilingStart.IsZero() {
		s.ProfilingElapsed = max(0, now.Sub(s.ProfilingStart))
		if s.ProfilingDuration > 0 {
			s.ProfilingLeft = max(0, s.ProfilingDuration-s.ProfilingElapsed)
			if s.ProfilingLeft == 0 && s.Phase == PhaseProfiling {
				s.Phase = PhaseDraining // the grace period: in-flight requests finish
			}
			if s.Interrupted {
				// Stopped by the user: nothing is left to count down.
				s.ProfilingLeft = -1
			}
		}
	}
	if t.final {
		s.Phase = PhaseDone
	}
	s.KVPeak = t.kvPeak(&s)
	k, text, undecided := diagnose(&s, t.diag.shown)
	s.Diagnosis = t.diag.next(now, k, text, undecided)
	t.History.add(&s)
	return s
}

// Thresholds of Diagnose.
const (
	// KV usage at or above which the cache counts as full (vLLM keeps
	// some blocks free for the running requests, so a thrashing cache
	// shows 90–99 %).
	kvFull = 0.90
	// With requests waiting, a KV peak at or above this means they wait
	// for KV room (a few long prompts fill the cache without reaching
	// kvFull: the next one does not fit).
	kvBusy = 0.50
	// A hit rate below this fraction of the theoretical one is "far
	// below".
	hitFarBelow = 0.5
	// The theoretical rate must be at least this for thrashing to be
	// told apart from a workload that reuses little.
	minTheoretical = 0.2
	// Waiting requests per running one that mean saturation.
	waitingPerRunning = 2
	minWaiting        = 4
	// Context overflows above this share of finished requests are named.
	overflowShare = 0.01
	// A p99 send lateness above this (ms) means the client cannot keep
	// its schedule: it, not the server, limits the run.
	lateP99 = 50
)

// diagKind names a diagnosis rule; "" is none.
type diagKind string

const (
	diagNone      diagKind = ""
	diagThrashing diagKind = "thrashing"
	diagLate      diagKind = "late"
	diagSaturated diagKind = "saturated"
	diagOverflows diagKind = "overflows"
)

// Diagnose returns a one-line diagnosis of what limits the run at this
// instant, or "" when the picture is not clear. The first matching rule
// wins:
//   - prefix cache thrashing: the server's hit rate is below half the
//     theoretical one (which is at least 20 %) while the cache is under
//     pressure: GPU KV usage ≥ 90 %, requests waiting (at least as many
//     as run) with the KV peak of the window ≥ 50 % (admission waits for
//     KV room), or preemptions in the window.
//     The two rates must cover the same phase: during profiling, the
//     server's window must lie inside it. It comes first: a thrashing
//     cache also fills the queue (saturation) and can slow the client;
//   - the client sends late: the p99 of the window's send lateness is
//     above 50 ms, so the load is not what the trace asks for;
//   - waiting ≥ 2 × running (and ≥ 4): the server is saturated;
//   - more than 1 % of the finished requests overflow the context window.
//
// The live views do not show this answer frame by frame: a Tracker holds
// it for DiagnosisHold before it shows or drops a diagnosis.
func Diagnose(s *Snapshot) string {
	_, text, _ := diagnose(s, diagNone)
	return text
}

// diagnose is Diagnose with the rule that fired. undecided is set when
// shown is thrashing and its evidence holds but the two hit rates do not
// cover the same span yet (the first seconds of profiling, when the
// server's window still holds warmup): the answer is then not known, and
// the thrashing line is not dropped for it.
func diagnose(s *Snapshot, shown diagKind) (kind diagKind, text string, undecided bool) {
	sv := &s.Server
	c := &s.Client
	th := c.TheoreticalHitRate
	sameSpan := c.Phase != PhaseProfiling || sv.HitWindow <= 0 || s.ProfilingElapsed >= sv.HitWindow
	if sv.Valid && !math.IsNaN(sv.HitRate) && !math.IsNaN(th) && th >= minTheoretical && sv.HitRate < hitFarBelow*th {
		var why string
		peak := s.KVPeak
		if math.IsNaN(peak) || (!math.IsNaN(sv.KVUsage) && sv.KVUsage > peak) {
			peak = sv.KVUsage
		}
		switch {
		case !math.IsNaN(peak) && peak >= kvFull:
			why = "KV " + pct(peak) + " full"
		case !math.IsNaN(sv.Waiting) && sv.Waiting >= 1 && sv.Waiting >= sv.Running && !math.IsNaN(peak) && peak >= kvBusy:
			why = fmt.Sprintf("%.0f waiting for KV room, %.0f running, KV peak %s", sv.Waiting, sv.Running, pct(peak))
		case !math.IsNaN(sv.Preemptions) && sv.Preemptions > 0:
			why = fmt.Sprintf("%.0f preemptions", sv.Preemptions)
		}
		switch {
		case why != "" && sameSpan:
			return diagThrashing, fmt.Sprintf("prefix cache thrashing: working set exceeds KV capacity (hits %s vs %s theoretical; %s)",
				pct(sv.HitRate), pct(th), why), false
		case why != "" && shown == diagThrashing:
			return diagNone, "", true
		}
	}
	if !math.IsNaN(c.SendLateP99) && c.SendLateP99 > lateP99 && c.Window > 0 {
		return diagLate, fmt.Sprintf("client is the bottleneck: requests are sent late (p99 %s behind schedule, %s); the offered load is below the trace's (CPU-starved client? fewer lanes, or another machine)",
			ms(c.SendLateP99), windowText(s)), false
	}
	if sv.Valid && !math.IsNaN(sv.Waiting) && !math.IsNaN(sv.Running) && sv.Waiting >= minWaiting &&
		sv.Waiting >= waitingPerRunning*math.Max(sv.Running, 1) {
		return diagSaturated, fmt.Sprintf("server saturated: %.0f requests waiting, %.0f running", sv.Waiting, sv.Running), false
	}
	all := s.Warmup.Done() + s.Profiling.Done()
	if ovf := s.Warmup.Overflows + s.Profiling.Overflows; all > 0 && float64(ovf) > overflowShare*float64(all) {
		adv := sv.OverflowAdvice
		if adv == "" {
			adv = "raise the server's per-request context window"
		}
		return diagOverflows, fmt.Sprintf("context overflows: %d of %d requests exceed the server's context window (%s)", ovf, all, adv), false
	}
	return diagNone, "", false
}

// pct formats a 0..1 fraction as a percentage.
func pct(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f %%", 100*v)
}
