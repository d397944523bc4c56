package timing

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Phase is the benchmark phase of a send.
type Phase int

// The phases, in order.
const (
	Warmup Phase = iota
	Profiling
)

// String returns "warmup" or "profiling", the benchmark_phase values of
// the exports.
func (p Phase) String() string {
	switch p {
	case Warmup:
		return "warmup"
	case Profiling:
		return "profiling"
	}
	return "phase(" + strconv.Itoa(int(p)) + ")"
}

// Outcome is how a request ended, as far as scheduling cares.
type Outcome struct {
	// Overflow: a context overflow; the conversation ends (every later
	// turn would be larger still).
	Overflow bool
	// Failed: another failure; the conversation goes on with its next
	// turn, as if the request had succeeded.
	Failed bool
	// Cancelled: cut by the engine (stop, grace period); the conversation
	// sends nothing more.
	Cancelled bool
}

// Defaults of the replay core's settings: aiperf's defaults, which the
// InferenceX scenario keeps. They are defined here once; replay.DefaultConfig,
// the scenario presets and the CLI's flags take them from here.
const (
	// DefaultStartMinRatio and DefaultStartMaxRatio bound the start turn
	// (legacy) or the snapshot time t* (v1.0) as fractions of a trace.
	DefaultStartMinRatio = 0.25
	DefaultStartMaxRatio = 0.75
	// DefaultRecycleScan bounds the legacy recycle queue scan.
	DefaultRecycleScan = 64
	// DefaultInterTurnDelayCap is v0.2's per-turn delay cap.
	DefaultInterTurnDelayCap = 60 * time.Second
	// DefaultV03IdleGapCap is v0.3's trace idle gap cap (the time warp).
	DefaultV03IdleGapCap = 60 * time.Second
	// DefaultSystemIdleCap is v1.0's system idle cap.
	DefaultSystemIdleCap = 10 * time.Second
)

// Config configures a Schedule.
type Config struct {
	// Generation selects the semantics.
	Generation Generation
	// Lanes is the number of concurrent trees (--concurrency); ≥ 1.
	Lanes int
	// Seed keys the per-lane start draws.
	Seed int64
	// StartMinRatio and StartMaxRatio bound the start turn (legacy) or
	// t* (v1.0); 0 ≤ min ≤ max ≤ 1.
	StartMinRatio, StartMaxRatio float64
	// Duration is the profiling duration, counted from StartProfiling; no
	// send is released at or after the deadline. 0 means no deadline.
	Duration time.Duration
	// RecycleScan bounds how many legacy queue entries a recycling lane
	// inspects for one not live on another lane (≤ 0: DefaultRecycleScan).
	RecycleScan int
	// SystemIdleCap shifts every pending timer of every tree when nothing
	// is in flight anywhere and the next timer is further away than the
	// cap (0 = off).
	SystemIdleCap time.Duration
	// TraceIdleCap shifts a tree's pending timers when the tree has had
	// nothing in flight for the cap (0 = off). In v0.3 it is applied to
	// the recorded timeline when the plans are built instead.
	TraceIdleCap time.Duration
	// WarmupRequestsPerLane is the v1.0 cache warmup's request count per
	// lane after the primers (0 = none); WarmupDuration its time-bounded
	// alternative (0 = none). At most one may be set.
	WarmupRequestsPerLane int
	WarmupDuration        time.Duration
	// BurstPhaseStarts sends every primer at once and aligns each lane's
	// profiling start on its own first request (v1.0; the default spreads
	// them so every trajectory reaches t* at the same instant).
	BurstPhaseStarts bool
	// Shard deals the Lanes global lanes to shards: the schedule plays
	// the global lanes i with i mod Shard.Count == Shard.Index (the zero
	// value: every lane). Lanes stays the global lane count.
	Shard Shard
}

// Shard is one shard of a run spread over several processes: index
// Index of Count, 0-based. The zero value (and Count 1) is the whole
// run.
type Shard struct {
	Index, Count int
}

// Sharded reports whether the run is split over more than one shard.
func (sh Shard) Sharded() bool { return sh.Count > 1 }

// Owns reports whether the shard plays global lane i.
func (sh Shard) Owns(i int) bool { return sh.Count <= 1 || i%sh.Count == sh.Index }

