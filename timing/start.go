package timing

import (
	"errors"
	"math"
	"time"
)

// streamStart is where one stream of a lane's initial tree stands at the
// start state.
type streamStart struct {
	stream int
	// prime is the turn sent as a warmup primer with its full history
	// (-1: none).
	prime int
	// next is the first turn released after the warmup.
	next int
	// offset is when next is due after the phase that releases it starts.
	offset time.Duration
	// lead is how long before t* the primer was recorded (v1.0 spread
	// primers); hasLead is false when the primer or t* has no recorded
	// time (a k_i start), and the primer then goes out at once.
	lead    time.Duration
	hasLead bool
	// waiting is set on a root whose next turn joins live children.
	waiting bool
}

// laneStart is the start state of a lane's initial tree.
type laneStart struct {
	plan *Plan
	// startTurn is the legacy k_i of the root (-1 for a snapshot).
	startTurn int
	// snapshot is set when the start is a t* snapshot; tStar is t*
	// (seconds on the trace's timeline).
	snapshot bool
	tStar    float64
	// streams are the live streams.
	streams []streamStart
	// spawned lists the branches spawned before the start state; done the
	// children that finished before it.
	spawned, done []int
	// resession gives every stream a new session (correlation id) when
	// profiling starts (v0.3, whose profiling re-sends the warmup turns as
	// new sessions).
	resession bool
}

func (ls *laneStart) primers() int {
	n := 0
	for _, s := range ls.streams {
		if s.prime >= 0 {
			n++
		}
	}
	return n
}

// errNoUsable is returned by New when no plan can start a lane.
var errNoUsable = errors.New("timing: no usable trace: every trace has at most one parent request, so none can be split into a warmup and a profiling turn; use a corpus with multi-turn traces (check the context-length and dataset-entries selection)")

// usable reports whether plan p can start a lane: its root has at least
// two turns.
func usable(p *Plan) bool { return len(p.Streams) > 0 && len(p.Streams[0].Turns) >= 2 }

// initialStarts computes every lane's start state, in lane order, from
// the usable plans in corpus order (wrap-filled when the lanes outnumber
// them).
func (s *Schedule) initialStarts() ([]laneStart, error) {
	var pool []*Plan
	for _, p := range s.plans {
		if usable(p) {
			pool = append(pool, p)
		}
	}
	s.stats.Traces, s.stats.Usable = len(s.plans), len(pool)
	if len(pool) == 0 {
		return nil, errNoUsable
	}
	out := make([]laneStart, s.cfg.Lanes)
	given := make([]bool, len(s.plans))
	for i := range out {
		p := pool[i%len(pool)]
		if given[p.Trace] && s.cfg.Shard.Owns(i) {
			s.stats.WrapFilled++
		}
		given[p.Trace] = true
		out[i] = s.startOf(i, p)
	}
	s.recycle = s.newRecycler(pool, given)
	return out, nil
}

// startOf returns the start state of lane i playing plan p.
func (s *Schedule) startOf(i int, p *Plan) laneStart {
	if s.cfg.Generation.Start == StartSnapshot {
		if ls, ok := s.snapshot(i, p); ok {
			return ls
		}
	}
	return s.legacyStart(i, p)
}

// legacyStart is the k_i start state: the root's start turn k_i is the
// primer and k_i+1 is due as soon as profiling starts.
func (s *Schedule) legacyStart(lane int, p *Plan) laneStart {
	root := &p.Streams[0]
	k := SampleStartTurn(s.cfg.Seed, p.TraceID, lane, len(root.Turns), s.cfg.StartMinRatio, s.cfg.StartMaxRatio)
	ls := laneStart{plan: p, startTurn: k}
	ls.streams = append(ls.streams, streamStart{stream: 0, prime: k, next: k + 1})
	return ls
}

