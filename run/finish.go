package run

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/promexport"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/engines"
	"github.com/agentperf/agentperf/server/gputelemetry"
	"github.com/agentperf/agentperf/server/servermetrics"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// Collector is what Finish needs of the run's record collector
// (*metrics.Collector, the replay.Config.Sink).
type Collector interface {
	// Flush writes the records buffered so far to the record stream
	// (profile_export.jsonl.partial); its error is also Err's.
	Flush() error
	// Err is the first write error of the run, nil while every write
	// succeeded.
	Err() error
	// Finish closes the record streams and writes the aggregates.
	Finish(info metrics.RunInfo) (*metrics.Summary, error)
	// EachRequest calls fn with every request recorded that is not a
	// context overflow, in order: the figures' input.
	EachRequest(fn func(metrics.RequestRow))
}

// Input is what Finish needs besides the replay.Result: the run's
// settings as the caller gave them to replay.Run, and where the
// artifacts go.
type Input struct {
	// Dir is the artifact folder: the collector's.
	Dir string
	// Collector received the run's records (required).
	Collector Collector
	// Scraper is the server-metrics scraper of the run, its final scrape
	// done (nil: no server metrics).
	Scraper *servermetrics.Scraper
	// GPU is the GPU exporter collector of the run, its final scrape done
	// (nil: no GPU telemetry). Finish writes its export
	// (gputelemetry.FileName) and its figures into the aggregates'
	// metadata.agentperf.gpu_telemetry.
	GPU *gputelemetry.Collector

	// Scenario is the scenario preset's name; "" means none. Submission
	// validity is a scenario's notion: without one, the verdict's
	// findings are warnings, except a run that completed no request,
	// which fails.
	Scenario string
	// StaticReasons are the reasons the run is already not a valid
	// submission (scenario.Preset.Enforce: unsafe_override).
	StaticReasons []string
	// Duration is the configured profiling duration
	// (replay.Config.BenchmarkDuration), the coverage rule's phase.
	Duration time.Duration
	// Coverage is the coverage rule: Required and MinPhase
	// (Spec.Coverage); the zero value judges none.
	Coverage scenario.Coverage
	// Concurrency is the number of lanes (replay.Config.Concurrency).
	Concurrency int
	// OverflowRateLimit is the largest valid context-overflow rate, a
	// fraction in [0, 1]; unset is scenario.DefaultOverflowRateLimit,
	// Some(0) allows none.
	OverflowRateLimit scenario.Opt[float64]
	// OverflowAdvice, when set, is appended to an overflow-rate finding:
	// what the caller's user can do about overflows (a CLI names its
	// flags).
	OverflowAdvice string
	// MaxContextLength is the selection's --max-context-length (0: none).
	// When it is set and requests still overflowed, OverflowAdvice (which
	// would point back at it) gives way to advice about the tokens the
	// chat template and the server's tokenizer add, with a margin from the
	// run's measured overhead (replay.Result.PromptOverheadMax).
	MaxContextLength int

	// InputConfig is the aggregate's input_config: the resolved settings,
	// redacted by the caller.
	InputConfig map[string]any
	// Corpus is the corpus identity (dataset.Corpus.Identity; zero for
	// traces built in memory), metadata.dataset.
	Corpus dataset.Identity
	// PublicDataset says the corpus was named by a published alias
	// (dataset.Source.PublicDataset, not a synthetic one): its source_type
	// is aiperf's "public_dataset".
	PublicDataset bool
	// Synth is the run's synthesizer (replay.Config.Synth, required).
	Synth *prompttext.Synthesizer
	// Tokenizer is where the synthesizer's tokenizer came from.
	Tokenizer tokenizer.Origin

	// FailedRequestThreshold is the run's --failed-request-threshold (0 =
	// off). A run that was not aborted fails (ProblemThresholdExceeded)
	// when, at its end, its profiling error rate (failed / (successful +
	// failed), the aggregate's request_error_rate; overflows and cancelled
	// requests left out) is above it: the rule InferenceX's post-run check
	// and `agentperf report --check` apply. The rule during the run needs
	// 99.9 % confidence, so a short run can end above the threshold
	// without having been stopped (docs/failed-request-threshold.md). A
	// shard leaves this to its merge, which judges the whole run.
	FailedRequestThreshold float64

	// RequiredServerMetricPrefix, when set, fails a run whose server
	// metrics export holds no metric with this prefix.
	RequiredServerMetricPrefix string
	// Warnings are warnings found before the run (too little free space),
	// written first in metadata.warnings.
	Warnings []string
	// NoPlot leaves metrics_plots.png out.
	NoPlot bool
	// FailOnInvalid makes every reason a run is not a valid submission
	// fail it (Outcome.ExitCode 1), as outside a scenario's pinned rule;
	// see Outcome.ExitCode.
	FailOnInvalid bool
	// Signals, when set, returns how many interrupts (signals) the caller
	// has received so far. Finish reads it before it writes the
	// aggregates and once more at the end: a run interrupted while its
	// artifacts were written is marked interrupted (and exits 130) even
	// though its requests all ended.
	Signals func() int

	// Shard, when set, makes the run one shard of a sharded run: Finish
	// writes its manifest (FileShard, with the run's Result) beside the
	// artifacts, for Merge, and reports the shard in metadata.agentperf.
	Shard *ShardManifest
	// Described stands in for Synth and Tokenizer when Synth is nil: the
	// synthesis and tokenizer descriptions of metadata.agentperf as the
	// shards of a merged run wrote them (a merge has no synthesizer).
	Described *Described
	// Extra is added to metadata.agentperf (a merge's report of its
	// shards).
	Extra map[string]any
	// Outputs are the caller's outputs (artifacts, exporters), run after
	// the built-in ones of their stage (Output).
	Outputs []Output
}

