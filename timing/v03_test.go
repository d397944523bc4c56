package timing

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// req is a request starting at t (absolute seconds) that took api seconds.
func req(t, api float64) Request {
	return Request{T: t, APITime: api, ThinkTime: nan}
}

// sub is a subagent entry after the first `after` parent requests,
// starting at t and running dur seconds (NaN: not recorded).
func sub(id string, after int, t, dur float64, reqs ...Request) Subagent {
	return Subagent{After: after, T: t, AgentID: id, Duration: dur, Requests: reqs}
}

func traceOf(id string, parents []Request, subs ...Subagent) Trace {
	return Trace{ID: id, Requests: parents, Subagents: subs}
}

// describePlan renders a plan's streams, delays, spawns and joins.
func describePlan(p *Plan) string {
	var b strings.Builder
	for i, st := range p.Streams {
		fmt.Fprintf(&b, "%d %s parent=%d depth=%d:", i, st.ConvID, st.Parent, st.Depth)
		for k, t := range st.Turns {
			fmt.Fprintf(&b, " [%d %gs", k, t.Delay.Seconds())
			if len(t.Spawns) > 0 {
				fmt.Fprintf(&b, " spawn%v", t.Spawns)
			}
			if len(t.Joins) > 0 {
				fmt.Fprintf(&b, " join%v", t.Joins)
			}
			b.WriteString("]")
		}
		b.WriteString("\n")
	}
	for i, br := range p.Branches {
		fmt.Fprintf(&b, "branch %d %s spawn=%d join=%d children=%v\n", i, br.ID, br.SpawnTurn, br.JoinTurn, br.Children)
	}
	return b.String()
}

func checkPlan(t *testing.T, p *Plan, want string) {
	t.Helper()
	want = strings.TrimLeft(want, "\n")
	if d := diffLines(describePlan(p), want); d != "" {
		t.Fatal(d)
	}
}

// warpTrace has start-to-start gaps of 30, 10, 61 and 600 s over the
// merged parent and subagent starts 0, 30, 40, 101, 701.
func warpTrace() Trace {
	return traceOf("W",
		[]Request{req(0, 1), req(30, 1), req(701, 1)},
		sub("a1", 2, 40, 70, req(40, 2), req(101, 2)))
}

// TestV03Warp: the gap of 61 s keeps 60 s, the 600 s one keeps 60 s, the
// 30 s one is untouched; every later start shifts left by what was cut
// before it (the subagent's end too), and each delay is the warped
// start-to-start gap of its own stream. The subagent ends at 110 (109
// warped), after parent turn 1 and before turn 2: spawn on 1, join on 2.
func TestV03Warp(t *testing.T) {
	t.Parallel()
	tr := warpTrace()
	p := BuildPlan(&tr, 0, PlanOptions{Generation: V03, IdleGapCap: 60 * s})
	checkPlan(t, p, `
0 W parent=-1 depth=0: [0 0s] [1 30s spawn[0]] [2 130s join[0]]
1 W::sa:a1 parent=0 depth=1: [0 0s] [1 60s]
branch 0 W:spawn:a1 spawn=1 join=2 children=[1]
`)
	var starts []float64
	for _, st := range p.Streams {
		for _, tn := range st.Turns {
			starts = append(starts, tn.Start)
		}
	}
	if fmt.Sprint(starts) != "[0 30 160 40 100]" {
		t.Errorf("warped starts %v, want [0 30 160 40 100]", starts)
	}
	// No warp without the cap: plain start-to-start gaps.
	raw := BuildPlan(&tr, 0, PlanOptions{Generation: V03})
	if d := raw.Streams[0].Turns[2].Delay; d != 671*s {
		t.Errorf("without the cap the last delay is %v, want 671s", d)
	}
	// A gap of exactly the cap is not shortened.
	exact := traceOf("E", []Request{req(0, 1), req(60, 1), req(180, 1)})
	pe := BuildPlan(&exact, 0, PlanOptions{Generation: V03, IdleGapCap: 60 * s})
	if d1, d2 := pe.Streams[0].Turns[1].Delay, pe.Streams[0].Turns[2].Delay; d1 != 60*s || d2 != 60*s {
		t.Errorf("gaps 60 and 120 s became %v and %v, want 60s and 60s", d1, d2)
	}
}

