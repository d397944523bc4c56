// Package scenario owns the rules that make an agentic replay a valid
// AgentX submission: the `inferencex-agentx-mvp` preset with its defaults and
// locks (reference/aiperf-agentic-spec.md §3.1), the cache-bust markers
// (§4), the context-overflow classifier (§6), the failed-request threshold
// (§5) and the final submission verdict (§3.5 coverage, §5, §6).
//
// Everything here is pure: no I/O, no clock, no globals. Environment
// variables are read through an injected getenv, and the caller owns the
// randomness (the run's benchmark id, an auto-filled seed).
//
// Validity in one place. A run is a valid submission unless one of these
// holds, each with its aiperf reason string (in this order, as aiperf's
// compute_submission_outcome lists them):
//
//   - unsafe_override: a preset lock was broken and --unsafe-override let
//     the run go ahead (§3.1);
//   - context_overflow_rate_exceeded: overflows / profiling responses is
//     strictly above AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT (0.01) (§6.2);
//   - run_cancelled: the run was cancelled or aborted, e.g. by
//     --failed-request-threshold or a signal (§5);
//   - insufficient_profile_metric_coverage: the profiling phase was
//     configured for ≥ 900 s and neither TTFT nor ITL observations reach
//     98 % of it (§3.5);
//   - zero_completed_requests: no profiling request completed (InferenceX's
//     post-run gate, §5; not an aiperf reason).
package scenario
