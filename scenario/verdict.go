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

// Coverage is the coverage rule's input for the profiling phase: a phase
// configured for at least MinPhase must have TTFT, ITL or streaming
// content observations through Required of it (the harness's
// _validate_profile_metric_duration_coverage).
type Coverage struct {
	// Required is the preset's CoverageRatio (0: no coverage rule).
	Required float64
	// MinPhase is the shortest configured phase judged (the preset's
	// MinDuration): shorter smoke runs are not.
	MinPhase time.Duration
	// Phase is the configured profiling duration (--benchmark-duration).
	Phase time.Duration
	// TTFT, ITL and Content are how far into the phase the last TTFT
	// observation, the last ITL observation and the last streamed content
	// reached, as fractions of Phase clamped to [0, 1] (CoverageRatio).
	TTFT, ITL, Content float64
}

// Judged reports whether the rule applies: a rule is set and the phase
// is at least MinPhase long.
func (c Coverage) Judged() bool { return c.Required > 0 && c.Phase > 0 && c.Phase >= c.MinPhase }

// Passed reports whether one of the three signals reaches Required (true
// when the rule does not apply).
func (c Coverage) Passed() bool {
	return !c.Judged() || c.TTFT >= c.Required || c.ITL >= c.Required || c.Content >= c.Required
}

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
	// Coverage is the coverage rule's input; it is not judged for a
	// cancelled run.
	Coverage Coverage
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
// the harness's order (compute_submission_outcome): the static ones
// (unsafe_override), then context_overflow_rate_exceeded, run_cancelled,
// then the runtime reason insufficient_profile_metric_coverage, and last
// InferenceX's zero_completed_requests. The overflow rate is
// overflows/responses (0 when there were no responses) and is invalid only
// when strictly above the limit; the coverage rule (Coverage) is not
// judged for a cancelled run.
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
	if cv := in.Coverage; !in.Cancelled && !cv.Passed() {
		add(ReasonInsufficientCoverage, fmt.Sprintf("profiling metric coverage below the required %.1f%% of the %v profiling phase: TTFT %.1f%%, inter-token latency %.1f%%, streaming content %.1f%%; no latency or streaming content observation reached the last %v before the phase's end: check the inference server logs for a crash or stalled requests",
			100*cv.Required, cv.Phase, 100*cv.TTFT, 100*cv.ITL, 100*cv.Content, time.Duration(float64(cv.Phase)*(1-cv.Required)).Round(time.Second)))
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
// fraction of d clamped to [0, 1]: an observation in the grace period
// after the phase counts as 1, one before the start (or none: last is
// zero) as 0, as the harness clamps it.
func CoverageRatio(start, last time.Time, d time.Duration) float64 {
	if d <= 0 || last.IsZero() || !last.After(start) {
		return 0
	}
	return min(1, float64(last.Sub(start))/float64(d))
}