// snapshot is the t* start state of lane i playing plan p: t* is drawn
// between the start ratios of the span of every recorded turn start of the
// tree, and every stream with a turn at or after t* is live from its first
// such turn, due its recorded distance after t*. False when nothing would
// be live, or every live stream waits for children.
func (s *Schedule) snapshot(lane int, p *Plan) (laneStart, bool) {
	lo, hi, ok := treeSpan(p)
	if !ok {
		return laneStart{}, false
	}
	d := hi - lo
	a, b := lo+s.cfg.StartMinRatio*d, lo+s.cfg.StartMaxRatio*d
	tStar := a
	if b > a {
		tStar = uniformFloat(laneRand(s.cfg.Seed, p.TraceID, lane), a, b)
	}
	ls := laneStart{plan: p, startTurn: -1, snapshot: true, tStar: tStar, resession: s.cfg.Generation.Resession}
	root := &p.Streams[0]
	rootNext := firstAtOrAfter(root, tStar)
	joins := map[int]bool{}
	for bi := range p.Branches {
		br := &p.Branches[bi]
		if br.Parent != 0 {
			continue
		}
		spawnTS := root.Turns[br.SpawnTurn].Start
		start := br.start
		if math.IsNaN(start) {
			start = math.Inf(1)
			for _, c := range br.Children {
				if st := &p.Streams[c]; len(st.Turns) > 0 {
					start = min(start, st.Turns[0].Start)
				}
			}
		}
		notSent := math.IsNaN(spawnTS) || tStar < spawnTS || rootNext >= 0 && rootNext <= br.SpawnTurn
		if tStar < start && notSent {
			continue
		}
		ls.spawned = append(ls.spawned, bi)
		live := false
		for _, c := range br.Children {
			st := &p.Streams[c]
			nx := firstAtOrAfter(st, tStar)
			if nx < 0 {
				ls.done = append(ls.done, c)
				continue
			}
			live = true
			ls.streams = append(ls.streams, s.stateAt(c, st, nx, tStar, false))
		}
		if live && br.JoinTurn >= 0 {
			joins[br.JoinTurn] = true
		}
	}
	if rootNext >= 0 {
		rs := s.stateAt(0, root, rootNext, tStar, joins[rootNext])
		ls.streams = append([]streamStart{rs}, ls.streams...)
	}
	waiting := 0
	for _, st := range ls.streams {
		if st.waiting {
			waiting++
		}
	}
	if len(ls.streams) == 0 || waiting == len(ls.streams) {
		return laneStart{}, false
	}
	return ls, true
}

// stateAt is the start state of stream si whose first turn at or after t*
// is next.
func (s *Schedule) stateAt(si int, st *Stream, next int, tStar float64, waiting bool) streamStart {
	ss := streamStart{stream: si, next: next, offset: secondsDur(st.Turns[next].Start - tStar), waiting: waiting, prime: -1}
	if !s.cfg.Generation.Primers {
		// The warmup sends the first turn at or after t*, and profiling
		// sends it again; a waiting root is not primed.
		if !waiting {
			ss.prime = next
		}
	} else if next >= 1 {
		// The primer is the turn before, rebuilding the history up to t*.
		ss.prime = next - 1
		ss.lead = secondsDur(tStar - st.Turns[next-1].Start)
		ss.hasLead = finite(st.Turns[next-1].Start) && finite(tStar)
	}
	return ss
}

// treeSpan returns the earliest and latest recorded turn start over every
// stream of p, false when none is known.
func treeSpan(p *Plan) (lo, hi float64, ok bool) {
	for i := range p.Streams {
		for _, t := range p.Streams[i].Turns {
			if math.IsNaN(t.Start) || math.IsInf(t.Start, 0) {
				continue
			}
			if !ok {
				lo, hi, ok = t.Start, t.Start, true
				continue
			}
			lo, hi = min(lo, t.Start), max(hi, t.Start)
		}
	}
	return lo, hi, ok
}

