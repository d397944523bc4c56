// Package replay is the agentic replay engine: one goroutine per lane, a
// streaming HTTP client (fasthttp), request bodies, SSE response parsing and
// per-request records. Its public entry point is Run.
//
// Run replays a corpus against an OpenAI-compatible server with the legacy
// AGENTIC_REPLAY semantics (reference/aiperf-agentic-spec.md §3.2): each of
// Config.Concurrency lanes starts a trajectory at a seeded turn k_i, sends
// turn k_i with its full history as warmup, waits for every lane (the
// warmup barrier), then continues at k_i+1 with the recorded inter-turn
// delays, recycling finished traces through a FIFO queue until the benchmark
// duration is reached. The schedule itself comes from package timing; the
// prompts from package dataset/synth; the rules (cache-bust markers,
// context-overflow classification, the failed-request threshold) from
// package scenario. Every request ever sent ends up in exactly one place —
// a profiling or warmup record, an error record, a context-overflow record
// or a cancelled record — and Result.Accounting adds up.
package replay
