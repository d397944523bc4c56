package timing

import (
	"math"
	"sort"
	"strconv"
)

// SessionLayout says how a trace's requests become conversations: the
// Layout of a Generation, the one place where the choice is made.
type SessionLayout uint8

const (
	// LayoutOverlap keeps every top-level request in the root and splits
	// a subagent's inner requests into sibling streams by time overlap
	// (v0.3's loader).
	LayoutOverlap SessionLayout = iota
	// LayoutChains splits the top level and every subagent into chains by
	// their hash-id prefixes, as the v1.0 loader does (the layouts are
	// detected by the caller: Trace.Chains, Subagent.Chains): the root
	// keeps the main chain, every other top-level chain is a flat stream
	// of the root's tree, and a subagent's chains are its child streams.
	LayoutChains
)

// rootLayout returns the indices (into tr.Requests) of the root's
// requests in turn order and the top-level worker chains. With no worker
// chain the root keeps the trace's order, as the loader does.
func rootLayout(tr *Trace, layout SessionLayout) ([]int, []Chain) {
	if layout == LayoutChains && tr.Chains != nil && len(tr.Chains.Workers) > 0 {
		return tr.Chains.Main, tr.Chains.Workers
	}
	idx := make([]int, len(tr.Requests))
	for i := range idx {
		idx[i] = i
	}
	return idx, nil
}

// childStream is one stream of a subagent entry before it becomes a
// Stream: the indices of its requests and its id suffix.
type childStream struct {
	idx          []int
	suffix       string
	label        string
	tool, system int
}

// subagentStreams splits subagent entry sa's inner requests into streams
// under layout: by time overlap (":s<k>" siblings), or by chains (the
// main chain keeps "<trace>::sa:<agent>", the others ":<label>").
func subagentStreams(sa *Subagent, layout SessionLayout) ([]childStream, int) {
	if layout != LayoutChains {
		split := splitStreams(sa.Requests)
		out := make([]childStream, len(split))
		for k, idx := range split {
			out[k] = childStream{idx: idx, tool: sa.ToolTokens, system: sa.SystemTokens}
			if len(split) > 1 {
				out[k].suffix = ":s" + strconv.Itoa(k)
			}
		}
		return out, 0
	}
	cl := sa.Chains
	if cl == nil {
		return []childStream{{idx: startOrder(sa.Requests), tool: sa.ToolTokens, system: sa.SystemTokens}}, 0
	}
	out := []childStream{{idx: cl.Main, tool: sa.ToolTokens, system: sa.SystemTokens}}
	for _, w := range cl.Workers {
		out = append(out, childStream{idx: w.Reqs, suffix: ":" + w.Label, label: w.Label, tool: w.ToolTokens, system: w.SystemTokens})
	}
	return out, cl.Seams
}

// addFlatStreams adds one stream per top-level worker chain.
func (p *Plan) addFlatStreams(tr *Trace, outer []int, workers []Chain) []int {
	var out []int
	for _, w := range workers {
		st := Stream{ConvID: tr.ID + "::" + w.Label, Parent: 0, Branch: -1, Depth: 1, Kind: SourceFlat, Label: w.Label,
			ToolTokens: w.ToolTokens, SystemTokens: w.SystemTokens}
		for _, i := range w.Reqs {
			r := &tr.Requests[i]
			st.reqs = append(st.reqs, *r)
			st.Turns = append(st.Turns, Turn{Inner: i, OuterIdx: outer[i], Start: r.T, End: endOf(r)})
		}
		out = append(out, len(p.Streams))
		p.Streams = append(p.Streams, st)
	}
	return out
}

// spawnTurn is the root turn that spawns what sits at outer index oi in
// the trace's list: the last root turn (highest position) of an earlier
// entry; -1 for none.
func spawnTurn(root *Stream, oi int) int {
	best := -1
	for k := range root.Turns {
		if root.Turns[k].OuterIdx < oi && k > best {
			best = k
		}
	}
	return best
}

// joinTurn is the root turn that joins what sits at outer index oi and
// ends at end: in list order, the first later root turn whose (warped)
// start is at or after end; -1 for none (a background branch).
func joinTurn(root *Stream, oi int, end float64, warp *timeWarp) int {
	order := make([]int, len(root.Turns))
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(a, b int) bool { return root.Turns[order[a]].OuterIdx < root.Turns[order[b]].OuterIdx })
	for _, k := range order {
		if root.Turns[k].OuterIdx <= oi {
			continue
		}
		if warp.at(root.reqs[k].T)+joinEpsilon >= end {
			return k
		}
	}
	return -1
}

// addFlatBranches hangs the flat streams on the root: each spawns on the
// last root turn before its first request (turn 0 when none: real load
// is never dropped) and is joined by the first later root turn at or
// after its end; streams with the same spawn and join turns share one
// branch "<trace>:flatspawn:<n>", n the first one's chain index.
func (p *Plan) addFlatBranches(tr *Trace, flat []int, warp *timeWarp) {
	root := &p.Streams[0]
	type key struct{ spawn, join int }
	index := map[key]int{}
	for n, si := range flat {
		st := &p.Streams[si]
		first := st.Turns[0].OuterIdx
		spawn := max(spawnTurn(root, first), 0)
		end := math.Inf(-1)
		for k := range st.reqs {
			end = max(end, chainEnd(&st.reqs[k]))
		}
		join := joinTurn(root, first, warp.at(end), warp)
		kk := key{spawn, join}
		b, ok := index[kk]
		if !ok {
			b = len(p.Branches)
			index[kk] = b
			p.Branches = append(p.Branches, Branch{ID: tr.ID + ":flatspawn:" + strconv.Itoa(n), Parent: 0,
				SpawnTurn: spawn, JoinTurn: join, start: st.reqs[0].T})
			root.Turns[spawn].Spawns = append(root.Turns[spawn].Spawns, b)
			if join >= 0 {
				root.Turns[join].Joins = append(root.Turns[join].Joins, b)
			}
		}
		br := &p.Branches[b]
		br.start = min(br.start, st.reqs[0].T)
		st.Branch = b
		br.Children = append(br.Children, si)
	}
}

// barrierScope is the replay scope of stream st: the root and its flat
// streams share the trace's; each subagent's streams have their own.
func barrierScope(st *Stream) string {
	if st.Kind == SourceSubagent {
		return "sa:" + st.AgentID
	}
	return ""
}

// spawnRank is the root turn whose completion (or send) starts stream
// si: -1 for the root.
func (p *Plan) spawnRank(si int) int {
	st := &p.Streams[si]
	if st.Branch < 0 {
		return -1
	}
	return p.Branches[st.Branch].SpawnTurn
}

// mayWait reports whether turn k of stream si may wait for a turn of
// stream sj. Every barrier of a trace whose list order agrees with its
// recorded times passes; one that could only be met by a branch the
// waiting turn itself holds back (a root turn waiting for a stream it
// spawns, or a child waiting for a stream spawned after the root turn
// that joins it) is left out instead of stalling the tree.
func (p *Plan) mayWait(si, k, sj int) bool {
	rj := p.spawnRank(sj)
	if p.Streams[si].Branch < 0 {
		return rj < k
	}
	ri := p.spawnRank(si)
	if rj <= ri {
		return true
	}
	join := p.Branches[p.Streams[si].Branch].JoinTurn
	return join < 0 || join > rj
}
