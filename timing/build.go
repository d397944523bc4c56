package timing

import (
	"math"
	"slices"
	"sort"
	"time"
)

// PlanOptions configure BuildPlan.
type PlanOptions struct {
	// Generation selects the delay rule and how subagents are replayed.
	Generation Generation
	// InterTurnDelayCap caps each v0.2 delay (0 = no cap).
	InterTurnDelayCap time.Duration
	// IdleGapCap is v0.3's trace idle gap cap: start-to-start gaps of the
	// merged request timeline longer than it are shortened to it (0 = no
	// warp). Later generations apply their idle caps at run time instead.
	IdleGapCap time.Duration
}

// joinEpsilon is the tolerance (seconds) of the join comparison: a parent
// turn starting within it before a subagent's end still joins it.
const joinEpsilon = 1e-6

// BuildPlan builds the replay plan of tr, the trace at index in the
// corpus. See the package doc for the rules of each generation.
func BuildPlan(tr *Trace, index int, o PlanOptions) *Plan {
	p := &Plan{Trace: index, TraceID: tr.ID}
	outer := outerIndices(tr)
	g := o.Generation
	layout := g.Layout
	rootIdx, workers := rootLayout(tr, layout)
	if cl := tr.Chains; layout == LayoutChains && cl != nil {
		p.Preamble, p.Seams = cl.Preamble && len(workers) > 0, cl.Seams
	}
	root := Stream{ConvID: tr.ID, Parent: -1, Branch: -1, Kind: SourceMain, reqs: tr.Requests,
		ToolTokens: tr.ToolTokens, SystemTokens: tr.SystemTokens, Turns: make([]Turn, len(rootIdx))}
	if len(workers) > 0 {
		root.reqs = make([]Request, len(rootIdx))
	}
	for k, i := range rootIdx {
		r := &tr.Requests[i]
		if len(workers) > 0 {
			root.reqs[k] = *r
		}
		root.Turns[k] = Turn{Inner: i, OuterIdx: outer[i], Start: r.T, End: endOf(r)}
	}
	p.Streams = []Stream{root}
	var warp *timeWarp
	if !g.Subagents {
		p.SkippedRequests = tr.subagentRequests()
	} else {
		subs := p.addSubagents(tr, layout)
		flat := p.addFlatStreams(tr, outer, workers)
		if g.IdleWarp && o.IdleGapCap > 0 {
			warp = newTimeWarp(p, o.IdleGapCap.Seconds())
		}
		p.addBranches(tr, subs, warp)
		p.addFlatBranches(tr, flat, warp)
		p.spawnOnSend(g)
	}
	for si := range p.Streams {
		p.setDelays(si, warp, o)
	}
	if g.Barriers {
		p.addBarriers()
	}
	return p
}

// addBarriers records the replay barriers of every turn (v1.0). Streams of
// one replay scope — the root alone; the sibling streams of one subagent —
// keep their recorded happens-before order: a turn waits for, from each
// other stream of its scope, the latest turn that had finished by its
// recorded start (started before it and ended at or before it: a touch
// counts, equal starts do not), leaving out any such turn that itself
// finished before another of them started (implied by it). A turn without
// a recorded start gets no barrier and is no one's.
func (p *Plan) addBarriers() {
	scopes := map[string][]int{}
	for i := range p.Streams {
		st := &p.Streams[i]
		key := barrierScope(st)
		scopes[key] = append(scopes[key], i)
	}
	for _, streams := range scopes {
		if len(streams) < 2 {
			continue
		}
		for _, si := range streams {
			for k := range p.Streams[si].Turns {
				p.Streams[si].Turns[k].Preds = p.barrierPreds(streams, si, k)
			}
		}
	}
	p.dropCyclicPreds()
}

// dropCyclicPreds leaves out the barriers that would stall the tree. A
// turn waits for the turn before it in its stream, a stream's first turn
// for its branch's spawn turn, a join turn for the last turn of every
// child of the branches it joins, and a turn for its barriers. When a
// trace's list order disagrees with its recorded times (a chain whose
// requests are not in start order), a barrier can close a cycle of these
// waits, and no turn of the cycle is ever sent. A plan without a cycle
// (every trace whose order agrees with its times, checked once, in linear
// time) keeps every barrier; otherwise the barriers are taken back and
// added again stream by stream, turn by turn, each only when the turn it
// waits for does not already wait for the waiting turn.
func (p *Plan) dropCyclicPreds() {
	g := newWaitGraph(p)
	if g.acyclic() {
		return
	}
	all := make([][]Pred, 0, g.n)
	for si := range p.Streams {
		ts := p.Streams[si].Turns
		for k := range ts {
			all = append(all, ts[k].Preds)
			ts[k].Preds = nil
		}
	}
	for si := range p.Streams {
		ts := p.Streams[si].Turns
		for k := range ts {
			for _, pr := range all[g.id(si, k)] {
				if !g.waitsFor(int(pr.Stream), int(pr.Turn), si, k) {
					ts[k].Preds = append(ts[k].Preds, pr)
				}
			}
		}
	}
}