// String returns "I/N" ("0/1" for the zero value).
func (sh Shard) String() string {
	return strconv.Itoa(sh.Index) + "/" + strconv.Itoa(max(sh.Count, 1))
}

// Validate checks 0 ≤ Index < Count (the zero value is valid).
func (sh Shard) Validate() error {
	if sh.Count == 0 && sh.Index == 0 {
		return nil
	}
	if sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count {
		return fmt.Errorf("timing: shard %d/%d: want 0 ≤ index < count", sh.Index, sh.Count)
	}
	return nil
}

// Stats counts what the schedule did.
type Stats struct {
	// Traces is the number of plans given to New, Usable those a lane
	// can start.
	Traces, Usable int
	// WrapFilled is the number of lanes that got a trace already given to
	// a lower lane.
	WrapFilled int
	// Trees counts trees started (initial ones included), Recycles those
	// started by a lane whose tree drained.
	Trees, Recycles int
	// Sent counts requests released, per phase; ChildSent those of child
	// streams (subagents).
	Sent      [2]int
	ChildSent int
	// BranchesSpawned and ChildrenStarted count subagent spawns that
	// happened; Cut the turns never sent because the deadline came first.
	BranchesSpawned, ChildrenStarted, Cut int
	// BranchesAtStart and ChildrenAtStart count the branches and child
	// streams already under way at the trees' start states.
	BranchesAtStart, ChildrenAtStart int
	// Overflows counts conversations ended by a context overflow;
	// Completed the trees that drained.
	Overflows, Completed int
	// LiveFallbacks counts recycles that took a trace live on another
	// lane because every scanned entry was live.
	LiveFallbacks int
	// Queue is the current length of the recycle queue.
	Queue int
	// LanesDone is the number of lanes that finished profiling.
	LanesDone int
	// SystemIdleJumps and SystemIdleSkipped are the system idle cap's
	// shifts; TraceIdleJumps and TraceIdleSkipped the trace idle cap's.
	SystemIdleJumps, TraceIdleJumps     int
	SystemIdleSkipped, TraceIdleSkipped time.Duration
}

// Merge folds b, the statistics of another shard of the same run, into
// s. Traces and Usable describe the corpus, which every shard plans
// whole: s keeps its own (the first shard's). Every other field is a
// count of what a shard did, summed (Queue too: the recycle queues of the
// shards together).
func (s *Stats) Merge(b Stats) {
	s.WrapFilled += b.WrapFilled
	s.Trees += b.Trees
	s.Recycles += b.Recycles
	s.Sent[0] += b.Sent[0]
	s.Sent[1] += b.Sent[1]
	s.ChildSent += b.ChildSent
	s.BranchesSpawned += b.BranchesSpawned
	s.ChildrenStarted += b.ChildrenStarted
	s.BranchesAtStart += b.BranchesAtStart
	s.ChildrenAtStart += b.ChildrenAtStart
	s.Cut += b.Cut
	s.Overflows += b.Overflows
	s.Completed += b.Completed
	s.LiveFallbacks += b.LiveFallbacks
	s.Queue += b.Queue
	s.LanesDone += b.LanesDone
	s.SystemIdleJumps += b.SystemIdleJumps
	s.TraceIdleJumps += b.TraceIdleJumps
	s.SystemIdleSkipped += b.SystemIdleSkipped
	s.TraceIdleSkipped += b.TraceIdleSkipped
}

