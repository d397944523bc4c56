package timing

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// Default trajectory start ratios of the legacy scenario (§3.2, Appendix A)
// and the default recycle scan bound.
const (
	DefaultMinRatio    = 0.25
	DefaultMaxRatio    = 0.75
	DefaultRecycleScan = 64
)

// Config configures a Scheduler. Zero values of MinRatio/MaxRatio are real
// values (ratio 0), so start from DefaultConfig.
type Config struct {
	// Lanes is the number of concurrent sessions (--concurrency); ≥ 1.
	Lanes int
	// Seed is --random-seed (0 when unset, as aiperf does); it keys k_i.
	Seed int64
	// MinRatio and MaxRatio bound the start turn k_i as fractions of the
	// trace's turns (--trajectory-start-min-ratio / -max-ratio);
	// 0 ≤ MinRatio ≤ MaxRatio ≤ 1.
	MinRatio, MaxRatio float64
	// Duration is --benchmark-duration, counted from StartProfiling; no send
	// is due at or after the deadline. 0 means no deadline.
	Duration time.Duration
	// RecycleScan bounds how many queue entries a recycling lane inspects
	// looking for a trace not live on another lane; ≤ 0 means
	// DefaultRecycleScan.
	RecycleScan int
}

// DefaultConfig returns a Config with the legacy defaults: one lane, seed
// 0, ratios 0.25/0.75, no deadline, a 64-entry recycle scan.
func DefaultConfig() Config {
	return Config{Lanes: 1, MinRatio: DefaultMinRatio, MaxRatio: DefaultMaxRatio, RecycleScan: DefaultRecycleScan}
}

// Phase is the benchmark phase of a send.
type Phase int

// The phases, in order.
const (
	Warmup Phase = iota
	Profiling
)

// String returns "warmup" or "profiling", the benchmark_phase values of the
// exports.
func (p Phase) String() string {
	switch p {
	case Warmup:
		return "warmup"
	case Profiling:
		return "profiling"
	}
	return "phase(" + strconv.Itoa(int(p)) + ")"
}

// Send is one request the engine must issue.
type Send struct {
	// Lane is the lane index, 0-based.
	Lane int
	// Trace is the index into the traces given to New.
	Trace int
	// Turn is the parent-request index within the trace.
	Turn int
	// At is when the request is due; the zero time (warmup) means at once.
	At time.Time
	// Phase is Warmup or Profiling.
	Phase Phase
	// Session numbers lane plays (sessions) across the run, from 0; unique
	// per session.
	Session int
	// NewSession is set on the first send of a session: the engine mints a
	// correlation id and a cache-bust marker (the warmup send, and every
	// recycle).
	NewSession bool
	// RecyclePass is the per-trace-id count of sessions started before this
	// one (from 0, warmup included, never reset): the marker input of §4.1.
	RecyclePass int
}

// Outcome is how a profiling request ended, as far as scheduling cares.
type Outcome struct {
	// Overflow: the response was a context overflow (§6); the session
	// ends and the lane recycles (§3.4).
	Overflow bool
	// Failed: the request failed for another reason; the session goes on
	// with its next turn.
	Failed bool
}

// Stats counts what the scheduler did.
type Stats struct {
	// Traces is the number of traces given to New, Usable those with ≥ 2
	// turns.
	Traces, Usable int
	// WrapFilled is the number of lanes that got a trace already given to
	// a lower lane (lanes beyond the usable pool).
	WrapFilled int
	// Sessions is the number of sessions started (warmup sessions
	// included); Recycles those started by a lane recycling.
	Sessions, Recycles int
	// Overflows is the number of sessions ended by a context overflow;
	// Completed the number that sent their last turn.
	Overflows, Completed int
	// LiveFallbacks counts recycles that took the queue head although it
	// was live on another lane (every scanned entry was live).
	LiveFallbacks int
	// Queue is the current length of the recycle queue.
	Queue int
	// LanesDone is the number of lanes past the deadline.
	LanesDone int
}

// lane is the state of one lane.
type lane struct {
	trace   int // index into traces
	turn    int // last turn handed out
	start   int // k_i, the warmup turn (kept after recycling)
	session int
	done    bool
}

// Scheduler is the legacy AGENTIC_REPLAY scheduler (see the package doc).
type Scheduler struct {
	mu       sync.Mutex
	cfg      Config
	traces   []TraceInfo
	usable   []int // indices of usable traces, corpus order
	lanes    []lane
	live     []int // per trace: lanes currently playing it
	queue    []int // FIFO of trace indices
	passes   map[string]int
	sessions int
	stats    Stats
	warmedUp bool
	started  bool
	deadline time.Time
}