// Described is what a run says about its synthesizer and tokenizer
// (metadata.agentperf.synthesis and .tokenizer).
type Described struct {
	Synthesis any `json:"synthesis"`
	Tokenizer any `json:"tokenizer"`
}

// Outcome is how the run ended and what was written.
type Outcome struct {
	// Summary is the aggregates as written (nil only when the collector
	// had been finished before).
	Summary *metrics.Summary
	// Verdict is the scenario verdict (computed also without a scenario).
	Verdict scenario.Verdict
	// Derived are the prefix-cache and KV figures derived from the server
	// metrics (nil without a scraper, or when its export failed or came
	// after a failed write).
	Derived *servermetrics.Derived
	// GPU is what the GPUs did over the profiling window, with the
	// efficiency of the run's work (nil without GPU telemetry).
	GPU *gputelemetry.Result
	// Warnings are the warnings found while finishing, in
	// metadata.warnings after Input.Warnings.
	Warnings []string
	// LateWarnings are warnings found after the aggregates were written
	// (after a failed write during the run, or while writing report.html):
	// they are not in metadata.warnings.
	LateWarnings []string
	// Problems are what makes the run fail, in the order found.
	Problems []Problem
	// Interrupted is set when the run was cancelled (a signal) rather than
	// aborted or ended, or a signal came while its artifacts were written:
	// a CLI exits 130.
	Interrupted bool

	// Result is what the engine returned (set by Run).
	Result *replay.Result
	// Dir is the artifact folder (set by Run).
	Dir string
	// Tokenizer is where the run's tokenizer came from (set by Run).
	Tokenizer tokenizer.Origin
	// Metrics is the live Prometheus exporter of Spec.MetricsListen, its
	// endpoint closed, its final state kept (set by Run; nil without it).
	Metrics *promexport.Exporter

	// failOnInvalid is Input.FailOnInvalid.
	failOnInvalid bool
}

// Failed reports whether the run failed: a problem was found (an
// artifact not written, an abort, an invalid submission). Whether the
// run's process fails is ExitCode's rule, which forgives some of them
// under a scenario.
func (o *Outcome) Failed() bool { return len(o.Problems) > 0 }

// The exit codes ExitCode returns (a CLI's process exit status).
const (
	// ExitOK: the run completed and nothing fatal was found.
	ExitOK = 0
	// ExitFailed: a fatal problem (Outcome.Fatal): an abort, a failed
	// write, a missing required metric, or an invalid submission the
	// rule does not forgive. Every artifact that could be written was.
	ExitFailed = 1
	// ExitInterrupted: a signal stopped the run or came while its
	// artifacts were written.
	ExitInterrupted = 130
)