// Schedule is the replay core: the lanes, their trees, and what spans
// lanes (phase clock, recycling, session numbering, the system idle cap).
// Each Lane is driven by one goroutine; the Schedule's shared state is
// guarded internally, so lanes may run concurrently.
type Schedule struct {
	cfg   Config
	plans []*Plan
	lanes []*Lane

	// global is the system idle cap's offset (ns), read by every tree.
	global atomic.Int64
	// inflight counts requests in flight over all lanes.
	inflight atomic.Int64

	// deadline is the profiling deadline (real ns; 0 = none).
	deadline atomic.Int64

	// stage is where the phases are; it changes only at the barriers
	// between them (StartAcceleratedWarmup, StartProfiling), when no lane
	// runs. accelEnd ends a time-bounded accelerated warmup (real ns).
	stage      stage
	accelEnd   int64
	primerRamp time.Duration
	// idleMu serializes the system idle cap's checks; idleStart is when
	// the current system idle interval began (real ns: the last response
	// that left nothing in flight, or the start of profiling).
	idleMu    sync.Mutex
	idleStart int64

	mu      sync.Mutex
	started bool
	trees   int64
	passes  map[string]int
	live    []int // per plan: trees playing it
	recycle recycler
	// initialLanes counts, per plan, the lanes of this shard that started
	// with it.
	initialLanes []int
	stats        Stats

	// starts are the start states of every global lane (a shard computes
	// them all: the primer spread is global).
	starts []laneStart
	// Session numbering (deterministic per global lane, whatever the
	// shard): sessionBase[i] is global lane i's first initial session,
	// resessionBase where the v0.3 profiling re-sessions begin (each lane
	// at resessionBase + sessionBase[i]), recycledBase where the recycled
	// trees begin: the lane's k-th recycled tree (k from 0) takes
	// recycledBase + (k·Lanes + i)·maxStreams.
	sessionBase                 []int
	resessionBase, recycledBase int
	maxStreams                  int
	// handoffs are the lanes' v1.0 warmup states between PrepareProfiling
	// and StartProfilingAligned.
	handoffs [][]streamStart
}

func (s *Schedule) globalOffset() int64 { return s.global.Load() }

// New builds a schedule of cfg.Lanes lanes over plans (one per trace, in
// corpus order) and the initial tree of every lane.
func New(cfg Config, plans []*Plan) (*Schedule, error) {
	if cfg.Generation.IsZero() {
		return nil, errors.New("timing: Config.Generation: required (LookupGeneration, or one of V02, V03Early, V03, V10)")
	}
	if cfg.Lanes < 1 {
		return nil, fmt.Errorf("timing: Lanes is %d: at least one lane is needed", cfg.Lanes)
	}
	if !(cfg.StartMinRatio >= 0 && cfg.StartMinRatio <= 1) || !(cfg.StartMaxRatio >= 0 && cfg.StartMaxRatio <= 1) || cfg.StartMinRatio > cfg.StartMaxRatio {
		return nil, fmt.Errorf("timing: start ratios %v/%v: want 0 ≤ StartMinRatio ≤ StartMaxRatio ≤ 1", cfg.StartMinRatio, cfg.StartMaxRatio)
	}
	if cfg.Duration < 0 || cfg.SystemIdleCap < 0 || cfg.TraceIdleCap < 0 {
		return nil, errors.New("timing: Duration, SystemIdleCap and TraceIdleCap must not be negative")
	}
	if cfg.RecycleScan <= 0 {
		cfg.RecycleScan = DefaultRecycleScan
	}
	if cfg.WarmupRequestsPerLane < 0 || cfg.WarmupDuration < 0 {
		return nil, errors.New("timing: WarmupRequestsPerLane and WarmupDuration must not be negative")
	}
	if cfg.WarmupRequestsPerLane > 0 && cfg.WarmupDuration > 0 {
		return nil, errors.New("timing: WarmupRequestsPerLane and WarmupDuration are alternatives: set one")
	}
	if err := cfg.Shard.Validate(); err != nil {
		return nil, err
	}
	if cfg.Shard.Count == 0 {
		cfg.Shard.Count = 1
	}
	if cfg.Shard.Index >= cfg.Lanes {
		return nil, fmt.Errorf("timing: shard %s has no lane: the run has %d lanes; use at most %d shards", cfg.Shard, cfg.Lanes, cfg.Lanes)
	}
	s := &Schedule{cfg: cfg, plans: plans, passes: make(map[string]int), live: make([]int, len(plans))}
	starts, err := s.initialStarts()
	if err != nil {
		return nil, err
	}
	s.starts = starts
	s.numberSessions()
	s.initialLanes = make([]int, len(plans))
	for i := range starts {
		if cfg.Shard.Owns(i) {
			s.initialLanes[starts[i].plan.Trace]++
		}
	}
	for i := range starts {
		if !cfg.Shard.Owns(i) {
			continue
		}
		l := &Lane{s: s, idx: i, quota: -1}
		l.wake.Store(math.MaxInt64)
		// The pass of an initial tree: how many lower global lanes start
		// with the same trace (lanes take the usable traces in turn).
		l.tree = s.newTreeLocked(l, starts[i].plan, s.sessionBase[i], i/s.stats.Usable)
		l.start = starts[i]
		l.tree.applyStart(&starts[i])
		if starts[i].snapshot {
			l.tree.origin, l.tree.hasOrigin = starts[i].tStar, true
		}
		s.lanes = append(s.lanes, l)
	}
	// The legacy recycle passes go on from the initial trees of every
	// global lane.
	for i := range starts {
		s.passes[starts[i].plan.TraceID]++
	}
	return s, nil
}