// v03k is a v0.3 config starting every lane at k_i = 0 (ratios 0), with a
// long deadline.
func v03k(lanes int) Config {
	return Config{Generation: withTurnStart(V03), Lanes: lanes, Duration: 1000 * s}
}

// TestV03Schedule replays warpTrace on one lane: warmup turn 0, turn 1 at
// once when profiling starts, the child's first turn as soon as turn 1
// completes, its second 60 s after its first completes, and parent turn 2
// (due 130 s after turn 1, but joined to the child) the moment the child
// finishes. The root's end recycles the lane at once; the new root's turn
// 1 (30 s after turn 0) would come after the 71 s deadline.
func TestV03Schedule(t *testing.T) {
	t.Parallel()
	tr := warpTrace()
	sc := mustSchedule(t, v03k(1), plansOf(V03, tr))
	log, _ := drive(t, cut(sc, 70*s), t0, constServer(s))
	checkSchedule(t, log, `
L0 W s0.0 @0 warm new#0
L0 W s0.1 @1
L0 W s1.0 @2 new#1
L0 W s1.1 @63
L0 W s0.2 @64
L0 W s0.0 @65 new#4 pass1
`)
	// Cut by the deadline: the new root's turns 1 and 2, and both turns of
	// the child turn 1 would have spawned.
	if st := sc.Stats(); st.Cut != 4 || st.ChildSent != 2 || st.BranchesSpawned != 1 {
		t.Errorf("Stats = %+v, want 4 turns cut, 2 child requests, 1 branch spawned", st)
	}
}

// cut makes the driver stop a schedule after d of profiling by giving it
// that duration (a helper to keep schedules short).
func cut(sc *Schedule, d time.Duration) *Schedule {
	sc.cfg.Duration = d
	return sc
}

// TestJoinWaitsForEveryChild: a multi-child branch (two subagents with the
// same spawn and join turns) gates its join until both finish; a failed
// child request counts as finished; a background branch (the subagent
// outlives every later parent turn) gates nothing.
func TestJoinWaitsForEveryChild(t *testing.T) {
	t.Parallel()
	tr := traceOf("J",
		[]Request{req(0, 1), req(10, 1), req(100, 1), req(110, 1)},
		sub("x", 2, 12, 20, req(12, 1), req(20, 1)),
		sub("y", 2, 13, 50, req(13, 1)),
		sub("bg", 4, 112, 500, req(112, 1), req(120, 1)))
	p := BuildPlan(&tr, 0, PlanOptions{Generation: V03, IdleGapCap: 60 * s})
	checkPlan(t, p, `
0 J parent=-1 depth=0: [0 0s] [1 10s spawn[0]] [2 70s join[0]] [3 10s spawn[1]]
1 J::sa:x parent=0 depth=1: [0 0s] [1 8s]
2 J::sa:y parent=0 depth=1: [0 0s]
3 J::sa:bg parent=0 depth=1: [0 0s] [1 8s]
branch 0 J:spawn:x spawn=1 join=2 children=[1 2]
branch 1 J:spawn:bg spawn=3 join=-1 children=[3]
`)
	srv := func(snd Send) (time.Duration, Outcome) {
		switch {
		case snd.Stream == 2: // y fails after 30 s
			return 30 * s, Outcome{Failed: true}
		}
		return s, Outcome{}
	}
	sc := mustSchedule(t, Config{Generation: withTurnStart(V03), Lanes: 1, Duration: 100 * s}, []*Plan{p})
	log, _ := drive(t, sc, t0, srv)
	// Turn 1 completes at 2 and spawns x and y at once; turn 2 (due 70 s
	// later) joins them, so the parent is suspended: x finishes at 12, y
	// fails at 32, and v0.3 sends the suspended turn 2 at that moment.
	// Turn 3 spawns the background child; the root is then done, so the
	// lane recycles at once while the child runs on as an orphan (its
	// second turn 8 s after its first). Profiling ends at 101.
	checkSchedule(t, log, `
L0 J s0.0 @0 warm new#0
L0 J s0.1 @1
L0 J s1.0 @2 new#1
L0 J s2.0 @2 new#2
L0 J s1.1 @11
L0 J s0.2 @32
L0 J s0.3 @43
L0 J s0.0 @44 new#8 pass1
L0 J s3.0 @44 new#3
L0 J s3.1 @53
L0 J s0.1 @55
L0 J s1.0 @56 new#9 pass1
L0 J s2.0 @56 new#10 pass1
L0 J s1.1 @65
L0 J s0.2 @86
L0 J s0.3 @97
L0 J s0.0 @98 new#12 pass2
L0 J s3.0 @98 new#11 pass1
`)
}

