package timing

import (
	"math"
	"time"
)

// stage is where the schedule is in its phases.
type stage uint8

const (
	// stagePrimers: the warmup sends the start state's primers.
	stagePrimers stage = iota
	// stageAccelerated: the v1.0 cache warmup replays every lane's tree
	// forward with no idle delay and one output token per request.
	stageAccelerated
	// stageProfiling: the measured phase.
	stageProfiling
)

// StartWarmup starts the warmup at now: every lane's primers become due.
// In v1.0 they are spread so that every trajectory reaches its t* at the
// same instant — a primer recorded lead seconds before its lane's t* (at
// most the system idle cap) goes out maxLead − lead after now, maxLead
// being the largest lead of any primer of any lane; a primer without a
// recorded time (a k_i start) has no lead and goes out at once — unless
// BurstPhaseStarts sends them all at once. Earlier generations send every
// primer at once. Call it once, before any lane's first Due.
func (s *Schedule) StartWarmup(now time.Time) {
	n := now.UnixNano()
	spread := s.cfg.Generation.Primers && !s.cfg.BurstPhaseStarts
	lead := func(ss *streamStart) time.Duration {
		d := ss.lead
		if s.cfg.SystemIdleCap > 0 {
			d = min(d, s.cfg.SystemIdleCap)
		}
		return d
	}
	var maxLead time.Duration
	minLead := time.Duration(math.MaxInt64)
	if spread {
		// Over every global lane's start state (each lane's parked streams
		// at this point), so that the shards of a run spread alike.
		for i := range s.starts {
			for j := range s.starts[i].streams {
				if ss := &s.starts[i].streams[j]; ss.prime >= 0 && ss.hasLead {
					maxLead = max(maxLead, lead(ss))
					minLead = min(minLead, lead(ss))
				}
			}
		}
	}
	for _, l := range s.lanes {
		l.mu.Lock()
		if spread {
			l.tree.pushPrimers(n, func(ss *streamStart) time.Duration {
				if !ss.hasLead {
					return 0
				}
				return maxLead - lead(ss)
			})
		} else {
			l.tree.pushPrimers(n, nil)
		}
		l.mu.Unlock()
		l.afterChange(n)
	}
	if minLead <= maxLead {
		s.primerRamp = maxLead - minLead
	}
}

// PrimerRamp returns how long the spread primers take to go out: from the
// first to the last (0 when they go out at once).
func (s *Schedule) PrimerRamp() time.Duration { return s.primerRamp }

// HasAcceleratedWarmup reports whether the warmup has a second stage after
// the primers (v1.0 with WarmupRequestsPerLane or WarmupDuration).
func (s *Schedule) HasAcceleratedWarmup() bool {
	return s.cfg.Generation.Takes.CacheWarmup && (s.cfg.WarmupRequestsPerLane > 0 || s.cfg.WarmupDuration > 0)
}

// StartAcceleratedWarmup starts the v1.0 cache warmup at now, after every
// primer finished: every lane replays its live tree forward — recorded
// delays removed, one output token per request, spawns, joins and replay
// barriers respected, a drained tree recycled at once — until it has
// released WarmupRequestsPerLane more requests (primers not counted), or
// until WarmupDuration has passed. Then the lane releases nothing more; its
// deferred turns are handed to profiling. Call it once, when every lane's
// PhaseDone is true after the primers.
func (s *Schedule) StartAcceleratedWarmup(now time.Time) {
	n := now.UnixNano()
	s.stage = stageAccelerated
	if s.cfg.WarmupDuration > 0 {
		s.accelEnd = n + int64(s.cfg.WarmupDuration)
	}
	for _, l := range s.lanes {
		l.finished, l.spent = false, false
		l.quota = -1
		if s.cfg.WarmupRequestsPerLane > 0 {
			l.quota = s.cfg.WarmupRequestsPerLane
		}
		l.mu.Lock()
		t := l.tree
		t.accel = true
		t.barriers = true
		t.startPhase(Warmup, n, false, 0)
		l.mu.Unlock()
		l.afterChange(n)
	}
}