// New returns a scheduler for traces. It fails when cfg is invalid or no
// trace has at least two turns; the messages name the flag to change.
func New(cfg Config, traces []TraceInfo) (*Scheduler, error) {
	if cfg.Lanes < 1 {
		return nil, fmt.Errorf("timing: %d lanes: --concurrency must be at least 1", cfg.Lanes)
	}
	if !(cfg.MinRatio >= 0 && cfg.MinRatio <= 1) || !(cfg.MaxRatio >= 0 && cfg.MaxRatio <= 1) {
		return nil, fmt.Errorf("timing: trajectory start ratios %v/%v: --trajectory-start-min-ratio and --trajectory-start-max-ratio must be in [0, 1]", cfg.MinRatio, cfg.MaxRatio)
	}
	if cfg.MinRatio > cfg.MaxRatio {
		return nil, fmt.Errorf("timing: --trajectory-start-min-ratio %v is above --trajectory-start-max-ratio %v: swap them", cfg.MinRatio, cfg.MaxRatio)
	}
	if cfg.Duration < 0 {
		return nil, fmt.Errorf("timing: negative --benchmark-duration %v", cfg.Duration)
	}
	if cfg.RecycleScan <= 0 {
		cfg.RecycleScan = DefaultRecycleScan
	}
	s := &Scheduler{
		cfg:    cfg,
		traces: traces,
		live:   make([]int, len(traces)),
		passes: make(map[string]int),
		lanes:  make([]lane, cfg.Lanes),
	}
	for i, t := range traces {
		if len(t.Delays) != t.Turns {
			return nil, fmt.Errorf("timing: trace %q: %d delays for %d turns (build TraceInfo with FromTrace)", t.ID, len(t.Delays), t.Turns)
		}
		if t.Turns >= 2 {
			s.usable = append(s.usable, i)
		}
	}
	if len(s.usable) == 0 {
		return nil, errors.New("timing: no usable trace: every trace has at most one parent request, so none can be split into a warmup and a profiling turn; use a corpus with multi-turn traces (check --max-context-length and --num-dataset-entries)")
	}
	s.stats.Traces, s.stats.Usable = len(traces), len(s.usable)
	given := make([]bool, len(traces))
	for i := range s.lanes {
		ti := s.usable[i%len(s.usable)]
		if given[ti] {
			s.stats.WrapFilled++
		}
		given[ti] = true
		s.lanes[i] = lane{trace: ti, start: SampleStartTurn(cfg.Seed, traces[ti].ID, i, traces[ti].Turns, cfg.MinRatio, cfg.MaxRatio)}
	}
	for _, ti := range s.usable {
		if !given[ti] {
			s.queue = append(s.queue, ti)
		}
	}
	return s, nil
}

// SampleStartTurn returns the legacy start turn k for a lane playing a trace with
// n turns (§3.2): 0 when n ≤ 2; otherwise uniform in [k_min, k_max] with
// k_min = min(int(minRatio·n), n−2), k_max = min(int(maxRatio·n), n−2) and
// k_min lowered to k_max when above it. The draw is keyed by
// SHA-256("<seed>:<traceID>:<lane>") (see the package doc).
func SampleStartTurn(seed int64, traceID string, lane, n int, minRatio, maxRatio float64) int {
	if n <= 2 {
		return 0
	}
	kmin := min(int(minRatio*float64(n)), n-2)
	kmax := min(int(maxRatio*float64(n)), n-2)
	if kmin > kmax {
		kmin = kmax
	}
	if kmin < 0 {
		kmin = 0
	}
	if kmax <= kmin {
		return kmax
	}
	sum := sha256.Sum256([]byte(strconv.FormatInt(seed, 10) + ":" + traceID + ":" + strconv.Itoa(lane)))
	rng := rand.NewPCG(binary.BigEndian.Uint64(sum[:8]), 0)
	return kmin + int(uniform(rng, uint64(kmax-kmin+1)))
}