// TestSiblingStreams: a subagent whose inner requests overlap in time is
// split first-fit into sibling streams ":s0", ":s1" (a request goes to the
// lowest stream whose last request ended at or before its start; touching
// is not overlapping), each its own conversation of the same branch.
func TestSiblingStreams(t *testing.T) {
	t.Parallel()
	tr := traceOf("S",
		[]Request{req(0, 1), req(100, 1)},
		sub("a", 1, 10, 20, req(10, 5), req(12, 2), req(15, 1), req(14, 3)))
	p := BuildPlan(&tr, 0, PlanOptions{Generation: V03, IdleGapCap: 60 * s})
	checkPlan(t, p, `
0 S parent=-1 depth=0: [0 0s spawn[0]] [1 75s join[0]]
1 S::sa:a:s0 parent=0 depth=1: [0 0s] [1 5s]
2 S::sa:a:s1 parent=0 depth=1: [0 0s] [1 2s]
branch 0 S:spawn:a spawn=0 join=1 children=[1 2]
`)
	inner := func(st Stream) (out []int) {
		for _, tn := range st.Turns {
			out = append(out, tn.Inner)
		}
		return out
	}
	if a, b := inner(p.Streams[1]), inner(p.Streams[2]); fmt.Sprint(a, b) != "[0 2] [1 3]" {
		t.Errorf("sibling requests %v %v, want [0 2] [1 3]", a, b)
	}
	if oi := p.Streams[2].Turns[1].OuterIdx; oi != 1 {
		t.Errorf("child outer index %d, want 1 (the subagent entry's slot)", oi)
	}
}

// TestAnchorlessSubagentDropped: a subagent before the first parent
// request has nothing to spawn it: it is dropped and counted, and its
// requests do not take part in the time warp.
func TestAnchorlessSubagentDropped(t *testing.T) {
	t.Parallel()
	tr := traceOf("D",
		[]Request{req(200, 1), req(230, 1)},
		sub("early", 0, 0, 5, req(0, 1), req(100, 1)))
	p := BuildPlan(&tr, 0, PlanOptions{Generation: V03, IdleGapCap: 60 * s})
	if len(p.Streams) != 1 || len(p.Branches) != 0 || p.DroppedSubagents != 1 || p.DroppedRequests != 2 {
		t.Fatalf("plan %s dropped %d/%d, want the root alone and 1 subagent (2 requests) dropped", describePlan(p), p.DroppedSubagents, p.DroppedRequests)
	}
	if d := p.Streams[0].Turns[1].Delay; d != 30*s {
		t.Errorf("delay %v, want 30s (the dropped requests add no gap)", d)
	}
}

