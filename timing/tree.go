package timing

import (
	"math"
	"slices"
	"time"
)

// Stream states.
const (
	streamIdle     uint8 = iota // not started: a child not spawned yet
	streamWaiting               // its next turn is pending (heap or held)
	streamInFlight              // a turn is in flight
	streamDone                  // every turn sent and finished, or ended
	streamParked                // primed; its next turn waits for the next phase
)

// streamState is the run-time state of one stream of a tree.
type streamState struct {
	state uint8
	// next is the index of the next turn not yet sent (while in flight:
	// the in-flight turn + 1).
	next int32
	// sent counts the turns of the stream sent in its current session.
	sent int32
	// ended is set when a context overflow ended the conversation.
	ended bool
	// heldJoin is set while the next turn waits for its joins; dueV is
	// then its virtual due time.
	heldJoin bool
	dueV     int64
	// primer is set while the in-flight turn is a start-state primer.
	primer bool
	// session is the stream's session number.
	session int
	// seeded is set on a stream that was live in the start state.
	seeded bool
	// doneThrough counts the stream's leading turns that reached a
	// terminal outcome (or lay before the start state): what the replay
	// barriers of other streams wait for.
	doneThrough int32
}

// branchState tracks the children of one branch.
type branchState struct {
	spawned bool
	// open counts the branch's children that have not finished.
	open int
}

// Tree is one live session tree on a lane: a root conversation and the
// child conversations it spawns. A Tree is owned by one goroutine (its
// lane) and is not safe for concurrent use; the Schedule it belongs to
// holds what is shared between lanes.
//
// Pending turns wait in a min-heap keyed by virtual time: a turn due at
// real time t is stored as t + offset + global, where offset is the tree's
// idle-cap shift and global the schedule's. Raising either offset by d
// makes every pending turn of the tree (or of every tree) due d earlier in
// O(1), keeping their order and spacing.
type Tree struct {
	s    *Schedule
	plan *Plan
	lane int
	// id numbers trees across the run (0-based, in creation order).
	id int64
	// pass is the per-trace recycle pass (the cache-bust marker input).
	pass int
	// phase of the sends released now.
	phase Phase
	// accel removes every delay and caps output at one token (the v1.0
	// accelerated warmup).
	accel bool
	// paused stops releasing turns (the lane finished).
	paused bool

	streams  []streamState
	branches []branchState
	heap     turnHeap
	inflight int
	// offset is the tree's idle-cap shift (ns).
	offset int64
	// idleSince is when the tree last became idle (nothing in flight),
	// real ns; 0 while busy.
	idleSince int64
	// parked are the start-state streams waiting for the next phase;
	// primersLeft counts primers not finished yet.
	parked      []streamStart
	primersLeft int
	// barriers holds turns to the replay barriers once active; held are
	// the turns due but waiting for a predecessor of another stream.
	barriers bool
	held     []entry
	// firedHeld counts the timers that fired into a replay barrier (a
	// change tells the lane to re-check the system idle cap).
	firedHeld uint32
	// origin is the tree's replay clock at the warmup→profiling handoff:
	// its t* (a snapshot), or its root's first recorded start (a tree
	// started during the warmup); hasOrigin is false for a k_i start.
	origin    float64
	hasOrigin bool

	stats TreeStats
}

// TreeStats counts what happened to one tree.
type TreeStats struct {
	// Sent counts requests sent, by phase; ChildSent those of children.
	Sent      [2]int
	ChildSent int
	// BranchesSpawned and ChildrenStarted count spawns that happened.
	BranchesSpawned, ChildrenStarted int
	// BranchesAtStart and ChildrenAtStart count the branches spawned and
	// the child streams under way at the tree's start state (spawned in
	// the recorded past, before the replay began).
	BranchesAtStart, ChildrenAtStart int
	// Cut counts turns never sent because the profiling deadline came
	// first (counted when the lane finishes).
	Cut int
	// Overflows counts conversations ended by a context overflow.
	Overflows int
	// IdleJumps and IdleSkipped are the trace idle cap's shifts.
	IdleJumps   int
	IdleSkipped time.Duration
}

// Add adds b's counts to a's: every field is a count (IdleSkipped a
// duration summed).
func (a *TreeStats) Add(b *TreeStats) {
	a.Sent[0] += b.Sent[0]
	a.Sent[1] += b.Sent[1]
	a.ChildSent += b.ChildSent
	a.BranchesSpawned += b.BranchesSpawned
	a.ChildrenStarted += b.ChildrenStarted
	a.BranchesAtStart += b.BranchesAtStart
	a.ChildrenAtStart += b.ChildrenAtStart
	a.Cut += b.Cut
	a.Overflows += b.Overflows
	a.IdleJumps += b.IdleJumps
	a.IdleSkipped += b.IdleSkipped
}

