package timing

import (
	"errors"
	"fmt"
	"github.com/agentperf/agentperf/internal/suggest"
	"strings"
	"time"
)

// Generation is one AgentX generation: the replay semantics InferenceX ran
// during one period. Its fields are the mechanisms; the core reads them
// and never the generation's name, so a new generation is one more entry
// in the table below (plus whatever new mechanism it brings).
// docs/replay.md has the rules of each.
//
// The zero value is no generation: LookupGeneration returns the known
// ones, and the replay core refuses a Config without one.
type Generation struct {
	// Name is the selector value: "v0.2", "v0.3-early", "v0.3", "v1.0".
	Name string
	// Doc says what the generation is, in one line.
	Doc string

	// Subagents: subagent requests are replayed as SPAWN/JOIN branches
	// (false: they are skipped, counted in Plan.SkippedRequests).
	Subagents bool
	// Start is how a lane enters its trace.
	Start StartMode
	// Delay is how the wait before a turn is derived from the recording.
	Delay DelayRule
	// IdleWarp: the trace idle-gap cap warps the recorded timeline when a
	// plan is built (start-to-start gaps over the cap shortened to it).
	IdleWarp bool
	// RuntimeIdleCaps: the system and trace idle caps act at run time,
	// pulling pending timers in (Config.SystemIdleCap, TraceIdleCap).
	RuntimeIdleCaps bool
	// Primers: a snapshot start is primed with one-token requests spread
	// to reach t* together, may be followed by an accelerated cache
	// warmup, and hands every stream's recorded offset over to profiling.
	// Without it the warmup sends each stream's next turn in full and
	// profiling sends it again.
	Primers bool
	// Children: a child stream's first turn waits its recorded offset from
	// the branch start, a subagent recorded as starting before its
	// spawning request ended is spawned when that request is sent, and a
	// join waits for both the joined turn's own timer and the children.
	// Without it children go at +0 after the spawning turn and a joined
	// turn goes once the children are done.
	Children bool
	// Barriers: replay barriers order the streams of one replay scope (the
	// sibling streams or chains of a subagent; the root and its flat
	// chains).
	Barriers bool
	// Layout is how a trace's requests become conversations (the root,
	// flat chains, a subagent's streams; see SessionLayout).
	Layout SessionLayout
	// Recycle is where a lane's next trace comes from.
	Recycle RecycleSource
	// RecycleOnRoot: a lane recycles once its root conversation ends, its
	// children left running as orphans (else once the whole tree ends).
	RecycleOnRoot bool
	// Resession: a snapshot start numbers its sessions anew at profiling.
	Resession bool
	// StreamScope: the hash scope is per conversation and sibling stream,
	// and a child spawned during the run carries the run-wide marker
	// (pass 0, lane 0); else one scope and one marker per tree.
	StreamScope bool
	// WrapNeedsConsent: more lanes than traces (byte-identical prompts on
	// several lanes) needs an explicit allowance or a cache-bust marker.
	WrapNeedsConsent bool

	// LiveAssistant is the period's default for live assistant replies
	// (AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES).
	LiveAssistant bool
	// DefaultTraceIdleGapCap is the trace idle-gap cap when none is set.
	DefaultTraceIdleGapCap time.Duration
	// Takes are the settings that have an effect in this generation.
	Takes Settings
}

// Settings name the optional settings a generation takes.
type Settings struct {
	// InterTurnDelayCap: a per-turn delay cap (think-time delays).
	InterTurnDelayCap bool
	// TraceIdleGapCap: a trace idle-gap cap (a warp or a runtime cap).
	TraceIdleGapCap bool
	// CacheWarmup: the accelerated cache warmup after the primers
	// (requests per lane or a duration), the warmup's own grace period,
	// the system idle cap, burst phase starts and dataset wrap.
	CacheWarmup bool
}

// StartMode is how a lane enters its trace.
type StartMode uint8

const (
	// StartTurn starts at a sampled turn k_i of the root, sent in warmup
	// with its full history.
	StartTurn StartMode = iota + 1
	// StartSnapshot starts at a sampled time t* of the whole tree: every
	// stream live at t* is resumed (falling back to StartTurn on a trace
	// with no usable snapshot).
	StartSnapshot
)

// DelayRule is how the wait before a turn is derived from the recording.
type DelayRule uint8

const (
	// DelayThinkTime: the recorded think time, else the start-to-start
	// difference, capped per turn (Config's InterTurnDelayCap),
	// end-to-start.
	DelayThinkTime DelayRule = iota + 1
	// DelayWarpedStart: the (warped) start-to-start gap, waited after the
	// previous turn of the stream completes.
	DelayWarpedStart
	// DelayEndToStart: the recorded client-side gap from the previous
	// turn's end to this turn's start.
	DelayEndToStart
)