// uniform returns a uniform value in [0, n) from src, with Lemire's
// multiply-and-reject method (no modulo bias). Written here rather than
// using rand.IntN so the mapping is pinned by this package, not by the
// standard library's implementation.
func uniform(src *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// Warmup returns the warmup sends, one per lane in lane order: turn k_i of
// the lane's trace, Phase Warmup, as a new session, due at once (zero At).
// It may be called once.
func (s *Scheduler) Warmup() []Send {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.warmedUp {
		panic("timing: Warmup called twice")
	}
	s.warmedUp = true
	out := make([]Send, len(s.lanes))
	for i := range s.lanes {
		l := &s.lanes[i]
		l.turn = l.start
		out[i] = s.newSessionLocked(i, l.trace, l.start, time.Time{}, Warmup)
	}
	return out
}

// StartProfiling starts the profiling clock at now and returns one send per
// lane, in lane order: turn k_i+1 due at now in the warmup's session, or,
// when k_i was the trace's last turn, a recycle (a new session at turn 0).
// Call it once, after every warmup request has finished.
func (s *Scheduler) StartProfiling(now time.Time) []Send {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.warmedUp || s.started {
		panic("timing: StartProfiling must be called once, after Warmup")
	}
	s.started = true
	if s.cfg.Duration > 0 {
		s.deadline = now.Add(s.cfg.Duration)
	}
	out := make([]Send, 0, len(s.lanes))
	for i := range s.lanes {
		l := &s.lanes[i]
		if l.turn+1 >= s.traces[l.trace].Turns {
			if snd, ok := s.recycleLocked(i, now); ok {
				out = append(out, snd)
			}
			continue
		}
		l.turn++
		out = append(out, Send{Lane: i, Trace: l.trace, Turn: l.turn, At: now, Phase: Profiling, Session: l.session})
	}
	return out
}

// Next reports the lane's next send after its profiling request finished
// at now with outcome out. It returns false when the lane is done: its next
// send would be due at or after the deadline (or the lane was done
// already). After an overflow or the trace's last turn the lane recycles
// (see the package doc).
func (s *Scheduler) Next(laneIdx int, out Outcome, now time.Time) (Send, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.started {
		panic("timing: Next called before StartProfiling")
	}
	if laneIdx < 0 || laneIdx >= len(s.lanes) {
		panic(fmt.Sprintf("timing: Next on lane %d of %d", laneIdx, len(s.lanes)))
	}
	l := &s.lanes[laneIdx]
	if l.done {
		return Send{}, false
	}
	t := &s.traces[l.trace]
	if out.Overflow || l.turn+1 >= t.Turns {
		if out.Overflow {
			s.stats.Overflows++
		} else {
			s.stats.Completed++
		}
		return s.recycleLocked(laneIdx, now)
	}
	at := now.Add(t.Delays[l.turn+1])
	if s.pastLocked(at) {
		s.finishLocked(l)
		return Send{}, false
	}
	l.turn++
	return Send{Lane: laneIdx, Trace: l.trace, Turn: l.turn, At: at, Phase: Profiling, Session: l.session}, true
}

// pastLocked reports whether at is at or after the deadline.
func (s *Scheduler) pastLocked(at time.Time) bool {
	return !s.deadline.IsZero() && !at.Before(s.deadline)
}

// finishLocked marks a lane done and releases its trace.
func (s *Scheduler) finishLocked(l *lane) {
	l.done = true
	s.live[l.trace]--
	s.stats.LanesDone++
}

// recycleLocked ends the lane's session at now: its trace goes to the
// queue's tail and the lane starts the chosen trace at turn 0 at now, unless
// now is past the deadline.
func (s *Scheduler) recycleLocked(laneIdx int, now time.Time) (Send, bool) {
	l := &s.lanes[laneIdx]
	if s.pastLocked(now) {
		s.finishLocked(l)
		return Send{}, false
	}
	s.live[l.trace]--
	s.queue = append(s.queue, l.trace)
	pick := 0
	scan := min(len(s.queue), s.cfg.RecycleScan)
	for pick < scan && s.live[s.queue[pick]] > 0 {
		pick++
	}
	if pick == scan {
		pick = 0
		s.stats.LiveFallbacks++
	}
	ti := s.queue[pick]
	s.queue = append(s.queue[:pick], s.queue[pick+1:]...)
	s.stats.Recycles++
	l.trace, l.turn = ti, 0
	return s.newSessionLocked(laneIdx, ti, 0, now, Profiling), true
}

// newSessionLocked starts a session of trace ti on a lane and returns its
// first send.
func (s *Scheduler) newSessionLocked(laneIdx, ti, turn int, at time.Time, ph Phase) Send {
	id := s.traces[ti].ID
	pass := s.passes[id]
	s.passes[id] = pass + 1
	sess := s.sessions
	s.sessions++
	s.stats.Sessions++
	s.live[ti]++
	s.lanes[laneIdx].session = sess
	return Send{Lane: laneIdx, Trace: ti, Turn: turn, At: at, Phase: ph, Session: sess, NewSession: true, RecyclePass: pass}
}

// Deadline returns the profiling deadline (start + Duration); the zero time
// before StartProfiling or when Duration is 0.
func (s *Scheduler) Deadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadline
}

// StartTurn returns the lane's initial start turn k_i (what its warmup
// request sends), for tests and run metadata.
func (s *Scheduler) StartTurn(laneIdx int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lanes[laneIdx].start
}

// InitialTrace returns the index of the trace lane laneIdx was given for
// its warmup (corpus order, wrap-filled).
func (s *Scheduler) InitialTrace(laneIdx int) int {
	return s.usable[laneIdx%len(s.usable)]
}

// Stats returns a snapshot of the counters.
func (s *Scheduler) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Queue = len(s.queue)
	return st
}
