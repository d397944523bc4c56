package scenario

import (
	"fmt"
	"time"
)

// The submission_invalid_reasons values (aiperf's, plus one of InferenceX's
// post-run gate).
const (
	ReasonUnsafeOverride       = "unsafe_override"
	ReasonOverflowRateExceeded = "context_overflow_rate_exceeded"
	ReasonRunCancelled         = "run_cancelled"
	ReasonInsufficientCoverage = "insufficient_profile_metric_coverage"
	ReasonZeroCompleted        = "zero_completed_requests"
)

// Coverage rule constants: a profiling phase configured for at least
// CoverageMinPhase must have TTFT or ITL observations through
// CoverageRequired of it.
const (
	// CoverageMinPhase is the shortest configured profiling phase the
	// coverage rule applies to.
	CoverageMinPhase = 900 * time.Second
	// CoverageRequired is the fraction of the phase that TTFT or ITL
	// observations must reach.
	CoverageRequired = 0.98
)

// JudgeInput is what the verdict depends on.
type JudgeInput struct {
	// StaticReasons are the reasons Preset.Enforce returned (unsafe
	// override).
	StaticReasons []string
	// Cancelled: the run was cancelled or aborted (signal,
	// --failed-request-threshold, fatal error).
	Cancelled bool
	// Interrupted: the cancel was the user's (a signal), not an abort.
	// Aborted is the abort's reason (replay.Result.Aborted) when it was
	// one. The verdict names the cause: a run the user stopped never
	// blames the server.
	Interrupted bool
	Aborted     string
	// Overflows is the number of profiling responses classified as context
	// overflow; Responses is the overflow-rate denominator: every profiling
	// response (successes + errors + overflows; request_count +
	// error_request_count + skipped_context_overflow_count).
	Overflows, Responses int
	// OverflowRateLimit is the largest valid rate, a fraction in [0, 1]
	// (Some(0): no overflow allowed); unset means DefaultOverflowRateLimit.
	// OverflowRateLimitFromEnv reads it from the environment.
	OverflowRateLimit Opt[float64]
	// PhaseDuration is the configured profiling duration
	// (--benchmark-duration). The coverage rule applies when it is
	// ≥ CoverageMinPhase.
	PhaseDuration time.Duration
	// TTFTCoverage and ITLCoverage are how far into the phase the last
	// TTFT / ITL observation reached, as a fraction of PhaseDuration (see
	// CoverageRatio).
	TTFTCoverage, ITLCoverage float64
	// Completed is the number of successful profiling requests.
	Completed int
}

// Verdict is the submission outcome written to the run metadata.
type Verdict struct {
	// Valid is metadata.submission_valid.
	Valid bool
	// Reasons is metadata.submission_invalid_reasons (empty when valid).
	Reasons []string
	// Messages explain each reason, for the log and the exit message.
	Messages []string
}

// Judge decides whether a run is a valid submission. Reasons come in
// aiperf's order: the static ones (unsafe_override), then
// context_overflow_rate_exceeded, run_cancelled,
// insufficient_profile_metric_coverage and zero_completed_requests. The
// overflow rate is overflows/responses (0 when there were no responses) and
// is invalid only when strictly above the limit; coverage needs TTFT or ITL
// observations through ≥ 98 % of a ≥ 900 s phase.
func Judge(in JudgeInput) Verdict {
	var v Verdict
	add := func(reason, msg string) {
		for _, r := range v.Reasons {
			if r == reason {
				return
			}
		}
		v.Reasons = append(v.Reasons, reason)
		v.Messages = append(v.Messages, msg)
	}
	for _, r := range in.StaticReasons {
		switch r {
		case ReasonUnsafeOverride:
			add(r, "--unsafe-override lifted at least one scenario lock")
		default:
			add(r, r)
		}
	}
	limit := DefaultOverflowRateLimit
	if in.OverflowRateLimit.Set {
		limit = in.OverflowRateLimit.V
	}
	if rate := OverflowRate(in.Overflows, in.Responses); rate > limit {
		add(ReasonOverflowRateExceeded, fmt.Sprintf("%d of %d profiling responses were context overflows (%.2f%%), above the %.2f%% limit (%s): the server's context window is smaller than the corpus needs; restart it with a larger per-request window, or use the _256k corpus",
			in.Overflows, in.Responses, 100*rate, 100*limit, EnvOverflowRateLimit))
	}
	cause := in.cancelCause()
	if in.Cancelled {
		add(ReasonRunCancelled, "the run was cancelled before the end of the profiling phase: "+cause)
	}
	if in.PhaseDuration >= CoverageMinPhase && in.TTFTCoverage < CoverageRequired && in.ITLCoverage < CoverageRequired {
		why := "the server stopped answering before the end, check the inference server logs"
		if in.Cancelled {
			why = "the observations stop where the run was cut short (" + cause + ")"
			if in.Interrupted {
				why += ", not because of the server"
			}
		}
		add(ReasonInsufficientCoverage, fmt.Sprintf("TTFT observations reach %.1f%% and ITL observations %.1f%% of the %v profiling phase; one of them must reach %.0f%%: %s",
			100*in.TTFTCoverage, 100*in.ITLCoverage, in.PhaseDuration, 100*CoverageRequired, why))
	}
	if in.Completed == 0 {
		add(ReasonZeroCompleted, "no profiling request completed successfully")
	}
	v.Valid = len(v.Reasons) == 0
	return v
}

// cancelCause says who cut the run short.
func (in *JudgeInput) cancelCause() string {
	switch {
	case in.Aborted != "":
		return "aborted (" + in.Aborted + ")"
	case in.Interrupted:
		return "interrupted by a signal (the user or the job scheduler stopped it)"
	}
	return "cancelled"
}

// OverflowRate is overflows/responses, 0 when responses is 0.
func OverflowRate(overflows, responses int) float64 {
	if responses <= 0 {
		return 0
	}
	return float64(overflows) / float64(responses)
}

// CoverageRatio returns how far into a profiling phase that started at
// start and was configured for d the observation at last reaches, as a
// fraction of d (0 when there was no observation, i.e. last is zero or
// before start, or d ≤ 0).
func CoverageRatio(start, last time.Time, d time.Duration) float64 {
	if d <= 0 || last.IsZero() || !last.After(start) {
		return 0
	}
	return float64(last.Sub(start)) / float64(d)
}
