// Package timing is the replay core: it decides which turn of which
// conversation each lane sends, and when. It does no I/O, never sleeps and
// never reads the wall clock: every method that needs the time takes it as
// an argument, so a test drives it with a fake clock and gets exact
// schedules. The engine (package replay) drives each Lane from one
// goroutine; what spans lanes is guarded inside the Schedule.
//
// # Plans, streams and branches
//
// BuildPlan turns a trace into an immutable Plan for one AgentX
// Generation. The trace is timing's own turn model (Trace: the recorded
// times of the requests, the subagent entries, the chain layouts); timing
// never reads the corpus model, package plan converts a dataset.Trace into
// it. The generation's Layout (a SessionLayout, the one place it is
// chosen) says how requests become streams. v0.2 and v0.3 keep every
// top-level request in the root; from v0.3 on, every top-level subagent
// entry becomes one child stream per sibling (a subagent whose inner
// requests overlap in time is split first-fit into "<trace>::sa:<agent>:s0",
// ":s1", …). v1.0 splits both levels into hash-id chains (Trace.Chains,
// Subagent.Chains; detected by the caller): the root keeps the main chain,
// every other top-level chain is a flat stream "<trace>::<label>" hung on
// the root like a subagent, and a subagent's chains are its streams
// ("<trace>::sa:<agent>", ":<label>"). A subagent hangs on the parent turn
// that precedes its entry (a SPAWN of that turn) and is joined by the first
// later parent turn that starts at or after the subagent's end (a
// SPAWN_JOIN); with no such turn it runs in the background and gates
// nothing; with no preceding parent turn it is dropped and counted.
// Subagents with the same spawn and join turns share one Branch. v0.2
// replays the parent requests only and counts the subagent requests it
// skips.
//
// Each turn's Delay is how long after the previous turn of its stream
// completes it is due:
//   - v0.2: its recorded think time, else the start difference, capped per
//     turn (60 s in the scenario);
//   - v0.3: the start-to-start gap on the trace's warped timeline, where
//     every gap of the merged parent and subagent starts longer than the
//     trace idle-gap cap keeps only the cap; a child's first turn goes as
//     soon as its spawning turn completes;
//   - v1.0: the recorded client gap, end to start; a child's first turn
//     waits its recorded offset from the branch start.
//
// # Trees and time
//
// A lane holds one Tree at a time: the live state of a plan's streams and
// branches. A turn is pending once its prerequisites are met (the previous
// turn of its stream completed and its delay runs; the children of every
// branch it joins finished). Pending turns wait in a min-heap keyed by
// virtual time: real time plus the tree's idle-cap offset plus the
// schedule's global offset, so an idle cap moves every pending timer of a
// tree (or of all trees) earlier in O(1), keeping order and spacing.
//
// # Start state, phases and recycling
//
// New gives every lane its first tree (corpus order, wrap-filled) and its
// start state: a start turn k_i drawn between the start ratios (v0.2 and
// the early v0.3 runs), or a t* snapshot of the whole tree (v0.3 and
// later) with every stream that has a turn at or after t* live from that
// turn. The warmup sends the start state's primers; StartProfiling starts
// the profiling clock and releases each live stream's next turn. No turn is
// released at or after the deadline.
//
// When a lane's tree drains (in v0.3, as soon as its root is done, the
// remaining children going on as orphans of the lane) the lane starts the
// next tree from its recycle source: v0.2's FIFO of the traces no lane took
// (the ended trace to the tail, the first one not live elsewhere taken),
// v0.3's FIFO pre-filled with the corpus (live entries requeued), v1.0's
// sampler, which each lane walks on its own from a position set by its
// global index. The core numbers sessions per global lane: the initial
// trees densely in lane order, then fixed blocks per lane and recycle, so
// a lane's session numbers, passes and (v1.0) recycled trees depend only
// on the seed and its global index. Config.Shard plays a share of the
// global lanes (i mod Count == Index); a sharded run's shards together
// play exactly the unsharded run's lanes (docs/distributed.md).
//
// docs/replay.md describes every rule and the choices made where the
// reference implementations were ambiguous.
package timing