// numberSessions lays out the session numbers of every global lane
// (Schedule.sessionBase): the initial trees first, densely in global lane
// order, then the v0.3 re-sessions, then the recycled trees in blocks of
// maxStreams.
func (s *Schedule) numberSessions() {
	s.sessionBase = make([]int, len(s.starts))
	n := 0
	for i := range s.starts {
		s.sessionBase[i] = n
		n += len(s.starts[i].plan.Streams)
	}
	s.resessionBase, s.recycledBase = n, n
	if s.cfg.Generation.Resession {
		s.recycledBase = 2 * n
	}
	for _, p := range s.plans {
		if usable(p) {
			s.maxStreams = max(s.maxStreams, len(p.Streams))
		}
	}
}

// recycledSession returns the first session number of the k-th recycled
// tree (k from 0) of global lane i.
func (s *Schedule) recycledSession(i, k int) int {
	return s.recycledBase + (k*s.cfg.Lanes+i)*s.maxStreams
}

// Lane returns the shard's lane i (0 ≤ i < Lanes(), in global order);
// its Index is the global lane index.
func (s *Schedule) Lane(i int) *Lane { return s.lanes[i] }

// Lanes returns the number of lanes the schedule plays (the shard's).
func (s *Schedule) Lanes() int { return len(s.lanes) }

// Shard returns the shard the schedule plays (Count ≥ 1).
func (s *Schedule) Shard() Shard { return s.cfg.Shard }

// Config returns the configuration (defaults filled).
func (s *Schedule) Config() Config { return s.cfg }

// newTreeLocked starts a tree of plan p on lane l with its first session
// number and its recycle pass. s.mu is held (or New is running).
func (s *Schedule) newTreeLocked(l *Lane, p *Plan, session, pass int) *Tree {
	t := newTree(s, p, l.idx, s.trees, session, pass)
	s.trees++
	s.live[p.Trace]++
	s.stats.Trees++
	return t
}

// StartProfiling starts the profiling clock at now: the deadline is
// now + Duration, and every lane's tree switches to profiling (the
// legacy start turn k_i+1 is due at once; a v1.0 tree resumes from its
// warmup state). Call it once, after every lane's warmup is done.
func (s *Schedule) StartProfiling(now time.Time) {
	s.StartProfilingAligned(now, s.PrepareProfiling())
}

// Alignment is what the v1.0 profiling start aligns every lane on: the
// smallest offset of a ready stream after its tree's origin (T0, when
// Has; 0 when a lane's tree drained in the cache warmup and the lane
// starts a new root), and whether some lane's tree has no origin and had
// no cache warmup (Anchorless: no alignment). A sharded run combines its shards' alignments with Combine
// and hands the result to every shard.
type Alignment struct {
	T0         time.Duration
	Has        bool
	Anchorless bool
}

// Combine returns the alignment of the lanes of a and b together.
func (a Alignment) Combine(b Alignment) Alignment {
	out := Alignment{Anchorless: a.Anchorless || b.Anchorless, Has: a.Has || b.Has}
	switch {
	case a.Has && b.Has:
		out.T0 = min(a.T0, b.T0)
	case a.Has:
		out.T0 = a.T0
	default:
		out.T0 = b.T0
	}
	return out
}

// PrepareProfiling hands every lane's warmup state over to profiling
// (v1.0) and returns the lanes' Alignment; StartProfilingAligned then
// starts the phase. Call it once, after every lane's warmup is done.
//
// A lane left with no live stream by the cache warmup (its tree drained
// as its quota ran out) takes a new root at turn 0 when profiling starts:
// due at offset 0, it takes part in the alignment, whose minimum is then
// 0. Without a cache warmup, a lane whose tree has no recorded clock (a
// k_i start) turns the alignment off (Anchorless); after one, every lane
// has a handoff offset (the recorded delay where there is no clock).
func (s *Schedule) PrepareProfiling() Alignment {
	var a Alignment
	if !s.cfg.Generation.Primers {
		return a
	}
	accelerated := s.stage == stageAccelerated
	s.handoffs = make([][]streamStart, len(s.lanes))
	for i, l := range s.lanes {
		s.handoffs[i] = l.tree.handoff()
		if !l.tree.hasOrigin && !accelerated {
			a.Anchorless = true
		}
		if accelerated && len(s.handoffs[i]) == 0 {
			a.T0, a.Has = 0, true
		}
		for _, ss := range s.handoffs[i] {
			if !ss.waiting && (!a.Has || ss.offset < a.T0) {
				a.T0, a.Has = ss.offset, true
			}
		}
	}
	return a
}