// RecycleSource is where a lane's next trace comes from.
type RecycleSource uint8

const (
	// RecycleUnused: a FIFO of the traces no lane took; the first entry
	// not live elsewhere within a bounded scan, else the head.
	RecycleUnused RecycleSource = iota + 1
	// RecyclePrefilled: a FIFO pre-filled with the whole corpus; entries
	// live up to their cap are requeued.
	RecyclePrefilled
	// RecycleSampler: the next trace of a sequential round-robin sampler.
	RecycleSampler
)

// The generations, oldest first.
var (
	// V02 is AgentX v0.2: parent requests only (subagents skipped),
	// think-time delays capped per turn, end-to-start; start turn k_i per
	// lane; FIFO recycle of the traces no lane took.
	V02 = Generation{Name: "v0.2",
		Doc:   "InferenceX v0.2 (2026-05-17): parent requests only, think-time delays capped at 60 s, start turn k_i, FIFO recycle, live assistant replies",
		Start: StartTurn, Delay: DelayThinkTime, Recycle: RecycleUnused,
		LiveAssistant: true, Takes: Settings{InterTurnDelayCap: true}}
	// V03Early is AgentX v0.3 as first run: V03 with start turns k_i and
	// live assistant replies.
	V03Early = Generation{Name: "v0.3-early",
		Doc:       "InferenceX v0.3 as first run (2026-05-20 to 05-26, the Kimi MI355X LMCache run): session trees, 60 s trace idle-gap warp, start turn k_i, live assistant replies",
		Subagents: true, Start: StartTurn, Delay: DelayWarpedStart, IdleWarp: true,
		Recycle: RecyclePrefilled, RecycleOnRoot: true, Resession: true, StreamScope: true,
		LiveAssistant: true, DefaultTraceIdleGapCap: DefaultV03IdleGapCap, Takes: Settings{TraceIdleGapCap: true}}
	// V03 is AgentX v0.3 at its main-line merge: session trees (subagents
	// replayed with SPAWN/JOIN), delays from a per-trace time warp of the
	// merged request starts; t* snapshot start; FIFO recycle pre-filled
	// with the corpus.
	V03 = Generation{Name: "v0.3",
		Doc:       "InferenceX v0.3 at its main-line merge (2026-05-27 to 06-02): session trees, 60 s trace idle-gap warp, t* snapshot start, pre-canned assistant text",
		Subagents: true, Start: StartSnapshot, Delay: DelayWarpedStart, IdleWarp: true,
		Recycle: RecyclePrefilled, RecycleOnRoot: true, Resession: true, StreamScope: true,
		DefaultTraceIdleGapCap: DefaultV03IdleGapCap, Takes: Settings{TraceIdleGapCap: true}}
	// V10 is AgentX v1.0 (what InferenceX runs today): t* snapshots,
	// one-token primers, per-lane accelerated warmup, end-to-start delays,
	// runtime idle caps, replay barriers, sampler recycle.
	V10 = Generation{Name: "v1.0",
		Doc:       "InferenceX v1.0 and today (aiperf 754356e9): t* snapshots, one-token primers, per-lane cache warmup, end-to-start delays, 10 s system idle cap, replay barriers, sampler recycle",
		Subagents: true, Start: StartSnapshot, Delay: DelayEndToStart, RuntimeIdleCaps: true,
		Primers: true, Children: true, Barriers: true, Layout: LayoutChains, Recycle: RecycleSampler, WrapNeedsConsent: true,
		Takes: Settings{TraceIdleGapCap: true, CacheWarmup: true}}
)

var generations = []Generation{V02, V03Early, V03, V10}

// DefaultGeneration is the generation used when none is selected: the
// one InferenceX runs today.
const DefaultGeneration = "v1.0"

// ErrGeneration is wrapped by LookupGeneration's error.
var ErrGeneration = errors.New("unknown AgentX generation")

// LookupGeneration returns the generation called name ("" is
// DefaultGeneration).
func LookupGeneration(name string) (Generation, error) {
	if name == "" {
		name = DefaultGeneration
	}
	for _, g := range generations {
		if g.Name == name {
			return g, nil
		}
	}
	return Generation{}, fmt.Errorf("%w %q%s; known: %s", ErrGeneration, name, suggest.DidYouMean(name, GenerationNames()), strings.Join(GenerationNames(), ", "))
}

// GenerationNames returns the selector values, oldest first.
func GenerationNames() []string {
	out := make([]string, len(generations))
	for i, g := range generations {
		out[i] = g.Name
	}
	return out
}

// String returns the generation's name.
func (g Generation) String() string {
	if g.Name == "" {
		return "no generation"
	}
	return g.Name
}

// IsZero reports whether g is the zero value (no generation).
func (g Generation) IsZero() bool { return g.Name == "" }