// Fatal reports whether p fails the run's process (ExitFailed).
//
// Every problem is fatal but an invalid submission under a scenario,
// which follows the pinned aiperf: a run that completed exits 0 with
// submission_valid false when its only reasons are unsafe_override (a
// lock lifted by --unsafe-override), context_overflow_rate_exceeded or
// run_cancelled (the cancel has its own code); aiperf fails the process
// only for its fatal errors, which among the validity reasons are
// insufficient_profile_metric_coverage (its ProfileMetricCoverageError)
// and a run without results (zero_completed_requests). With
// Input.FailOnInvalid every reason is fatal.
func (o *Outcome) Fatal(p Problem) bool {
	if p.Kind != ProblemInvalid || o.failOnInvalid {
		return true
	}
	switch p.Reason {
	case scenario.ReasonUnsafeOverride, scenario.ReasonOverflowRateExceeded, scenario.ReasonRunCancelled:
		return false
	}
	return true
}

// ExitCode is the exit status of the run's process: ExitInterrupted for
// an interrupted run, else ExitFailed when a problem is Fatal, else
// ExitOK. docs/artifacts.md has the table.
func (o *Outcome) ExitCode() int {
	if o.Interrupted {
		return ExitInterrupted
	}
	for _, p := range o.Problems {
		if o.Fatal(p) {
			return ExitFailed
		}
	}
	return ExitOK
}

// ProblemKind says what a Problem is about.
type ProblemKind int

// The problem kinds.
const (
	// ProblemWrite: an artifact could not be written (Problem.Err).
	ProblemWrite ProblemKind = iota + 1
	// ProblemRequiredMetric: no scraped metric has
	// Input.RequiredServerMetricPrefix.
	ProblemRequiredMetric
	// ProblemAborted: the run stopped early (Problem.Reason is
	// replay.Result.Aborted).
	ProblemAborted
	// ProblemInvalid: not a valid submission under Input.Scenario
	// (Problem.Reason is the verdict's reason).
	ProblemInvalid
	// ProblemNothingCompleted: without a scenario, no profiling request
	// completed (Reason scenario.ReasonZeroCompleted).
	ProblemNothingCompleted
	// ProblemThresholdExceeded: the run ended (not aborted) with its
	// profiling error rate above Input.FailedRequestThreshold (Reason
	// ReasonThresholdExceeded).
	ProblemThresholdExceeded
	// ProblemRecount: a folder's recomputation (Recompute) found that its
	// records do not add up to the recorded accounting, or kept an
	// aggregate that does (Problem.Err wraps metrics.ErrAccounting or
	// metrics.ErrAggregateKept).
	ProblemRecount
)

// ReasonThresholdExceeded is the Reason of a ProblemThresholdExceeded.
const ReasonThresholdExceeded = "failed_request_threshold_exceeded"

// Problem is one reason the run failed.
type Problem struct {
	Kind ProblemKind
	// Reason is the abort or verdict reason, for ProblemAborted,
	// ProblemInvalid and ProblemNothingCompleted.
	Reason string
	// Message says what went wrong, ready to print.
	Message string
	// Err is the error behind a ProblemWrite.
	Err error
}

func (p Problem) String() string { return p.Message }

// Finish writes the artifacts of a run that replay.Run returned res for,
// judges it and returns the Outcome. It returns an error only for an
// Input it cannot work with (nothing is written then); a failed write is
// a Problem of the Outcome, and every other artifact is still written.
func Finish(res *replay.Result, in Input) (*Outcome, error) {
	if err := in.validate(res); err != nil {
		return nil, err
	}
	// The run's connections and buffers are garbage by now. Collecting
	// them first keeps what finishing allocates (the figures read the
	// records back) inside the run's peak memory; otherwise it lands on
	// top of that garbage, under a heap goal about twice the run's live
	// heap.
	runtime.GC()
	f := &Finishing{Dir: in.Dir, Result: res, Input: &in, Outcome: &Outcome{failOnInvalid: in.FailOnInvalid}}
	if err := f.run(registered(in.Outputs)); err != nil {
		return nil, err
	}
	return f.Outcome, nil
}