// StartProfilingAligned is StartProfiling with the alignment a of every
// lane of the run (PrepareProfiling's, combined over the shards).
func (s *Schedule) StartProfilingAligned(now time.Time, a Alignment) {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		panic("timing: StartProfiling called twice")
	}
	s.started = true
	if s.cfg.Duration > 0 {
		s.deadline.Store(now.Add(s.cfg.Duration).UnixNano())
	}
	s.mu.Unlock()
	n := now.UnixNano()
	if s.cfg.Generation.Primers {
		if s.handoffs == nil {
			s.PrepareProfiling()
		}
		s.alignStarts(a, s.handoffs)
		s.handoffs = nil
	}
	s.stage = stageProfiling
	for _, l := range s.lanes {
		l.finished = false
		l.quota = -1
		l.mu.Lock()
		t := l.tree
		t.accel = false
		t.barriers = s.cfg.Generation.Barriers
		t.startPhase(Profiling, n, l.start.resession, s.resessionBase+s.sessionBase[l.idx])
		l.mu.Unlock()
		l.afterChange(n)
	}
	if s.inflight.Load() == 0 {
		s.systemIdle(n)
	}
}

// Deadline returns the profiling deadline; the zero time before
// StartProfiling or without a duration.
func (s *Schedule) Deadline() time.Time {
	d := s.deadline.Load()
	if d == 0 {
		return time.Time{}
	}
	return time.Unix(0, d)
}

// WarmupSends returns the number of warmup requests the schedule will
// release (the phase target): the primers of every lane, plus, in v1.0,
// WarmupRequestsPerLane per lane (a time-bounded warmup has no target
// beyond its primers).
func (s *Schedule) WarmupSends() int {
	n := 0
	for _, l := range s.lanes {
		n += l.start.primers()
	}
	if s.cfg.Generation.Takes.CacheWarmup {
		n += len(s.lanes) * s.cfg.WarmupRequestsPerLane
	}
	return n
}

// Stats returns a snapshot of the counters.
func (s *Schedule) Stats() Stats {
	s.mu.Lock()
	st := s.stats
	if s.recycle != nil {
		st.Queue = s.recycle.len()
		st.LiveFallbacks = s.recycle.fallbacks()
	}
	s.mu.Unlock()
	var ts TreeStats
	for _, l := range s.lanes {
		l.mu.Lock()
		ts.Add(&l.done)
		for _, t := range l.trees() {
			ts.Add(&t.stats)
		}
		l.mu.Unlock()
	}
	st.Sent = ts.Sent
	st.ChildSent = ts.ChildSent
	st.BranchesSpawned = ts.BranchesSpawned
	st.ChildrenStarted = ts.ChildrenStarted
	st.BranchesAtStart = ts.BranchesAtStart
	st.ChildrenAtStart = ts.ChildrenAtStart
	st.Cut = ts.Cut
	st.Overflows = ts.Overflows
	st.TraceIdleJumps = ts.IdleJumps
	st.TraceIdleSkipped = ts.IdleSkipped
	return st
}

// Lane is one lane of a schedule: it holds one tree at a time and starts
// the next when the tree drains (in v0.3, when the tree's root is done: the
// tree's remaining children then go on as orphans of the lane). A Lane is
// driven by one goroutine.
type Lane struct {
	s     *Schedule
	idx   int
	tree  *Tree
	start laneStart
	// orphans are earlier trees of the lane whose children still run.
	orphans []*Tree
	// finished is set when the lane will release nothing more in the
	// current phase; past once the profiling deadline has passed (its
	// requests in flight may still finish).
	finished, past bool
	// quota is how many more requests the lane may release in the v1.0
	// accelerated warmup (-1: no limit); spent is set once the lane may
	// release nothing more in it (quota or time used up).
	quota int
	spent bool
	// wake is the lane's earliest pending timer for the system idle cap
	// (real ns plus the global offset at publishing; MaxInt64: none).
	wake atomic.Int64
	// mu guards done and the trees' stats against Stats readers.
	mu   sync.Mutex
	done TreeStats // stats of the lane's finished trees
	// recycled counts the trees the lane started by recycling.
	recycled int
}

