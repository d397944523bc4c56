// Package replay is the agentic replay engine: one goroutine per lane, its
// own streaming HTTP/1.1 client, request bodies, SSE response parsing and
// per-request records. Its public entry point is Run.
//
// Run replays a corpus against an OpenAI-compatible server with the
// AGENTIC_REPLAY semantics of the AgentX generation in Config.Generation
// (each generation's rules: docs/replay.md): each of Config.Concurrency
// lanes drives one session tree at a time (a trace's root conversation and
// the child conversations of its subagents), sends the warmup that brings
// it to its start state, waits for every lane (the warmup barrier), then
// replays the following turns with the generation's delays, recycling
// drained trees until the benchmark duration is reached. The requests are
// described in docs/replay.md ("Requests on the wire"), the records in
// docs/artifacts.md. The schedule itself comes from package timing (the
// plans from package plan); the prompts from package prompttext; the cache-bust
// markers, the context-overflow classifier and the failed-request
// threshold are values the caller gives (Config.CacheBust,
// Config.Classifier, Config.Threshold: the scenario preset's, where
// package run builds the run). Every request ever sent ends up in
// exactly one place — a profiling or warmup record, an error record, a
// context-overflow record or a cancelled record — and is counted once, in
// the run's tally (Config.Progress, metrics.Tally), from which
// Result.Accounting is read and which adds up.
package replay
