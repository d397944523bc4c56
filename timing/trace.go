package timing

import (
	"math"
	"sort"
)

// Trace is one recorded session as planning reads it: the recorded times
// of its top-level requests and subagent entries and, for a generation
// whose Layout is LayoutChains, how each level splits into chains. It is
// timing's own turn model: the caller fills it from its corpus (package
// plan converts a dataset.Trace, computing the chain layouts), so timing
// never reads the corpus model. Times are seconds on the trace's
// timeline.
type Trace struct {
	// ID is the trace's id, the root conversation's id.
	ID string
	// ToolTokens and SystemTokens are the recorded tool-definition and
	// system-prompt sizes of the root conversation.
	ToolTokens, SystemTokens int
	// Requests are the top-level requests in the trace's order.
	Requests []Request
	// Subagents are the top-level subagent entries in the trace's order.
	Subagents []Subagent
	// Chains is the chain layout of Requests (LayoutChains only). Nil is
	// no split: the root keeps every request, in the trace's order.
	Chains *Chains
}

// Request is the recorded timing of one request.
type Request struct {
	// T is the start (NaN when unknown).
	T float64
	// APITime is the recorded server time (NaN when absent).
	APITime float64
	// ThinkTime is the recorded client gap before the request (NaN when
	// absent).
	ThinkTime float64
}

// Subagent is a top-level subagent entry of a Trace.
type Subagent struct {
	// After is the number of top-level requests that precede the entry in
	// the trace's order.
	After int
	// T is the entry's start; Duration its recorded duration (NaN when
	// not recorded).
	T, Duration float64
	// AgentID is the subagent's agent_id.
	AgentID string
	// ToolTokens and SystemTokens are the entry's recorded tool-definition
	// and system-prompt sizes.
	ToolTokens, SystemTokens int
	// Requests are the entry's inner requests in the trace's order.
	Requests []Request
	// NestedEntries counts the subagent entries nested in this one, at any
	// depth, and NestedRequests their requests: no generation replays them
	// (they are counted as dropped, or skipped in v0.2).
	NestedEntries, NestedRequests int
	// Chains is the chain layout of Requests (LayoutChains only). Nil is
	// one chain of every request in start order, which is what the chain
	// detection gives requests without hash ids.
	Chains *Chains
}

// Chains is how the chain layout splits one list of requests (the top
// level, or one subagent entry's): the pinned v1.0 loader's hash-id chains,
// detected by the caller (docs/replay.md, "v1.0 session layout").
type Chains struct {
	// Main holds the indices (into the list) of the main chain's requests
	// in replay order.
	Main []int
	// Workers are the other chains, ordered by their first request.
	Workers []Chain
	// Preamble is set when the layout set the list's first request aside
	// before detection (it rides the main chain).
	Preamble bool
	// Seams counts the continuations the layout spliced back onto their
	// chain.
	Seams int
}

// Chain is one chain of a layout other than the main one.
type Chain struct {
	// Label is the chain's label: "fa:NNN", "aux:NNN", "aux:red:NNN" or
	// "wg:GGG_MMM".
	Label string
	// Reqs are the indices (into the list) of its requests in replay
	// order.
	Reqs []int
	// ToolTokens and SystemTokens are the declared prefix of the chain's
	// first turn: the list's own when the chain starts with the main
	// chain's declared-prefix blocks, else 0.
	ToolTokens, SystemTokens int
}

// subagentRequests returns the number of requests of t's subagent
// entries, nested ones included.
func (t *Trace) subagentRequests() int {
	n := 0
	for i := range t.Subagents {
		n += len(t.Subagents[i].Requests) + t.Subagents[i].NestedRequests
	}
	return n
}

// endOf returns the recorded end of r: T + api_time (T when api_time is
// missing or negative).
func endOf(r *Request) float64 {
	if math.IsNaN(r.APITime) || r.APITime < 0 {
		return r.T
	}
	return r.T + r.APITime
}

// chainEnd is the end the chain layout and the v1.0 joins use for r: its
// start plus its api_time when that is finite and not negative.
func chainEnd(r *Request) float64 {
	d := r.APITime
	if math.IsNaN(d) || math.IsInf(d, 0) || d < 0 {
		d = 0
	}
	return r.T + d
}

// startOrder returns the indices of reqs in start order (equal starts
// keep their order).
func startOrder(reqs []Request) []int {
	idx := make([]int, len(reqs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return reqs[idx[a]].T < reqs[idx[b]].T })
	return idx
}