// Index returns the lane's global index.
func (l *Lane) Index() int { return l.idx }

// Tree returns the lane's current tree.
func (l *Lane) Tree() *Tree { return l.tree }

// StartTurn returns the legacy start turn k_i of the lane's first tree,
// -1 when it started from a t* snapshot.
func (l *Lane) StartTurn() int { return l.start.startTurn }

// StartStreams returns how many streams of the lane's first tree were
// live in its start state, and how many of them were ready (not waiting
// for children).
func (l *Lane) StartStreams() (live, ready int) {
	for _, ss := range l.start.streams {
		live++
		if !ss.waiting {
			ready++
		}
	}
	return live, ready
}

// StartShare returns where t* lies in the first tree's recorded span, as a
// fraction (0 for a k_i start).
func (l *Lane) StartShare() float64 {
	lo, hi, ok := treeSpan(l.start.plan)
	if !l.start.snapshot || !ok || hi <= lo {
		return 0
	}
	return (l.start.tStar - lo) / (hi - lo)
}

// RootNext describes the first tree's root at the start state: "k/n" with
// k the root's first turn at or after t*, or "done/n" when the root had
// finished before it.
func (l *Lane) RootNext() string {
	n := len(l.start.plan.Streams[0].Turns)
	for _, ss := range l.start.streams {
		if ss.stream == 0 {
			return strconv.Itoa(ss.next) + "/" + strconv.Itoa(n)
		}
	}
	return "done/" + strconv.Itoa(n)
}

// StartTime returns the t* of the lane's first tree (seconds on the
// trace's recorded timeline) and whether it started from a snapshot.
func (l *Lane) StartTime() (float64, bool) { return l.start.tStar, l.start.snapshot }

// Due appends to dst every send due at or before now and returns it.
func (l *Lane) Due(now time.Time, dst []Send) []Send {
	n := now.UnixNano()
	s := l.s
	deadline := int64(0)
	if l.tree.phase == Profiling {
		deadline = s.deadlineNs()
	}
	var admit func(*Tree, int, int) bool
	if s.stage == stageAccelerated {
		if s.accelEnd != 0 && n >= s.accelEnd {
			l.afterChange(n)
			return dst
		}
		if l.quota >= 0 {
			admit = l.admit
		}
	}
	// Two passes at most: the trace idle cap, applied after a release,
	// may pull a timer in to now (the tree went idle exactly its cap
	// ago); the second pass releases it rather than leave the caller a
	// wake-up at now with nothing released.
	for pass := 0; pass < 2; pass++ {
		before := len(dst)
		l.mu.Lock()
		th := l.tree.firedHeld
		dst = l.tree.due(dst, n, deadline, admit)
		held := l.tree.firedHeld != th
		for _, o := range l.orphans {
			oh := o.firedHeld
			dst = o.due(dst, n, deadline, admit)
			held = held || o.firedHeld != oh
		}
		l.mu.Unlock()
		if k := len(dst) - before; k > 0 {
			s.inflight.Add(int64(k))
		}
		l.afterChange(n)
		if held && s.inflight.Load() == 0 {
			// A timer fired into a replay barrier: not activity (see
			// systemIdleHeld). A shift it makes may pull this lane's own
			// next timer in to now: the second pass releases it.
			s.systemIdleHeld(n)
		}
		if w, ok := l.earliest(); !ok || w > n || w == math.MinInt64 || l.finished || l.past || s.stage == stageAccelerated && l.spent {
			break
		}
	}
	return dst
}

// admit spends one request of the lane's warmup quota; false when none is
// left (the turn stays pending, for the handoff).
func (l *Lane) admit(*Tree, int, int) bool {
	if l.quota == 0 {
		return false
	}
	l.quota--
	return true
}