func (in *Input) validate(res *replay.Result) error {
	var errs []error
	if res == nil {
		errs = append(errs, errors.New("profile: Finish needs the replay.Result"))
	} else if res.Generation.IsZero() {
		errs = append(errs, errors.New("profile: replay.Result.Generation: zero (the Result of replay.Run names its generation)"))
	}
	if in.Dir == "" {
		errs = append(errs, errors.New("profile: Input.Dir: required (the artifact folder)"))
	}
	if in.Collector == nil {
		errs = append(errs, errors.New("profile: Input.Collector: required (the run's record collector)"))
	}
	if in.Synth == nil && in.Described == nil {
		errs = append(errs, errors.New("profile: Input.Synth: required (the run's synthesizer)"))
	}
	if l := in.OverflowRateLimit; l.Set && !(l.V >= 0 && l.V <= 1) {
		errs = append(errs, fmt.Errorf("profile: Input.OverflowRateLimit %v: want a fraction between 0 and 1", l.V))
	}
	return errors.Join(errs...)
}

// thresholdAtEnd returns why a run that ended with accounting a fails
// its failed-request threshold (Input.FailedRequestThreshold), or "".
func thresholdAtEnd(a metrics.Accounting, threshold float64, shard bool) string {
	judged := a.ProfilingOK + a.ProfilingErrors
	if threshold <= 0 || shard || judged == 0 {
		return ""
	}
	rate := float64(a.ProfilingErrors) / float64(judged)
	if rate <= threshold {
		return ""
	}
	return fmt.Sprintf("failed-request threshold exceeded: %d of the %d profiling requests that completed failed (%.2f %%), above --failed-request-threshold %g (%.2f %%); "+
		"the run was not stopped early, because stopping needs 99.9 %% confidence that the failure rate is above the threshold, which %d requests do not give, "+
		"but it ended above it, as InferenceX's post-run check and `agentperf report --check` judge it (docs/failed-request-threshold.md)",
		a.ProfilingErrors, judged, 100*rate, threshold, 100*threshold, judged)
}

// lateSignalWarning is the mark of a run interrupted while its artifacts
// were written.
const lateSignalWarning = "interrupted while the artifacts were written: every request had ended, so the records and aggregates are complete; the run is marked interrupted and exits 130"

// signals is Input.Signals (0 without it).
func (f *Finishing) signals() int {
	if f.Input.Signals == nil {
		return 0
	}
	return f.Input.Signals()
}

// markLateSignal marks info interrupted when a signal came after the
// replay ended (while finishing) and reports whether it did.
func (f *Finishing) markLateSignal(info *metrics.RunInfo) bool {
	if f.Result.Cancelled {
		return false
	}
	n := f.signals()
	if n == 0 {
		return false
	}
	info.Extra["interrupted"] = "once"
	if n > 1 {
		info.Extra["interrupted"] = "twice"
	}
	f.Warn(lateSignalWarning)
	return true
}

// coverage is the coverage rule's input: the rule (Input.Coverage) over
// the configured phase, with the three signals the run measured.
func (f *Finishing) coverage() scenario.Coverage {
	res, in := f.Result, f.Input
	c := in.Coverage
	c.Phase = in.Duration
	c.TTFT = scenario.CoverageRatio(res.ProfilingStart, res.LastTTFT, in.Duration)
	c.ITL = scenario.CoverageRatio(res.ProfilingStart, res.LastITL, in.Duration)
	c.Content = scenario.CoverageRatio(res.ProfilingStart, res.LastContent, in.Duration)
	return c
}

// withAdvice appends to an overflow-rate finding the advice of
// overflowAdvice, by the engine its /metrics show.
func (f *Finishing) withAdvice(reason, msg string) string {
	if reason != scenario.ReasonOverflowRateExceeded {
		return msg
	}
	name := ""
	if f.Input.Scraper != nil {
		name = f.Input.Scraper.Engine().Name()
	}
	return msg + "; " + overflowAdvice(name, f.Input.MaxContextLength, f.Result.PromptOverheadMax, f.Input.OverflowAdvice)
}

