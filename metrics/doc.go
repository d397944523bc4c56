// Package metrics owns everything a run leaves behind about its requests:
// the per-record metrics derived from raw measurements (Compute), the one
// count of a run's requests (Tally: sent, in flight, every finished one by
// bucket and phase, which the engine updates and every reader of a count
// reads), and three sinks a caller combines (Tee), each owning one thing:
//   - RecordWriter streams every record to profile_export.jsonl or
//     context_overflow_export.jsonl (with a reserve file for a full disk);
//   - Aggregator keeps compact per-record values for exact percentiles and
//     writes the aggregate exports (profile_export_aiperf.json/.csv,
//     timeslices) in aiperf's shapes (every file and field:
//     docs/artifacts.md);
//   - LiveWindow keeps the live statistics of a run (Snapshot; the
//     terminal views are package ui).
//
// Given the run's Tally (CollectorOptions.Tally), the sinks count nothing:
// the accounting, the aggregates' counts and the live counts read it.
// Alone, a sink (or the Collector, once for its three) tallies the records
// it is given.
//
// Collector is the three together, with one Finish. Recompute recomputes the
// aggregates from an artifact folder.
//
// The two files it owns that are read back have a schema type with one
// encoder and one decoder, and every reader, here and in the packages
// above, goes through them: RecordLine (AppendRecordLine, the writer's own
// code; DecodeRecordLine, ReadRecords) and AggregateFile (Encode;
// DecodeAggregateFile, ReadAggregateFile). What they accept, aiperf's files
// included: docs/artifacts.md, "Reading the files back".
//
// Invariants:
//   - Every request sent is in exactly one place: profile_export.jsonl
//     (warmup, profiling, errors, cancellations) or
//     context_overflow_export.jsonl, and Accounting adds up.
//   - Aggregates describe the profiling phase, successful records only,
//     with exact percentiles (linear interpolation, as numpy's default).
//   - Files are written to temporary names and renamed; write errors are
//     returned, never swallowed. Problems that do not stop a run
//     (accounting mismatch, no theoretical-hit data, a plot that did not
//     render) are warnings in the JSON and in the summary table.
//   - Recompute(Finish(records)) reproduces Finish's JSON and CSV byte for
//     byte: the JSONL carries everything the aggregates need. A record
//     line and an aggregate JSON agentperf wrote decode and encode back to
//     the same bytes.
//
// Where agentperf adds to aiperf's formats (consumers ignore unknown keys):
//   - profile_export.jsonl metadata: theoretical_hit_blocks and
//     theoretical_total_blocks (so Recompute can recompute
//     theoretical_prefix_cache_hit); recorded_output_tokens (the trace's
//     recorded output length); error.details.category.
//   - metrics: time_per_output_token (= inter_token_latency; InferenceX
//     lists it among the record metrics it needs, and its website reads
//     it before inter_token_latency).
//   - profile_export_aiperf.json: cancelled_request_count (cancelled
//     requests are neither successes nor errors), metadata.request_accounting,
//     metadata.skipped_subagent_requests, metadata.warnings and
//     metadata.agentperf (exact windows in ns, slice duration, the
//     theoretical-hit definition, computed warnings, caller extras).
//
// Identification: schema_version "1.4" (the SemiAnalysis fork InferenceX
// pins) and aiperf_version = CollectorOptions.Version (AggregatorOptions.Version).
//
// The server /metrics scraper lives in servermetrics and the PNG plot in
// metrics/plot.
package metrics