// Complete records that the send id finished at now with out.
func (l *Lane) Complete(id SendID, out Outcome, now time.Time) {
	n := now.UnixNano()
	t := l.treeOf(id.Tree)
	l.mu.Lock()
	t.complete(int(id.Stream), int(id.Turn), out, n)
	l.mu.Unlock()
	left := l.s.inflight.Add(-1)
	l.afterChange(n)
	if left == 0 {
		l.s.systemIdle(n)
	}
}

func (l *Lane) treeOf(id int64) *Tree {
	if l.tree.id == id {
		return l.tree
	}
	for _, o := range l.orphans {
		if o.id == id {
			return o
		}
	}
	panic(fmt.Sprintf("timing: lane %d: Complete for tree %d, which the lane does not play", l.idx, id))
}

// afterChange applies what follows a change of the lane's trees at now:
// the trace idle cap, recycling, and the end of the stage.
func (l *Lane) afterChange(now int64) {
	s := l.s
	t := l.tree
	defer func() {
		if s.cfg.SystemIdleCap > 0 && s.cfg.Generation.RuntimeIdleCaps {
			l.publishWake()
		}
	}()
	if t.inflight == 0 && s.cfg.TraceIdleCap > 0 && s.cfg.Generation.RuntimeIdleCaps && s.stage == stageProfiling {
		l.mu.Lock()
		t.traceIdle(now, int64(s.cfg.TraceIdleCap))
		l.mu.Unlock()
	}
	switch s.stage {
	case stagePrimers:
		l.finished = l.InFlight() == 0 && t.warmupDone()
		return
	case stageAccelerated:
		spent := l.quota == 0 || s.accelEnd != 0 && now >= s.accelEnd
		l.spent = spent
		if t.Drained() && !spent {
			l.recycle(now)
		}
		// Done when the quota or the time is spent, or when nothing is
		// pending any more (only turns held by joins or barriers).
		l.finished = l.InFlight() == 0 && (spent || !l.anyPending())
		return
	}
	if l.finished {
		return
	}
	l.dropDrainedOrphans()
	deadline := s.deadlineNs()
	if deadline != 0 && now >= deadline {
		l.past = true
	}
	recycle := t.Drained()
	if s.cfg.Generation.RecycleOnRoot && t.rootDone() {
		recycle = true
	}
	if recycle {
		if deadline != 0 && now >= deadline || !l.recycle(now) {
			l.finishIfIdle(now, deadline)
			return
		}
	}
	l.finishIfIdle(now, deadline)
}

// finishIfIdle ends the lane's profiling when nothing of it is in flight
// and nothing is left to send before the deadline.
func (l *Lane) finishIfIdle(now, deadline int64) {
	if l.InFlight() > 0 {
		return
	}
	pending := false
	for _, t := range l.trees() {
		if deadline == 0 {
			pending = pending || !t.Drained()
		} else {
			pending = pending || t.pendingBefore(deadline) || l.s.canShift() && !t.Drained()
		}
	}
	if deadline != 0 && now >= deadline || !pending {
		l.finish()
	}
}

// Trees appends the ids of the lane's live trees (the current one and its
// orphans) to dst.
func (l *Lane) Trees(dst []int64) []int64 {
	for _, t := range l.trees() {
		dst = append(dst, t.id)
	}
	return dst
}

// trees returns the lane's current tree and its orphans.
func (l *Lane) trees() []*Tree {
	if len(l.orphans) == 0 {
		return []*Tree{l.tree}
	}
	return append([]*Tree{l.tree}, l.orphans...)
}

// dropDrainedOrphans removes the orphans with nothing left.
func (l *Lane) dropDrainedOrphans() {
	kept := l.orphans[:0]
	for _, o := range l.orphans {
		if o.Drained() {
			l.mu.Lock()
			l.done.Add(&o.stats)
			l.mu.Unlock()
			continue
		}
		kept = append(kept, o)
	}
	l.orphans = kept
}

// finish ends the lane's profiling: what its trees never sent is cut.
func (l *Lane) finish() {
	if l.finished {
		return
	}
	l.finished = true
	l.mu.Lock()
	for _, t := range l.trees() {
		t.stats.Cut += t.countCut()
		t.paused = true
	}
	l.mu.Unlock()
	l.s.mu.Lock()
	l.s.stats.LanesDone++
	l.s.mu.Unlock()
}