// firstAtOrAfter returns the index of the first turn of st recorded at or
// after t, -1 when none.
func firstAtOrAfter(st *Stream, t float64) int {
	for k := range st.Turns {
		if st.Turns[k].Start >= t {
			return k
		}
	}
	return -1
}

// applyStart puts the tree in its start state: primers pending at once
// (warmup), the other live streams parked until their phase starts.
func (t *Tree) applyStart(ls *laneStart) {
	t.phase = Warmup
	for _, b := range ls.spawned {
		t.branches[b].spawned = true
	}
	t.stats.BranchesAtStart += len(ls.spawned)
	for _, c := range ls.done {
		t.streams[c].state = streamDone
		if b := t.plan.Streams[c].Branch; b >= 0 {
			t.branches[b].open--
		}
	}
	// A branch spawned before the start whose children all finished does
	// not gate its join.
	t.parked = append(t.parked[:0], ls.streams...)
	for _, ss := range ls.streams {
		if t.plan.Streams[ss.stream].Parent >= 0 {
			t.stats.ChildrenAtStart++
		}
		st := &t.streams[ss.stream]
		st.next = int32(ss.next)
		st.state = streamParked
		st.seeded = true
		if ss.prime >= 0 {
			st.next = int32(ss.prime)
			st.state = streamWaiting
			t.primersLeft++
		}
	}
	// Every turn before the start state counts as done for the replay
	// barriers (a stream's first turn at or after t*; the root's history
	// up to k_i).
	for i := range t.streams {
		st := &t.plan.Streams[i]
		switch {
		case ls.snapshot:
			if k := firstAtOrAfter(st, ls.tStar); k >= 0 {
				t.streams[i].doneThrough = int32(k)
			} else {
				t.streams[i].doneThrough = int32(len(st.Turns))
			}
		case i == 0 && ls.startTurn >= 0:
			t.streams[i].doneThrough = int32(ls.startTurn)
		}
	}
}

// pushPrimers makes the tree's primers pending: each due at now plus its
// spread delay (delay returns it for a stream start; nil: at once).
func (t *Tree) pushPrimers(now int64, delay func(ss *streamStart) time.Duration) {
	for i := range t.parked {
		ss := &t.parked[i]
		if ss.prime < 0 {
			continue
		}
		due := now
		if delay != nil {
			due += int64(delay(ss))
		}
		t.heap.push(entry{due: t.virt(due), ref: ref{int32(ss.stream), int32(ss.prime)}})
	}
}

// warmupDone reports whether the tree's warmup sends are all finished.
func (t *Tree) warmupDone() bool { return t.primersLeft == 0 }

// startPhase switches the tree to phase ph at now and releases what was
// parked for it: every live stream's next turn, due at its offset.
func (t *Tree) startPhase(ph Phase, now int64, resession bool, base int) {
	t.phase = ph
	if resession {
		for i := range t.streams {
			t.streams[i].session = base + i
			t.streams[i].sent = 0
		}
	}
	parked := t.parked
	t.parked = nil
	for _, ss := range parked {
		st := &t.streams[ss.stream]
		if st.state == streamDone {
			continue
		}
		if ss.next >= len(t.plan.Streams[ss.stream].Turns) {
			t.finishStream(ss.stream, now)
			continue
		}
		off := ss.offset
		if t.accel {
			off = 0 // the accelerated warmup ignores recorded offsets
		}
		t.schedule(ss.stream, ss.next, now+int64(off))
	}
}

// traceIdle applies the trace idle cap: once the tree has been idle for
// limit (ns), its pending timers move earlier so the next is due limit
// after the tree became idle.
func (t *Tree) traceIdle(now, limit int64) {
	if t.idleSince == 0 {
		t.idleSince = now
	}
	w, ok := t.nextWake()
	if !ok || w == math.MinInt64 {
		return
	}
	if d := w - (t.idleSince + limit); d > 0 {
		t.offset += d
		t.stats.IdleJumps++
		t.stats.IdleSkipped += time.Duration(d)
	}
}
