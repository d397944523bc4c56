// Package metrics owns everything a run leaves behind about its requests:
// the per-record metrics derived from raw measurements (Compute, following
// reference/aiperf-agentic-spec.md §8.2), the online Collector that streams
// every record to profile_export.jsonl while it keeps compact per-record
// values for exact percentiles, the aggregate exports
// (profile_export_aiperf.json/.csv, timeslices) in aiperf's shapes
// (reference/aiperf-artifact-schemas.md §1–§4), the live progress view, and
// Report, which recomputes the aggregates from an artifact folder.
//
// Invariants:
//   - Every request sent is in exactly one place: profile_export.jsonl
//     (warmup, profiling, errors, cancellations) or
//     context_overflow_export.jsonl, and Accounting adds up.
//   - Aggregates describe the profiling phase, successful records only,
//     with exact percentiles (linear interpolation, as numpy's default).
//   - Files are written to temporary names and renamed; write errors are
//     returned, never swallowed.
//
// The server /metrics scraper lives in metrics/server and the PNG plot in
// metrics/plot.
package metrics