// recycle replaces the lane's tree with a new one from the recycle
// source, its root due at now; false when the source has nothing. A tree
// with children still running becomes an orphan of the lane.
func (l *Lane) recycle(now int64) bool {
	s := l.s
	s.mu.Lock()
	old := l.tree
	s.live[old.plan.Trace]--
	s.stats.Completed++
	p, pass := s.recycle.next(l.idx, l.recycled, old.plan, func(p *Plan) int { return s.live[p.Trace] }, s.initialLanes)
	if p == nil {
		s.mu.Unlock()
		return false
	}
	if pass < 0 {
		pass = s.passes[p.TraceID]
		s.passes[p.TraceID] = pass + 1
	}
	s.stats.Recycles++
	t := s.newTreeLocked(l, p, s.recycledSession(l.idx, l.recycled), pass)
	l.recycled++
	s.mu.Unlock()
	l.mu.Lock()
	if old.Drained() {
		l.done.Add(&old.stats)
	} else {
		l.orphans = append(l.orphans, old)
	}
	l.tree = t
	t.phase = Profiling
	if s.stage == stageAccelerated {
		t.phase, t.accel = Warmup, true
		t.origin, t.hasOrigin = p.Streams[0].Turns[0].Start, finite(p.Streams[0].Turns[0].Start)
	}
	t.barriers = s.cfg.Generation.Barriers
	t.schedule(0, 0, now)
	l.mu.Unlock()
	return true
}

// NextWake returns when the lane next has a send due, false when nothing
// is pending.
func (l *Lane) NextWake() (time.Time, bool) {
	if (l.finished || l.past) && l.tree.phase == Profiling {
		return time.Time{}, false
	}
	s := l.s
	if s.stage == stageAccelerated {
		if l.spent || l.finished {
			return time.Time{}, false
		}
		if s.accelEnd != 0 {
			// Wake at the end of a time-bounded warmup at the latest.
			w, ok := l.earliest()
			if !ok || w >= s.accelEnd {
				return time.Unix(0, s.accelEnd), true
			}
			return time.Unix(0, w), true
		}
	}
	w, ok := l.earliest()
	if ok && w == math.MinInt64 {
		return time.Unix(0, 0), true
	}
	if l.tree.phase != Profiling {
		return time.Unix(0, w), ok
	}
	// In profiling, the lane wakes at the deadline at the latest, to end.
	if d := l.s.deadlineNs(); d != 0 && (!ok || w >= d) {
		return time.Unix(0, d), true
	}
	return time.Unix(0, w), ok
}

// Pending reports whether a turn of the lane waits on a timer. When none
// does, only a completion of the lane's in-flight requests can give it a
// send (a turn that waits on a join or a barrier is released by a
// completion too); the wake-up NextWake then reports, the phase's
// deadline or the end of a time-bounded warmup stage, ends the lane's
// phase only once those requests are done.
func (l *Lane) Pending() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.anyPending()
}

// anyPending reports whether some tree of the lane has a turn pending.
func (l *Lane) anyPending() bool {
	for _, t := range l.trees() {
		if t.heap.Len() > 0 {
			return true
		}
	}
	return false
}

// earliest returns the lane's earliest pending timer (real ns).
func (l *Lane) earliest() (int64, bool) {
	var w int64
	ok := false
	for _, t := range l.trees() {
		if tw, tok := t.nextWake(); tok && (!ok || tw < w) {
			w, ok = tw, true
		}
	}
	return w, ok
}

// PhaseDone reports whether the lane has nothing more to do in the current
// phase: in warmup, every warmup send is sent and finished; in profiling,
// the lane is done.
func (l *Lane) PhaseDone() bool { return l.finished }

// InFlight returns the number of the lane's requests in flight.
func (l *Lane) InFlight() int {
	n := l.tree.inflight
	for _, o := range l.orphans {
		n += o.inflight
	}
	return n
}

func (s *Schedule) deadlineNs() int64 { return s.deadline.Load() }

// GlobalOffset returns the system idle cap's total shift so far (ns); a
// change means every lane's pending timers moved earlier.
func (s *Schedule) GlobalOffset() int64 { return s.global.Load() }

// canShift reports whether a runtime idle cap may still move pending
// timers earlier.
func (s *Schedule) canShift() bool {
	return s.cfg.Generation.RuntimeIdleCaps && (s.cfg.SystemIdleCap > 0 || s.cfg.TraceIdleCap > 0)
}