// waitGraph numbers a plan's turns (id) and walks what each waits for.
type waitGraph struct {
	p     *Plan
	first []int // the id of each stream's turn 0
	n     int
}

func newWaitGraph(p *Plan) *waitGraph {
	g := &waitGraph{p: p, first: make([]int, len(p.Streams))}
	for si := range p.Streams {
		g.first[si] = g.n
		g.n += len(p.Streams[si].Turns)
	}
	return g
}

func (g *waitGraph) id(si, k int) int { return g.first[si] + k }

// deps calls fn with every turn turn k of stream si waits for.
func (g *waitGraph) deps(si, k int, fn func(sj, j int)) {
	st := &g.p.Streams[si]
	if k > 0 {
		fn(si, k-1)
	} else if st.Branch >= 0 {
		b := &g.p.Branches[st.Branch]
		fn(b.Parent, b.SpawnTurn)
	}
	for _, bi := range st.Turns[k].Joins {
		for _, c := range g.p.Branches[bi].Children {
			if n := len(g.p.Streams[c].Turns); n > 0 {
				fn(c, n-1)
			}
		}
	}
	for _, pr := range st.Turns[k].Preds {
		fn(int(pr.Stream), int(pr.Turn))
	}
}

// acyclic reports whether no turn waits, directly or not, for itself
// (Kahn's algorithm over the waits).
func (g *waitGraph) acyclic() bool {
	waiting := make([]int, g.n) // how many turns wait for each turn
	for si := range g.p.Streams {
		for k := range g.p.Streams[si].Turns {
			g.deps(si, k, func(sj, j int) { waiting[g.id(sj, j)]++ })
		}
	}
	var free [][2]int
	for si := range g.p.Streams {
		for k := range g.p.Streams[si].Turns {
			if waiting[g.id(si, k)] == 0 {
				free = append(free, [2]int{si, k})
			}
		}
	}
	seen := 0
	for len(free) > 0 {
		t := free[len(free)-1]
		free = free[:len(free)-1]
		seen++
		g.deps(t[0], t[1], func(sj, j int) {
			if waiting[g.id(sj, j)]--; waiting[g.id(sj, j)] == 0 {
				free = append(free, [2]int{sj, j})
			}
		})
	}
	return seen == g.n
}

// waitsFor reports whether turn a of stream sa waits, directly or not,
// for turn b of stream sb.
func (g *waitGraph) waitsFor(sa, a, sb, b int) bool {
	target := g.id(sb, b)
	seen := make([]bool, g.n)
	stack := [][2]int{{sa, a}}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if g.id(t[0], t[1]) == target {
			return true
		}
		g.deps(t[0], t[1], func(sj, j int) {
			if id := g.id(sj, j); !seen[id] {
				seen[id] = true
				stack = append(stack, [2]int{sj, j})
			}
		})
	}
	return false
}