func newTree(s *Schedule, plan *Plan, lane int, id int64, session, pass int) *Tree {
	t := &Tree{
		s: s, plan: plan, lane: lane, id: id, pass: pass,
		streams:  make([]streamState, len(plan.Streams)),
		branches: make([]branchState, len(plan.Branches)),
	}
	for i := range t.streams {
		t.streams[i].session = session + i
	}
	for i := range plan.Branches {
		t.branches[i].open = len(plan.Branches[i].Children)
	}
	return t
}

// ID returns the tree's id.
func (t *Tree) ID() int64 { return t.id }

// Plan returns the tree's plan.
func (t *Tree) Plan() *Plan { return t.plan }

// virt converts a real time (ns) to the tree's virtual time.
func (t *Tree) virt(real int64) int64 { return real + t.offset + t.s.globalOffset() }

// realOf converts a virtual time back to real time (ns).
func (t *Tree) realOf(v int64) int64 { return v - t.offset - t.s.globalOffset() }

// gated reports whether turn k of stream si waits for a branch that was
// spawned and has children still running. A branch that never spawned in
// this play (its spawning turn came before the start state, or ended the
// conversation) does not gate.
func (t *Tree) gated(si, k int) bool {
	for _, b := range t.plan.Streams[si].Turns[k].Joins {
		if bs := &t.branches[b]; bs.spawned && bs.open > 0 {
			return true
		}
	}
	return false
}

// schedule makes turn k of stream si pending, due at real time due (ns):
// into the heap, or held while it waits for its joins.
func (t *Tree) schedule(si, k int, due int64) {
	st := &t.streams[si]
	st.state = streamWaiting
	st.next = int32(k)
	v := t.virt(due)
	if t.gated(si, k) {
		st.heldJoin, st.dueV = true, v
		return
	}
	t.heap.push(entry{due: v, ref: ref{int32(si), int32(k)}})
}

// delay returns the delay before turn k of stream si in the current mode.
func (t *Tree) delay(si, k int) time.Duration {
	if t.accel {
		return 0
	}
	return t.plan.Streams[si].Turns[k].Delay
}

// nextWake returns when the tree next has a turn due (real ns), false
// when nothing is pending.
func (t *Tree) nextWake() (int64, bool) {
	if t.paused || t.heap.Len() == 0 {
		return 0, false
	}
	e := t.heap.peek()
	if e.due == atOnce {
		return math.MinInt64, true
	}
	return t.realOf(e.due), true
}

// Send is one request the engine must issue.
type Send struct {
	// Lane is the lane index, 0-based.
	Lane int
	// Tree is the tree id, unique in the run.
	Tree int64
	// Plan is the plan of the tree's trace; Trace its index.
	Plan  *Plan
	Trace int
	// Stream is the stream index in Plan.Streams, Turn the turn index.
	Stream, Turn int
	// Parent is the spawning stream, -1 for the root; Depth its depth.
	Parent, Depth int
	// At is when the request was due.
	At time.Time
	// Phase is Warmup or Profiling.
	Phase Phase
	// Session is the session number of the stream's conversation (unique
	// in the run); RootSession that of the tree's root.
	Session, RootSession int
	// NewSession is set on the first send of a conversation's session:
	// the engine mints its correlation id.
	NewSession bool
	// RecyclePass is the per-trace count of trees started before this one
	// (from 0, warmup included): the cache-bust marker input.
	RecyclePass int
	// MaxTokens overrides the recorded output length when > 0 (1 for the
	// v1.0 primers and accelerated warmup).
	MaxTokens int
	// Primer is set on a start-state primer (a warmup send that rebuilds
	// the conversation up to the start state).
	Primer bool
	// Seeded is set on the sends of a stream that was live in the start
	// state (rather than spawned during the run).
	Seeded bool
}

// ID identifies a send within its tree, for Complete.
func (s *Send) ID() SendID { return SendID{Tree: s.Tree, Stream: int32(s.Stream), Turn: int32(s.Turn)} }

// SendID identifies one send.
type SendID struct {
	Tree         int64
	Stream, Turn int32
}