// overflowAdvice is what a context-overflow finding advises, the same in
// the summary and in the live diagnosis: the engine's settings
// (engines.Advice by the engine's name; every engine's when unknown),
// then, when the traces were selected with --max-context-length maxCtx,
// the margin to leave (marginAdvice; overhead < 0: not known yet, as in
// the live view), else the caller's advice (a CLI names its flags).
func overflowAdvice(engine string, maxCtx, overhead int, caller string) string {
	a := engines.Advice(engine)
	if maxCtx > 0 {
		return a + "; " + marginAdvice(maxCtx, overhead)
	}
	if caller != "" {
		a += "; " + caller
	}
	return a
}

// marginAdvice is the overflow advice of a run whose traces were already
// selected with --max-context-length limit: the server counts a prompt's
// tokens with its chat template and its own tokenizer, which add tokens
// to the trace's recorded count, so a trace at the limit overflows a
// window of that size. overhead is the largest addition the run measured
// (0: not measured; negative: the run is not over, as in the live view).
func marginAdvice(limit, overhead int) string {
	const how = "traces are selected by their recorded token counts, and the server counts more: its chat template (role markers, the generation prompt) and its tokenizer add tokens to every prompt"
	if overhead < 0 {
		return fmt.Sprintf("--max-context-length %d is already given: %s; leave a margin, e.g. --max-context-length %d (2 %% less; the summary at the end derives one from the run's measured overhead)", limit, how, limit-limit/50)
	}
	if overhead == 0 {
		return fmt.Sprintf("--max-context-length %d is already given: %s; this run measured no overhead (pass --use-server-token-count so that it can), so leave a margin, e.g. --max-context-length %d (2 %% less)", limit, how, limit-limit/50)
	}
	margin := overhead + overhead/4 + 1 // a quarter more than the largest seen
	return fmt.Sprintf("--max-context-length %d is already given: %s; this run measured up to %d tokens more than the trace's count, so pass --max-context-length %d (the window less %d tokens: the largest overhead seen and a quarter more)", limit, how, overhead, max(1, limit-margin), margin)
}

// runInfo is what the aggregates' metadata says about the run; it adds
// the warnings of the verdict and of a second signal.
func (f *Finishing) runInfo(verdict scenario.Verdict) metrics.RunInfo {
	res, in := f.Result, f.Input
	a := res.Accounting
	cov := f.coverage()
	info := metrics.RunInfo{
		Coverage: []metrics.PhaseCoverage{{PhaseName: "profiling", ExpectedDurationSeconds: in.Duration.Seconds(),
			RequiredRatio: cov.Required, TTFTRatio: cov.TTFT, ITLRatio: cov.ITL, ContentRatio: cov.Content}},
		BenchmarkID:             res.BenchmarkID,
		Scenario:                in.Scenario,
		StartTime:               res.StartTime,
		EndTime:                 res.EndTime,
		ProfilingStart:          res.ProfilingStart,
		ProfilingEnd:            res.ProfilingEnd,
		InputConfig:             in.InputConfig,
		Dataset:                 datasetMetadata(in.Corpus, in.PublicDataset),
		Cancelled:               res.Cancelled || res.Aborted != "",
		Accounting:              a,
		Concurrency:             in.Concurrency,
		SkippedSubagentRequests: res.SkippedSubagentRequests,
		Extra: map[string]any{
			"synthesis":           nil,
			"start_turns":         res.StartTurns,
			"aborted":             res.Aborted,
			"abort_message":       res.AbortMessage,
			"profiling_overflows": res.ProfilingOverflows,
			"warmup_overflows":    res.WarmupOverflows,
			"warmup_retries":      res.WarmupRetries,
			"response_fallbacks":  res.ResponseFallbacks,
			"agentx_generation":   f.Result.Generation.Name,
			"semantics":           f.Result.Generation.Doc,
			"profiling_end":       res.EndReason,
			"tokenizer":           nil,
			"invalid_messages":    verdict.Messages,
			"schedule":            scheduleMetadata(res),
		},
	}
	f.describe(&info)
	f.warnStop(&info)
	f.addFindings(&info, verdict)
	info.Validity.Valid = verdict.Valid
	info.Validity.Reasons = verdict.Reasons
	return info
}