// barrierPreds computes the replay predecessors of turn k of stream si
// among the streams of its scope.
func (p *Plan) barrierPreds(scope []int, si, k int) []Pred {
	x := &p.Streams[si].Turns[k]
	if !finite(x.Start) {
		return nil
	}
	type cand struct {
		Pred
		start, end float64
	}
	var frontier []cand
	for _, sj := range scope {
		if sj == si || !p.mayWait(si, k, sj) {
			continue
		}
		best, ok := cand{}, false
		for j, c := range p.Streams[sj].Turns {
			if !finite(c.Start) {
				continue
			}
			end := c.End
			if !finite(end) || end < c.Start {
				end = c.Start
			}
			if !(c.Start < x.Start && end <= x.Start) {
				continue
			}
			cc := cand{Pred{int32(sj), int32(j)}, c.Start, end}
			if !ok || cc.end > best.end || cc.end == best.end && cc.start > best.start {
				best, ok = cc, true
			}
		}
		if ok {
			frontier = append(frontier, best)
		}
	}
	var out []Pred
	for i, c := range frontier {
		implied := false
		for j, f := range frontier {
			if i != j && c.end <= f.start && c.start < f.start {
				implied = true
				break
			}
		}
		if !implied {
			out = append(out, c.Pred)
		}
	}
	slices.SortFunc(out, func(a, b Pred) int {
		if a.Stream != b.Stream {
			return int(a.Stream - b.Stream)
		}
		return int(a.Turn - b.Turn)
	})
	return out
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// outerIndices returns, per parent request of tr, its index in the raw
// requests[] list, where subagent entries take their own slots: entry j
// with After = a sits before parent request a.
func outerIndices(tr *Trace) []int {
	out := make([]int, len(tr.Requests))
	j := 0
	for k := range tr.Requests {
		for j < len(tr.Subagents) && tr.Subagents[j].After <= k {
			j++
		}
		out[k] = k + j
	}
	return out
}

// subagent is one top-level subagent entry of a trace as the plan sees it.
type subagent struct {
	entry   int   // index in Trace.Subagents
	outer   int   // index of the entry in the raw requests[] list
	spawn   int   // the preceding parent turn (-1: none, dropped)
	streams []int // its child streams in the plan
	end     float64
}

// addSubagents adds the child streams of every top-level subagent entry
// that a root turn precedes (one per sibling or chain, see
// subagentStreams), and counts the others (and every nested entry, which
// the format does not replay) as dropped.
func (p *Plan) addSubagents(tr *Trace, layout SessionLayout) []subagent {
	var out []subagent
	root := &p.Streams[0]
	for j := range tr.Subagents {
		sa := &tr.Subagents[j]
		if sa.NestedEntries > 0 {
			p.DroppedSubagents += sa.NestedEntries
			p.DroppedRequests += sa.NestedRequests
		}
		s := subagent{entry: j, outer: sa.After + j, end: subagentEnd(sa)}
		s.spawn = spawnTurn(root, s.outer)
		if s.spawn < 0 {
			p.DroppedSubagents++
			p.DroppedRequests += len(sa.Requests)
			continue
		}
		split, seams := subagentStreams(sa, layout)
		p.SubagentSeams += seams
		base := tr.ID + "::sa:" + sa.AgentID
		for _, cs := range split {
			st := Stream{ConvID: base + cs.suffix, Parent: 0, Branch: -1, Depth: 1, Kind: SourceSubagent, AgentID: sa.AgentID,
				Label: cs.label, Subagent: []int{j}, ToolTokens: cs.tool, SystemTokens: cs.system}
			for _, i := range cs.idx {
				r := &sa.Requests[i]
				st.reqs = append(st.reqs, *r)
				st.Turns = append(st.Turns, Turn{Inner: i, OuterIdx: s.outer, Start: r.T, End: endOf(r)})
			}
			s.streams = append(s.streams, len(p.Streams))
			p.Streams = append(p.Streams, st)
		}
		out = append(out, s)
	}
	return out
}

// subagentEnd is when a subagent entry finished: its start plus its
// recorded duration, else the latest end of its inner requests, else its
// start.
func subagentEnd(sa *Subagent) float64 {
	if !math.IsNaN(sa.Duration) {
		return sa.T + sa.Duration
	}
	end, ok := 0.0, false
	for i := range sa.Requests {
		if e := endOf(&sa.Requests[i]); !math.IsNaN(e) && (!ok || e > end) {
			end, ok = e, true
		}
	}
	if ok {
		return end
	}
	return sa.T
}

// splitStreams partitions a subagent's inner requests into sibling
// streams whose requests do not overlap in time: in start order (equal
// starts keep their recorded order), each request goes to the lowest
// stream whose last request ended at or before its start, else to a new
// stream. It returns the request indices of each stream; an entry without
// requests is one empty stream.
func splitStreams(reqs []Request) [][]int {
	order := startOrder(reqs)
	var streams [][]int
	var ends []float64
	for _, i := range order {
		r := &reqs[i]
		e := r.T
		if !math.IsNaN(r.APITime) {
			e += r.APITime
		}
		k := 0
		for k < len(ends) && !(ends[k] <= r.T) {
			k++
		}
		if k == len(ends) {
			streams = append(streams, nil)
			ends = append(ends, e)
		}
		streams[k] = append(streams[k], i)
		ends[k] = e
	}
	if len(streams) == 0 {
		streams = [][]int{nil}
	}
	return streams
}

// addBranches turns the subagents into branches: a SPAWN on the parent
// turn that precedes the entry, and a SPAWN_JOIN on the first later parent
// turn that starts at or after the subagent's end (a "tiered" join; none:
// a background branch). Subagents with the same spawn and join turns share
// one branch, in order of first appearance.
func (p *Plan) addBranches(tr *Trace, subs []subagent, warp *timeWarp) {
	root := &p.Streams[0]
	type key struct{ spawn, join int }
	index := map[key]int{}
	for _, s := range subs {
		join := joinTurn(root, s.outer, warp.at(s.end), warp)
		kk := key{s.spawn, join}
		b, ok := index[kk]
		if !ok {
			b = len(p.Branches)
			index[kk] = b
			p.Branches = append(p.Branches, Branch{ID: tr.ID + ":spawn:" + tr.Subagents[s.entry].AgentID,
				Parent: 0, SpawnTurn: s.spawn, JoinTurn: join, start: tr.Subagents[s.entry].T})
			root.Turns[s.spawn].Spawns = append(root.Turns[s.spawn].Spawns, b)
			if join >= 0 {
				root.Turns[join].Joins = append(root.Turns[join].Joins, b)
			}
		}
		br := &p.Branches[b]
		br.start = min(br.start, tr.Subagents[s.entry].T)
		for _, c := range s.streams {
			p.Streams[c].Branch = b
			br.Children = append(br.Children, c)
		}
	}
}

// spawnOnSend marks, where the generation's children wait their recorded
// offsets, every branch recorded as starting before its spawning request
// ended: it is spawned when that request is sent.
func (p *Plan) spawnOnSend(gen Generation) {
	if !gen.Children {
		return
	}
	for i := range p.Branches {
		b := &p.Branches[i]
		r := &p.Streams[b.Parent].reqs[b.SpawnTurn]
		if !math.IsNaN(r.APITime) && r.APITime > 0 && b.start < r.T+r.APITime {
			b.SpawnOnSend = true
		}
	}
}

// setDelays sets the delay of every turn of stream si.
func (p *Plan) setDelays(si int, warp *timeWarp, o PlanOptions) {
	gen := o.Generation
	st := &p.Streams[si]
	for k := range st.Turns {
		t := &st.Turns[k]
		if warp != nil {
			t.Start = warp.at(st.reqs[k].T)
			t.End = t.Start + (endOf(&st.reqs[k]) - st.reqs[k].T)
		}
		if k == 0 {
			if st.Parent >= 0 && gen.Children {
				// A child's first turn waits its recorded offset from the
				// branch start (or from the spawning turn's send).
				b := &p.Branches[st.Branch]
				from := b.start
				if b.SpawnOnSend {
					from = p.Streams[b.Parent].reqs[b.SpawnTurn].T
				}
				t.Delay = secondsDur(st.reqs[0].T - from)
			}
			continue
		}
		prev := &st.Turns[k-1]
		switch gen.Delay {
		case DelayThinkTime:
			r := &st.reqs[k]
			t.Delay = thinkTimeDelay(r.ThinkTime, r.T, st.reqs[k-1].T, o.InterTurnDelayCap)
		case DelayWarpedStart:
			// The warped start-to-start gap, waited after the previous
			// turn of the stream completes.
			t.Delay = secondsDur(t.Start - prev.Start)
		default:
			// End to start: the recorded client-side gap.
			t.Delay = secondsDur(t.Start - prev.End)
		}
	}
}

// timeWarp shortens every start-to-start gap of a trace's merged request
// timeline (parent requests and every replayed subagent request) that is
// longer than limit to limit, shifting everything after it left. The first
// start keeps its value.
type timeWarp struct {
	limit float64
	gaps  []warpGap
	total float64
}

type warpGap struct {
	a, b  float64 // the starts on either side of the gap
	shift float64 // the shift before the gap
}

func newTimeWarp(p *Plan, limit float64) *timeWarp {
	var starts []float64
	for i := range p.Streams {
		for _, r := range p.Streams[i].reqs {
			if !math.IsNaN(r.T) {
				starts = append(starts, r.T)
			}
		}
	}
	sort.Float64s(starts)
	w := &timeWarp{limit: limit}
	for i := 1; i < len(starts); i++ {
		a, b := starts[i-1], starts[i]
		if b-a > limit {
			w.gaps = append(w.gaps, warpGap{a: a, b: b, shift: w.total})
			w.total += b - a - limit
		}
	}
	return w
}

// at maps t to the warped timeline; a time inside a shortened gap keeps
// its distance from the gap's start up to limit, and is clamped to the
// gap's warped end beyond that. A nil warp is the identity.
func (w *timeWarp) at(t float64) float64 {
	if w == nil || math.IsNaN(t) {
		return t
	}
	for _, g := range w.gaps {
		if t < g.a {
			return t - g.shift
		}
		if t < g.b {
			if t-g.a <= w.limit {
				return t - g.shift
			}
			return g.a - g.shift + w.limit
		}
	}
	return t - w.total
}