// TestRecordedSpawnOffset (v1.0): a child's first turn is due its
// recorded offset from the branch start after the spawning turn
// completes; a subagent recorded as starting before the spawning request
// ended is spawned when that request is sent, at its offset from it.
func TestRecordedSpawnOffset(t *testing.T) {
	t.Parallel()
	tr := traceOf("O",
		[]Request{req(0, 2), req(20, 1), req(100, 1)},
		sub("late", 1, 5, 10, req(7, 1)),     // starts 5 s in, after turn 0 ended at 2: first turn +2 s after completion
		sub("early", 2, 21, 100, req(24, 1))) // starts at 21, before turn 1 ended at 21? no: ends at 21 exactly
	p := BuildPlan(&tr, 0, PlanOptions{Generation: V10})
	if p.Branches[0].SpawnOnSend || p.Streams[1].Turns[0].Delay != 2*s {
		t.Errorf("late branch: on-send %v, first delay %v; want on completion, 2s after the branch start", p.Branches[0].SpawnOnSend, p.Streams[1].Turns[0].Delay)
	}
	tr.Requests[1].APITime = 5 // now the second subagent starts while turn 1 runs
	p = BuildPlan(&tr, 0, PlanOptions{Generation: V10})
	if !p.Branches[1].SpawnOnSend || p.Streams[2].Turns[0].Delay != 4*s {
		t.Errorf("overlapping branch: on-send %v, first delay %v; want spawned on send, 4s after the spawning turn's start", p.Branches[1].SpawnOnSend, p.Streams[2].Turns[0].Delay)
	}
	// Turn 0 is the warmup primer: it spawns nothing. Turn 1 (sent at 3)
	// spawns the overlapping branch at once, its child due 4 s later; turn
	// 2 is due its end-to-start gap (100 − 25 = 75 s) after turn 1
	// completes. In the recycled tree, turn 0 completes at 87 and spawns
	// the first branch, whose child is due 2 s later.
	sc := mustSchedule(t, Config{Generation: withTurnStart(V10), Lanes: 1, Duration: 100 * s}, []*Plan{p})
	log, _ := drive(t, sc, t0, constServer(3*s))
	checkSchedule(t, log, `
L0 O s0.0 @0 warm new#0 tok1
L0 O s0.1 @3
L0 O s2.0 @7 new#2
L0 O s0.2 @81
L0 O s0.0 @84 new#3 pass1
L0 O s1.0 @89 new#4 pass1
`)
}