// due releases every pending turn due at or before now (real ns),
// appending its Send to dst. With a deadline, nothing due at or after it
// is released, and nothing at all once now reaches it. admit, when not
// nil, is asked before each release; false leaves the turn pending.
func (t *Tree) due(dst []Send, now, deadline int64, admit func(*Tree, int, int) bool) []Send {
	if t.paused || deadline != 0 && now >= deadline {
		return dst
	}
	for t.heap.Len() > 0 {
		e := t.heap.peek()
		at := now
		if e.due != atOnce {
			at = t.realOf(e.due)
		}
		if at > now || deadline != 0 && at >= deadline {
			break
		}
		if t.barriers && !t.predsDone(int(e.stream), int(e.turn)) {
			// Held until its recorded predecessors in other streams have
			// finished; not a timer any more.
			t.heap.pop()
			t.held = append(t.held, e)
			t.firedHeld++
			continue
		}
		if admit != nil && !admit(t, int(e.stream), int(e.turn)) {
			break
		}
		t.heap.pop()
		dst = append(dst, t.release(int(e.stream), int(e.turn), at))
	}
	return dst
}

// predsDone reports whether every replay predecessor of turn k of stream
// si has finished.
func (t *Tree) predsDone(si, k int) bool {
	for _, p := range t.plan.Streams[si].Turns[k].Preds {
		if t.streams[p.Stream].doneThrough <= p.Turn {
			return false
		}
	}
	return true
}

// releaseHeld makes the barrier-held turns whose predecessors have all
// finished pending again, due at the later of their own time and now, in
// (stream, turn) order.
func (t *Tree) releaseHeld(now int64) {
	if len(t.held) == 0 {
		return
	}
	slices.SortFunc(t.held, func(a, b entry) int {
		if a.stream != b.stream {
			return int(a.stream - b.stream)
		}
		return int(a.turn - b.turn)
	})
	kept := t.held[:0]
	for _, e := range t.held {
		if !t.predsDone(int(e.stream), int(e.turn)) {
			kept = append(kept, e)
			continue
		}
		if v := t.virt(now); e.due != atOnce && e.due < v {
			e.due = v
		}
		t.heap.push(e)
	}
	t.held = kept
}

// release marks turn k of stream si in flight at real time at and returns
// its Send.
func (t *Tree) release(si, k int, at int64) Send {
	st := &t.streams[si]
	ps := &t.plan.Streams[si]
	first := st.sent == 0
	st.state = streamInFlight
	st.primer = t.phase == Warmup && t.isPrimer(si, k)
	st.sent++
	st.next = int32(k + 1)
	t.inflight++
	t.idleSince = 0
	t.stats.Sent[t.phase]++
	if ps.Parent >= 0 {
		t.stats.ChildSent++
	}
	snd := Send{
		Lane: t.lane, Tree: t.id, Plan: t.plan, Trace: t.plan.Trace,
		Stream: si, Turn: k, Parent: ps.Parent, Depth: ps.Depth,
		At: time.Unix(0, at), Phase: t.phase,
		Session: st.session, RootSession: t.streams[0].session,
		NewSession: first, RecyclePass: t.pass, Primer: st.primer, Seeded: st.seeded,
	}
	if t.accel || st.primer && t.s.cfg.Generation.Primers {
		snd.MaxTokens = 1
	}
	if !st.primer {
		for _, b := range ps.Turns[k].Spawns {
			if t.plan.Branches[b].SpawnOnSend {
				t.spawn(b, at)
			}
		}
	}
	return snd
}

// complete records that turn k of stream si finished at now with out, and
// schedules what it unblocks.
func (t *Tree) complete(si, k int, out Outcome, now int64) {
	st := &t.streams[si]
	if st.state != streamInFlight || int(st.next) != k+1 {
		panic("timing: Complete for a turn that is not in flight")
	}
	t.inflight--
	ps := &t.plan.Streams[si]
	st.doneThrough = max(st.doneThrough, int32(k+1))
	defer t.releaseHeld(now)
	if st.primer {
		// A primer rebuilt the conversation up to the start state; what
		// follows is released when the next phase starts.
		st.primer = false
		t.primersLeft--
		switch {
		case out.Overflow:
			st.ended = true
			t.stats.Overflows++
			t.finishStream(si, now)
		case out.Cancelled:
			t.finishStream(si, now)
		default:
			st.state = streamParked
		}
		return
	}
	switch {
	case out.Overflow:
		// Every later turn would be larger still: the conversation ends.
		// Its spawns do not happen (there was no reply to spawn from).
		st.ended = true
		t.stats.Overflows++
		t.finishStream(si, now)
		return
	case out.Cancelled:
		t.finishStream(si, now)
		return
	}
	for _, b := range ps.Turns[k].Spawns {
		if !t.plan.Branches[b].SpawnOnSend {
			t.spawn(b, now)
		}
	}
	if k+1 >= len(ps.Turns) {
		t.finishStream(si, now)
		return
	}
	t.schedule(si, k+1, now+int64(t.delay(si, k+1)))
}

