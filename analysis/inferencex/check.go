package inferencex

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// DefaultFailedRequestThreshold is InferenceX's default error-rate
// threshold (AIPERF_FAILED_REQUEST_THRESHOLD).
const DefaultFailedRequestThreshold = 0.10

// CheckOptions configure Run.Check.
type CheckOptions struct {
	// FailedRequestThreshold is the largest acceptable share of failed
	// requests among completed ones, in [0, 1].
	FailedRequestThreshold float64
	// RequiredServerMetricPrefix, when set (e.g. "vllm:"), requires
	// non-empty server metrics exports that mention a metric with this
	// prefix (AIPERF_REQUIRED_SERVER_METRIC_PREFIX).
	RequiredServerMetricPrefix string
}

// CheckResult is the outcome of one check.
type CheckResult struct {
	Name    string
	OK      bool
	Message string
}

// Check runs InferenceX's result validation (request_count present and
// finite, completed requests > 0, error rate within the threshold, the
// server-metrics gate when a prefix is required) and agentperf's
// invariants (the request accounting adds up, the aggregate JSON agrees
// with the records, every successful record has token counts and times,
// the run was not aborted or cancelled).
func (r *Run) Check(opt CheckOptions) []CheckResult {
	var out []CheckResult
	add := func(name string, ok bool, format string, a ...any) {
		out = append(out, CheckResult{Name: name, OK: ok, Message: fmt.Sprintf(format, a...)})
	}
	ag := r.agg
	s := r.Summary
	// InferenceX's validator reads profile_export_aiperf.json.
	var success, errs, completed float64
	countsOK := false
	reqCount, hasReqCount := ag.avg("request_count")
	switch {
	case !ag.present:
		add("request_count", false, "%s is missing", metrics.FileAggregateJSON)
	case !hasReqCount:
		add("request_count", false, "%s has no request_count.avg", metrics.FileAggregateJSON)
	case reqCount < 0:
		add("request_count", false, "request_count.avg = %v is not a finite count", reqCount)
	default:
		success = reqCount
		if e, ok := ag.avg("error_request_count"); ok {
			errs = e
		}
		completed = success + errs
		if c, ok := ag.avg("completed_request_count"); ok {
			completed = c
		}
		countsOK = true
		add("request_count", true, "%g successful profiling requests", success)
	}
	if countsOK {
		add("completed_requests", completed > 0, "%g completed requests (%g successful + %g failed)", completed, success, errs)
		if completed > 0 {
			rate := errs / completed
			add("error_rate", rate <= opt.FailedRequestThreshold, "%g of %g completed requests failed (%.2f %%; threshold %.2f %%)",
				errs, completed, 100*rate, 100*opt.FailedRequestThreshold)
		}
		// agentperf: the file agrees with a recount of the records.
		agree := success == float64(s.RequestCount) && errs == float64(s.ErrorRequestCount)
		add("aggregates_match_records", agree, "%s says %g successful / %g failed; %s has %d / %d",
			metrics.FileAggregateJSON, success, errs, metrics.FileRecords, s.RequestCount, s.ErrorRequestCount)
	}
	if s.AccountingErr != nil {
		add("request_accounting", false, "%v", s.AccountingErr)
	} else if acc := ag.Metadata.RequestAccounting; acc != nil && !acc.AddsUp {
		add("request_accounting", false, "metadata.request_accounting.adds_up is false")
	} else {
		add("request_accounting", true, "%s", s.Info.Accounting.Equation())
	}
	rs := r.recs
	add("record_tokens", rs.MissingTokens == 0, "%d of %d successful profiling records lack input_sequence_length or output_sequence_length",
		rs.MissingTokens, len(rs.kept))
	add("record_times", rs.MissingTimes == 0, "%d of %d successful profiling records lack request_start_ns or request_end_ns",
		rs.MissingTimes, len(rs.kept))
	switch {
	case ag.agentperf("aborted") != "":
		add("run_completed", false, "the run was aborted (%s): %s", ag.agentperf("aborted"), ag.agentperf("abort_message"))
	case ag.WasCancelled || s.Info.Cancelled:
		add("run_completed", false, "the run was cancelled")
	default:
		add("run_completed", true, "the run was neither aborted nor cancelled")
	}
	// The submission verdict: every reason it records fails under its
	// own name (unsafe_override, context_overflow_rate_exceeded, …).
	if v := r.Validity(); v.Known {
		if v.Valid && len(v.Reasons) == 0 {
			add("submission_valid", true, "scenario %s: a valid submission", v.Scenario)
		}
		for _, reason := range v.Reasons {
			add(reason, false, "not a valid submission (%s): %s", scenarioName(v.Scenario), reasonText(reason))
		}
		if !v.Valid && len(v.Reasons) == 0 {
			add("submission_valid", false, "metadata.submission_valid is false, with no reason recorded")
		}
	}
	// The engine behind the server metrics (engines table): an unknown
	// one has no derived server figures, which the check names.
	if det := servermetrics.DetectEngine(r.Server); det.Unknown() {
		add("server_engine", false, "%s", det.UnknownText(8))
	} else if e := det.Engine; e != nil {
		msg := "server metrics of " + e.Title
		if e.Missing != "" {
			msg += " (" + e.Missing + ")"
		}
		add("server_engine", true, "%s", msg)
	}
	if p := opt.RequiredServerMetricPrefix; p != "" {
		ok, msg := requiredPrefix(r.Dir, p)
		add("server_metrics_prefix", ok, "%s", msg)
	}
	return out
}

// scenarioName is the scenario for a message ("no scenario" when empty).
func scenarioName(s string) string {
	if s == "" {
		return "no scenario"
	}
	return "scenario " + s
}

// reasonText explains a submission_invalid_reasons value.
func reasonText(reason string) string {
	switch reason {
	case scenario.ReasonUnsafeOverride:
		return "--unsafe-override (or AIPERF_UNSAFE_OVERRIDE) lifted at least one scenario lock"
	case scenario.ReasonOverflowRateExceeded:
		return "more profiling responses were context overflows than the limit allows (AIPERF_AGENTX_CONTEXT_OVERFLOW_RATE_LIMIT)"
	case scenario.ReasonRunCancelled:
		return "the run was cancelled before the end of the profiling phase"
	case scenario.ReasonInsufficientCoverage:
		return "TTFT and ITL observations do not reach 98 % of the profiling phase"
	case scenario.ReasonZeroCompleted:
		return "no profiling request completed successfully"
	}
	return "recorded in metadata.submission_invalid_reasons"
}

// requiredPrefix is InferenceX's launcher gate: both server-metrics
// exports exist and are non-empty, and the JSON mentions "<prefix.
func requiredPrefix(dir, prefix string) (bool, string) {
	for _, n := range []string{servermetrics.JSONFile, servermetrics.CSVFile} {
		st, err := os.Stat(filepath.Join(dir, n))
		if err != nil || st.Size() == 0 {
			return false, fmt.Sprintf("%s is missing or empty (required because the server metric prefix %q is)", n, prefix)
		}
	}
	has, err := servermetrics.HasMetricPrefix(filepath.Join(dir, servermetrics.JSONFile), prefix)
	if err != nil {
		return false, err.Error()
	}
	if !has {
		return false, fmt.Sprintf("%s has no metric named %s…", servermetrics.JSONFile, prefix)
	}
	return true, fmt.Sprintf("server metrics with prefix %s present", prefix)
}

// Passed reports whether every check passed.
func Passed(results []CheckResult) bool {
	for _, c := range results {
		if !c.OK {
			return false
		}
	}
	return true
}
