// Package slo parses service-level objectives such as
//
//	ttft.p99<=2s,itl.p99<=50ms,errors<=1%
//
// and judges finished runs against them.
//
// An objective is a comma-separated list of terms, each a metric, an
// optional statistic, a comparison and a threshold with its unit:
//
//   - Per-request metrics are the record metrics of the aggregate export
//     (profile_export_aiperf.json: time_to_first_token, inter_token_latency,
//     request_latency, output_token_throughput_per_user, …), or a short
//     name: ttft, ttst, ttfo, itl, tpot, e2el (also e2e, latency). They
//     take a statistic: avg, min, max, std or one of the percentiles
//     p1 p5 p10 p25 p50 p75 p90 p95 p99 the export writes.
//   - Run figures take no statistic: errors (the share of profiling
//     requests that failed, cancelled ones left out), request_throughput,
//     output_token_throughput, input_token_throughput,
//     total_token_throughput.
//   - Comparisons are <=, <, >= and >.
//   - Thresholds of times take a unit (s, ms, us or µs); shares (errors,
//     osl_mismatch_diff_pct) take %; token counts and rates are bare
//     numbers in the export's unit (tokens, tokens/sec, tokens/sec/user).
//
// Evaluation reads the records (profile_export.jsonl) of one or more
// artifact folders, the repeats of one measurement, and pools them:
// percentiles are computed once over every record of every repeat, never
// averaged across repeats, and rates divide the pooled counts by the
// summed benchmark durations.
//
// Goodput is vLLM's: the successful profiling requests that met every
// per-request term (each record's own value against the term's threshold,
// whatever the term's statistic), per second of benchmark. Run figures
// (errors, throughputs) have no per-request meaning and do not enter it.
package slo
