package timing

import (
	"math"
	"time"
)

// SourceKind says where a stream's requests come from in the trace.
type SourceKind uint8

// The source kinds, with the source_kind values of the record export.
const (
	// SourceMain is the trace's parent requests (the root conversation).
	SourceMain SourceKind = iota
	// SourceSubagent is the inner requests of a subagent entry.
	SourceSubagent
	// SourceFlat is a top-level chain other than the main one (v1.0's
	// chain layout): requests the recording kept at the top level that
	// belong to another agent.
	SourceFlat
)

// String returns the record export's source_kind value.
func (k SourceKind) String() string {
	switch k {
	case SourceSubagent:
		return "weka_subagent"
	case SourceFlat:
		return "weka_flat"
	}
	return "weka_main"
}

// Plan is the immutable replay plan of one trace: its conversations
// (streams) and the branches that connect them. Streams[0] is the root.
// A Plan is built once per trace and shared by every lane that plays it.
type Plan struct {
	// Trace is the index of the trace in the corpus given to New.
	Trace int
	// TraceID is the trace's id.
	TraceID string
	// Streams are the conversations of the tree, the root first, then the
	// children in the order their branches spawn (siblings in split order).
	Streams []Stream
	// Branches connect a spawning turn to its children and, unless the
	// branch runs in the background, to the turn that joins them.
	Branches []Branch
	// Dropped counts subagent entries (and their requests) that are not
	// replayed because no parent request precedes them.
	DroppedSubagents, DroppedRequests int
	// Skipped counts subagent requests left out by a generation that does
	// not replay subagents (v0.2).
	SkippedRequests int
	// Preamble is set when the chain layout set the trace's first request
	// aside before detection (it rides the root); Seams counts the
	// top-level continuations it spliced back, SubagentSeams those inside
	// subagents.
	Preamble             bool
	Seams, SubagentSeams int
}

// Stream is one conversation of a plan: the root, a child stream of a
// subagent (one per sibling or chain, see SessionLayout), or a flat chain
// of the top level (v1.0).
type Stream struct {
	// ConvID is the conversation id of the records: the trace id for the
	// root, "<trace>::sa:<agent>" for a subagent's (main) stream, with
	// ":s<k>" for the k-th sibling of a split subagent (v0.3) or
	// ":<label>" for its other chains (v1.0), and "<trace>::<label>" for a
	// flat chain.
	ConvID string
	// Parent is the index of the spawning stream, -1 for the root.
	Parent int
	// Branch is the index of the branch that spawns the stream, -1 for
	// the root.
	Branch int
	// Depth is 0 for the root, the parent's depth + 1 for a child.
	Depth int
	// Kind is where the requests come from.
	Kind SourceKind
	// AgentID is the subagent's agent_id ("" for the root and flat
	// chains).
	AgentID string
	// Label is a chain's label (fa:NNN, aux:NNN, aux:red:NNN,
	// wg:GGG_MMM; see Chain), "" for the root, a subagent's main chain
	// and the v0.3 siblings.
	Label string
	// Subagent locates a subagent stream's entry: the path of indices
	// through the trace's subagent entries (one index: only top-level
	// entries are replayed). Nil for the root and flat chains. With
	// Turn.Inner it locates each turn's request in the trace.
	Subagent []int
	// ToolTokens and SystemTokens are the recorded tool-definition and
	// system-prompt sizes of the conversation (the trace's for the root,
	// the subagent entry's for a child, a chain's declared prefix for
	// another chain).
	ToolTokens, SystemTokens int
	// Turns are the stream's turns in order.
	Turns []Turn
	// reqs are the recorded times of the stream's requests in turn order:
	// turn k's request is reqs[k].
	reqs []Request
}

// Turn is one request of a stream and what gates it.
type Turn struct {
	// Inner is the index of the request in its source list: the trace's
	// parent requests for the root and flat chains, the subagent entry's
	// inner requests for a subagent's streams (each holds a subset when
	// the entry is split).
	Inner int
	// OuterIdx is the index of the request's entry in the trace's raw
	// requests[] list, subagent entries included (for a child, the index
	// of its subagent entry).
	OuterIdx int
	// Start is the recorded start in seconds on the trace's timeline
	// (after the v0.3 time warp where that applies); NaN when unknown.
	Start float64
	// End is Start plus the recorded api_time (Start when unknown).
	End float64
	// Delay is how long after the previous turn of the stream completes
	// this turn is due. For the first turn of a child it is the offset
	// from the spawn (see Branch).
	Delay time.Duration
	// Spawns lists the branches whose children this turn spawns: when it
	// completes, or when it is sent for a branch with SpawnOnSend.
	Spawns []int
	// Joins lists the branches whose children must all have finished
	// before this turn is sent.
	Joins []int
	// Preds are the replay barriers of the turn (v1.0): turns of other
	// streams of its replay scope recorded as finished before it started,
	// which must have finished before it is sent.
	Preds []Pred
}

// Pred names one turn of one stream of the same plan.
type Pred struct{ Stream, Turn int32 }

// Branch is a SPAWN of one or more child streams by a turn of a parent
// stream, and the SPAWN_JOIN of a later turn that waits for them.
type Branch struct {
	// ID is "<trace>:spawn:<agent>" of the branch's first subagent, or
	// "<trace>:flatspawn:<n>" of its first flat chain.
	ID string
	// Parent is the spawning stream; SpawnTurn the turn whose completion
	// spawns the children.
	Parent, SpawnTurn int
	// JoinTurn is the turn of Parent that waits for every child; -1 for a
	// background branch, which gates nothing.
	JoinTurn int
	// Children are the stream indices of the branch.
	Children []int
	// SpawnOnSend spawns the children when the spawning turn is sent
	// rather than when it completes (v1.0, for a subagent recorded as
	// starting before the spawning request ended).
	SpawnOnSend bool
	// start is the recorded start of the branch (its first subagent
	// entry's t, unwarped), for the start state.
	start float64
}

// Requests returns the number of requests (turns) of the plan.
func (p *Plan) Requests() int {
	n := 0
	for i := range p.Streams {
		n += len(p.Streams[i].Turns)
	}
	return n
}

// Background reports whether branch b gates nothing.
func (b *Branch) Background() bool { return b.JoinTurn < 0 }

// secondsDur converts a gap in seconds to a Duration, clamped at 0; NaN and
// infinities give 0 and the largest Duration.
func secondsDur(sec float64) time.Duration {
	switch {
	case math.IsNaN(sec) || sec <= 0:
		return 0
	case sec >= float64(math.MaxInt64)/1e9:
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Round(sec * 1e9))
}
