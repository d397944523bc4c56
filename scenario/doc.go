// Package scenario owns the rules that make an agentic replay a valid
// AgentX submission: the `inferencex-agentx-mvp` preset with its defaults and
// locks, the cache-bust markers, the context-overflow classifier, the
// failed-request threshold and the final submission verdict. The rules are
// described in docs/replay.md ("Cache-bust markers", "The scenario"),
// docs/context-overflow.md and docs/failed-request-threshold.md.
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
//     the run go ahead;
//   - context_overflow_rate_exceeded: overflows / profiling responses is
//     strictly above AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT (0.01);
//   - run_cancelled: the run was cancelled or aborted, e.g. by
//     --failed-request-threshold or a signal;
//   - insufficient_profile_metric_coverage: the profiling phase was
//     configured for ≥ 900 s and neither TTFT nor ITL observations reach
//     98 % of it;
//   - zero_completed_requests: no profiling request completed (InferenceX's
//     post-run gate; not an aiperf reason).
package scenario
