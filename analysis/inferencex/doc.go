// Package inferencex computes what is published from finished artifact
// folders: InferenceX's agentic result JSON (the nested v3 schema of
// InferenceX v1.0 and later, and the flat v2 schema of v0.2/v0.3), the
// sweep table of several runs (the columns of the AgentX v0.3 results
// table: TP, concurrency, requests, RPS, output tok/s, GPU-local and
// external prefix-cache hit rates, GPU KV usage over non-idle periods),
// the Pareto plot of throughput per GPU against interactivity, and a
// validator (InferenceX's checks plus agentperf's accounting
// invariants).
//
// It only reads artifacts (profile_export.jsonl,
// profile_export_aiperf.json, server_metrics_export.json, an optional
// inference-server log), written by agentperf or by aiperf; it never
// imports the replay engine. Request counts and rates come from
// metrics.Summarize and the server figures from server.Derive, so the
// sweep table and the run's own summary agree. The result JSON follows
// InferenceX's processor field by field, except where that processor is
// wrong; docs/report-inferencex.md lists every field, its unit and its
// derivation, and names the fields that differ.
package inferencex