// describe adds to the run metadata what the run says about itself: the
// synthesizer and tokenizer, the shard, the caller's Extra.
func (f *Finishing) describe(info *metrics.RunInfo) {
	in := f.Input
	if in.Synth != nil {
		info.Extra["synthesis"] = in.Synth.Describe()
		info.Extra["tokenizer"] = tokenizerMetadata(in.Tokenizer, in.Synth)
	} else {
		info.Extra["synthesis"] = in.Described.Synthesis
		info.Extra["tokenizer"] = in.Described.Tokenizer
	}
	if in.Shard != nil {
		info.Extra["shard"] = in.Shard.metadata()
	}
	for k, v := range in.Extra {
		info.Extra[k] = v
	}
}

// warnStop marks a run a signal stopped, with the warning saying how.
func (f *Finishing) warnStop(info *metrics.RunInfo) {
	res, a := f.Result, f.Result.Accounting
	switch {
	case res.Killed:
		info.Extra["interrupted"] = "twice"
		f.Warn(fmt.Sprintf("interrupted twice: the grace period was skipped and the requests in flight were cancelled at once (%d cancelled requests in all); every request sent is recorded", a.Cancelled))
	case res.Cancelled:
		info.Extra["interrupted"] = "once"
		if t := res.Terminated; t != nil {
			f.Warn(fmt.Sprintf("stopped by %s: no new requests, the requests in flight got at most %s, then were cancelled (%d cancelled requests in all); every request sent is recorded", t.Signal, t.Grace, a.Cancelled))
		} else if res.Aborted == "" {
			// SIGINT (Ctrl-C), or the caller's cancel: the reason belongs
			// in the warnings as much as a SIGTERM's does.
			f.Warn(fmt.Sprintf("interrupted (SIGINT, or the caller cancelled the run): no new requests, the requests in flight got the grace period, then were cancelled (%d cancelled requests in all); every request sent is recorded", a.Cancelled))
		}
	}
}

// addFindings adds what the run measured beside its records (missing
// usage, subagents, the server's derived figures, the client's CPU) and,
// without a scenario, the verdict's findings as warnings.
func (f *Finishing) addFindings(info *metrics.RunInfo, verdict scenario.Verdict) {
	res, in, a := f.Result, f.Input, f.Result.Accounting
	if res.MissingUsage > 0 {
		// The pinned aiperf keeps such a request successful and warns
		// that its token metrics are unavailable; so does agentperf, once
		// for the run, where nobody can miss it.
		info.Extra["missing_usage"] = res.MissingUsage
		f.Warn(fmt.Sprintf("the server sent no usage for %d of the %d successful profiling requests (--use-server-token-count takes ISL and OSL from it): those requests have no ISL, OSL or token throughput, and every token figure covers only the other %d; check that the server reports usage (streaming: stream_options.include_usage)",
			res.MissingUsage, a.ProfilingOK, max(a.ProfilingOK-res.MissingUsage, 0)))
	}
	if res.Schedule.Traces > 0 && res.Generation.Subagents {
		info.Extra["subagents"] = subagentMetadata(res)
	}
	if f.Outcome.Derived != nil {
		info.Extra["server_derived"] = f.Outcome.Derived
	}
	if cpu := res.ProfilingUserCPU + res.ProfilingSystemCPU; cpu > 0 {
		info.Extra["client_cpu"] = clientCPUMetadata(res)
	}
	// Without a scenario the verdict's findings are warnings (an overflow
	// rate above the limit), or a failure when nothing was measured.
	if in.Scenario == "" {
		delete(info.Extra, "invalid_messages")
		for i, reason := range verdict.Reasons {
			if reason == scenario.ReasonOverflowRateExceeded {
				f.Warn(f.withAdvice(reason, reason+": "+verdict.Messages[i]))
			}
		}
	}
}

// validityProblems turns the verdict into problems. Under a scenario every
// reason is one ("not a valid submission"); without one only a run that
// completed no request is.
func (f *Finishing) validityProblems(v scenario.Verdict) {
	for i, reason := range v.Reasons {
		msg := reason
		if i < len(v.Messages) {
			msg = reason + ": " + v.Messages[i]
		}
		msg = f.withAdvice(reason, msg)
		switch {
		case f.Input.Scenario != "":
			f.Problem(ProblemInvalid, reason, "not a valid submission: "+msg, nil)
		case reason == scenario.ReasonZeroCompleted:
			f.Problem(ProblemNothingCompleted, reason, "the run failed: "+msg, nil)
		}
	}
}