// spawn starts the children of branch b, each due at its first turn's
// offset from now.
func (t *Tree) spawn(b int, now int64) {
	bs := &t.branches[b]
	if bs.spawned {
		return
	}
	bs.spawned = true
	t.stats.BranchesSpawned++
	for _, c := range t.plan.Branches[b].Children {
		if len(t.plan.Streams[c].Turns) == 0 {
			t.streams[c].state = streamDone
			t.childDone(b, now)
			continue
		}
		t.stats.ChildrenStarted++
		t.schedule(c, 0, now+int64(t.delay(c, 0)))
	}
}

// finishStream marks stream si done and releases what waited for it. The
// turns it will never send count as finished for the replay barriers, so a
// conversation ended by an overflow holds nothing up.
func (t *Tree) finishStream(si int, now int64) {
	t.streams[si].state = streamDone
	t.streams[si].doneThrough = int32(len(t.plan.Streams[si].Turns))
	if b := t.plan.Streams[si].Branch; b >= 0 {
		t.childDone(b, now)
	}
}

// childDone counts one finished child of branch b and, when it was the
// last, releases the join turn if it waits for nothing else. In v0.3 a
// waiting join turn goes at once; later generations keep its own due time
// (it goes at the later of the two).
func (t *Tree) childDone(b int, now int64) {
	bs := &t.branches[b]
	bs.open--
	if bs.open > 0 {
		return
	}
	br := &t.plan.Branches[b]
	if br.JoinTurn < 0 {
		return
	}
	st := &t.streams[br.Parent]
	if !st.heldJoin || int(st.next) != br.JoinTurn || t.gated(br.Parent, br.JoinTurn) {
		return
	}
	st.heldJoin = false
	// The turn is due when both its own timer and the join allow: in v1.0
	// the later of the two, in v0.3 at once.
	due := max(st.dueV, t.virt(now))
	if !t.s.cfg.Generation.Children {
		due = t.virt(now)
	}
	t.heap.push(entry{due: due, ref: ref{int32(br.Parent), int32(br.JoinTurn)}})
}

// isPrimer reports whether turn k of stream si is a start-state primer.
func (t *Tree) isPrimer(si, k int) bool {
	for i := range t.parked {
		if t.parked[i].stream == si {
			return t.parked[i].prime == k
		}
	}
	return false
}

// Drained reports whether nothing is in flight and nothing is pending.
func (t *Tree) Drained() bool {
	if t.inflight > 0 || t.heap.Len() > 0 || len(t.parked) > 0 || len(t.held) > 0 {
		return false
	}
	for i := range t.streams {
		if t.streams[i].heldJoin {
			return false
		}
	}
	return true
}

// rootDone reports whether the root conversation sends nothing more.
func (t *Tree) rootDone() bool {
	return t.streams[0].state == streamDone && len(t.parked) == 0
}

// InFlight returns the number of the tree's requests in flight.
func (t *Tree) InFlight() int { return t.inflight }

// pendingBefore reports whether some pending turn is due before limit
// (real ns).
func (t *Tree) pendingBefore(limit int64) bool {
	w, ok := t.nextWake()
	return ok && w < limit
}

// countCut returns the number of the tree's turns that will never be
// sent now that its lane has finished: the rest of every stream that is
// under way, and every turn of children whose branch its parent would
// still have spawned. Children of branches that cannot spawn any more (the
// spawning turn lay before the start state, or ended its conversation)
// were never going to run and are not counted.
func (t *Tree) countCut() int {
	n := 0
	for i := range t.streams {
		st := &t.streams[i]
		ps := &t.plan.Streams[i]
		switch st.state {
		case streamDone:
		case streamIdle:
			if ps.Parent < 0 || ps.Branch < 0 {
				continue
			}
			b := &t.plan.Branches[ps.Branch]
			par := &t.streams[b.Parent]
			if !t.branches[ps.Branch].spawned && par.state != streamDone && par.state != streamIdle && int(par.next) <= b.SpawnTurn+1 {
				if par.state == streamInFlight || int(par.next) <= b.SpawnTurn {
					n += len(ps.Turns)
				}
			}
		default:
			n += len(ps.Turns) - int(st.next)
		}
	}
	return n
}

// atOnce is the due time of a send released as soon as its phase runs
// (its At is the release time).
const atOnce = math.MinInt64 / 2