// TestV03RecycleQueue: the queue starts with every usable trace; the
// ended trace goes to the tail; an entry already live on as many lanes as
// started with it (at least one) goes back to the tail; after one pass
// with nothing eligible the lane gets nothing.
func TestV03RecycleQueue(t *testing.T) {
	t.Parallel()
	mk := func(ids ...string) []*Plan {
		var out []*Plan
		for i, id := range ids {
			out = append(out, &Plan{Trace: i, TraceID: id})
		}
		return out
	}
	pl := mk("A", "B", "C")
	A, B, C := pl[0], pl[1], pl[2]
	live := map[*Plan]int{}
	liveOf := func(p *Plan) int { return live[p] }
	names := func(q []*Plan) string {
		var b []string
		for _, p := range q {
			b = append(b, p.TraceID)
		}
		return strings.Join(b, " ")
	}
	f := &fifo{prefilled: true, q: []*Plan{A, B, C}}
	initial := []int{2, 1, 0} // A started on two lanes, B on one
	// B ended: the queue is A B C B; A is live on both its lanes and goes
	// back to the tail; B is next and not live: taken again at once.
	live[A], live[B] = 2, 0
	if got, _ := f.next(0, 0, B, liveOf, initial); got != B || names(f.q) != "C B A" {
		t.Fatalf("took %v, queue %q; want B, queue \"C B A\"", got.TraceID, names(f.q))
	}
	// One of A's two lanes ended: C (cap 1, not live) is the head.
	live[B], live[A] = 1, 1
	if got, _ := f.next(0, 0, A, liveOf, initial); got != C || names(f.q) != "B A A" {
		t.Fatalf("took %v, queue %q; want C, queue \"B A A\"", got.TraceID, names(f.q))
	}
	// Every entry at its cap: one pass, then nothing.
	live[C], live[A] = 1, 2
	if got, _ := f.next(0, 0, B, func(p *Plan) int { return live[p] + btoi(p == B) }, initial); got != nil {
		t.Fatalf("took %v with every entry at its cap, want nothing", got.TraceID)
	}
	if names(f.q) != "B A A B" {
		t.Errorf("queue after a fruitless pass %q, want \"B A A B\"", names(f.q))
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestV03Snapshot: the main-line v0.3 start state is a t* snapshot. With
// both ratios at 0.5, t* is the middle of the tree's recorded span (15 s):
// the parent's next turn is 2 (at 20), which joins the subagent that runs
// across t*; the child's first turn at or after t* is its turn 1. The
// warmup sends that child turn (the waiting root is not primed); profiling
// sends it again as a new session at its offset (0), and the root's turn
// 2 the moment the child finishes.
func TestV03Snapshot(t *testing.T) {
	t.Parallel()
	tr := traceOf("S",
		[]Request{req(0, 1), req(10, 1), req(20, 1), req(30, 1)},
		sub("a", 2, 12, 5, req(12, 1), req(15, 1)))
	p := BuildPlan(&tr, 0, PlanOptions{Generation: V03, IdleGapCap: 60 * s})
	sc := mustSchedule(t, Config{Generation: V03, Lanes: 1, StartMinRatio: 0.5, StartMaxRatio: 0.5, Duration: 20 * s}, []*Plan{p})
	if ts, ok := sc.Lane(0).StartTime(); !ok || ts != 15 || sc.Lane(0).StartTurn() != -1 {
		t.Fatalf("start t* = %v (snapshot %v), turn %d; want t* 15 from a snapshot", ts, ok, sc.Lane(0).StartTurn())
	}
	log, _ := drive(t, sc, t0, constServer(s))
	checkSchedule(t, log, `
L0 S s1.1 @0 warm new#1
L0 S s1.1 @1 new#3
L0 S s0.2 @2 new#2
L0 S s0.3 @13
L0 S s0.0 @14 new#4 pass1
`)
	if st := sc.Stats(); st.Cut != 5 || st.Sent != [2]int{1, 4} {
		t.Errorf("Stats = %+v, want 5 turns cut (the new root's 3, its child's 2) and 1+4 sends", st)
	}
}

// TestSnapshotFallback: t* lies within the span of the tree's recorded
// starts, so some stream always has a turn at or after it and only a
// trace without timestamps has no snapshot; its lane falls back to the
// start turn k_i.
func TestSnapshotFallback(t *testing.T) {
	t.Parallel()
	tr := traceOf("E", []Request{req(nan, 1), req(nan, 1), req(nan, 1)})
	p := BuildPlan(&tr, 0, PlanOptions{Generation: V03})
	sc := mustSchedule(t, Config{Generation: V03, Lanes: 1, StartMinRatio: 0.5, StartMaxRatio: 0.5, Duration: 4 * s}, []*Plan{p})
	if _, ok := sc.Lane(0).StartTime(); ok || sc.Lane(0).StartTurn() != 1 {
		t.Fatalf("no timestamps: snapshot %v, start turn %d; want the k_i fallback at int(0.5·3) = 1", ok, sc.Lane(0).StartTurn())
	}
	log, _ := drive(t, sc, t0, constServer(s))
	checkSchedule(t, log, `
L0 E s0.1 @0 warm new#0
L0 E s0.2 @1
L0 E s0.0 @2 new#2 pass1
L0 E s0.1 @3
L0 E s0.2 @4
`)
}