// handoff turns the lane's tree, at the end of a v1.0 warmup, into the
// start of profiling: every stream with a turn left keeps its next turn,
// due at its distance on the tree's recorded clock after the tree's
// origin (its t*, or its root's first start for a tree begun during the
// warmup; without an origin, the turn's own delay). It returns those
// offsets for the phase-wide alignment, with the waiting ones flagged.
func (t *Tree) handoff() []streamStart {
	var out []streamStart
	add := func(si, k int, waiting bool) {
		st := &t.plan.Streams[si]
		off := st.Turns[k].Delay
		if t.hasOrigin && finite(st.Turns[k].Start) {
			off = secondsDur(st.Turns[k].Start - t.origin)
		}
		out = append(out, streamStart{stream: si, prime: -1, next: k, offset: off, waiting: waiting})
	}
	if len(t.parked) > 0 {
		// Never accelerated: the start state itself.
		for _, ss := range t.parked {
			if t.streams[ss.stream].state == streamDone || ss.next >= len(t.plan.Streams[ss.stream].Turns) {
				continue
			}
			if t.hasOrigin {
				add(ss.stream, ss.next, t.gated(ss.stream, ss.next))
			} else {
				out = append(out, ss)
			}
		}
		return out
	}
	for t.heap.Len() > 0 {
		e := t.heap.pop()
		add(int(e.stream), int(e.turn), false)
	}
	for _, e := range t.held {
		add(int(e.stream), int(e.turn), false)
	}
	t.held = t.held[:0]
	for i := range t.streams {
		if st := &t.streams[i]; st.heldJoin {
			st.heldJoin = false
			add(i, int(st.next), true)
		}
	}
	return out
}

// alignStarts schedules every lane's profiling start: each stream's next
// turn at now + (offset − t0), where t0 is the smallest offset of a
// stream that does not wait, over every lane (per lane with
// BurstPhaseStarts; 0 when a lane started from k_i and had no cache
// warmup), so the run's first request goes out at once and every lane
// keeps its recorded spacing. Called before the stage turns to profiling.
func (s *Schedule) alignStarts(a Alignment, states [][]streamStart) {
	t0 := a.T0
	if a.Anchorless || !a.Has {
		t0 = 0
	}
	for i, l := range s.lanes {
		lt0 := t0
		if s.cfg.BurstPhaseStarts {
			lt0 = time.Duration(math.MaxInt64)
			for _, ss := range states[i] {
				if !ss.waiting {
					lt0 = min(lt0, ss.offset)
				}
			}
			if lt0 == time.Duration(math.MaxInt64) || !l.tree.hasOrigin && s.stage != stageAccelerated {
				lt0 = 0
			}
		}
		t := l.tree
		for j := range states[i] {
			ss := &states[i][j]
			ss.offset = max(0, ss.offset-lt0)
		}
		t.parked = states[i]
		for _, ss := range t.parked {
			st := &t.streams[ss.stream]
			if st.state != streamDone {
				st.state = streamParked
			}
		}
	}
}

// systemIdle applies the system idle cap (v1.0 profiling) at now, when a
// response (or the start of profiling) left nothing in flight anywhere: a
// new idle interval starts at now, and if the earliest pending timer of
// every lane is further away than the cap, every timer moves earlier by
// the excess, so that the next request goes out at most the cap after the
// last response. Turns held by joins or barriers are not timers.
func (s *Schedule) systemIdle(now int64) {
	if !s.systemIdleOn() {
		return
	}
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	if s.inflight.Load() != 0 {
		return
	}
	s.idleStart = now
	s.capIdle(now)
}

// systemIdleHeld re-applies the system idle cap at now after a timer
// fired into a replay barrier with nothing in flight: the fired timer was
// not activity, so the idle interval that began at the last response goes
// on, and the next timer is pulled in to the cap after that response (or
// to now, when the cap has already passed).
func (s *Schedule) systemIdleHeld(now int64) {
	if !s.systemIdleOn() {
		return
	}
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	if s.inflight.Load() != 0 || s.idleStart == 0 {
		return
	}
	s.capIdle(now)
}

func (s *Schedule) systemIdleOn() bool {
	return s.cfg.SystemIdleCap > 0 && s.cfg.Generation.RuntimeIdleCaps && s.stage == stageProfiling
}

// capIdle moves every pending timer earlier so the earliest is due no
// later than the idle interval's start plus the cap (and not before now).
// s.idleMu is held.
func (s *Schedule) capIdle(now int64) {
	g := s.global.Load()
	earliest := int64(math.MaxInt64)
	for _, l := range s.lanes {
		if w := l.wake.Load(); w != math.MaxInt64 {
			earliest = min(earliest, w-g)
		}
	}
	if earliest == math.MaxInt64 {
		return
	}
	if d := s.deadlineNs(); d != 0 && now >= d {
		return
	}
	shift := earliest - max(now, s.idleStart+int64(s.cfg.SystemIdleCap))
	if shift <= 0 {
		return
	}
	s.global.Add(shift)
	s.mu.Lock()
	s.stats.SystemIdleJumps++
	s.stats.SystemIdleSkipped += time.Duration(shift)
	s.mu.Unlock()
}

// publishWake records the lane's earliest pending timer for the system
// idle cap, in a form that later global shifts do not invalidate.
func (l *Lane) publishWake() {
	w := int64(math.MaxInt64)
	for _, t := range l.trees() {
		if tw, ok := t.nextWake(); ok && tw != math.MinInt64 {
			w = min(w, tw+l.s.global.Load())
		}
	}
	l.wake.Store(w)
}
