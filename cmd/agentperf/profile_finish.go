package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	neturl "net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/dataset/synth"
	"github.com/agentperf/agentperf/dataset/tokenizer"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/server"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/timing"
)

// finish writes every artifact, judges the run and returns the exit status:
// nil for a valid run, errRunFailed (exit 1) for an aborted or invalid one,
// context.Canceled (exit 130) for an interrupted one. Artifacts are written
// in every case.
func (r *profileRun) finish(res *replay.Result, col *metrics.Collector, scr *server.Scraper, id dataset.Identity, syn *synth.Synthesizer, lg *runLog, io stdio) error {
	p := r.p
	var problems, warnings []string

	// After a failed write (a full disk) the aggregates are written first,
	// into the room the collector kept; the server metrics export follows
	// if it still fits.
	aggFirst := col.Err() != nil
	if aggFirst {
		warnings = append(warnings, fmt.Sprintf("%s is incomplete: a write failed (%v); %s%s holds the records written before, each complete, and the aggregates cover every record",
			metrics.FileRecords, col.Err(), metrics.FileRecords, ".partial"))
	}
	var derived *server.Derived
	if scr != nil && !aggFirst {
		d, err := scr.Export(p.outputDir)
		if err != nil {
			problems = append(problems, fmt.Sprintf("writing the server metrics export failed: %v", err))
		} else {
			derived = d
		}
		if d != nil && d.CollectionError != "" {
			warnings = append(warnings, "server metrics: collection stopped by an "+d.CollectionError)
		}
		if pre := r.env.requiredPrefix; pre != "" {
			b, err := os.ReadFile(filepath.Join(p.outputDir, "server_metrics_export.json"))
			if err != nil || !bytes.Contains(b, []byte(`"`+pre)) {
				problems = append(problems, fmt.Sprintf("AIPERF_REQUIRED_SERVER_METRIC_PREFIX=%s: no metric with that prefix was scraped from %s", pre, strings.Join(scr.URLs(), ", ")))
			}
		}
	}

	a := res.Accounting
	verdict := scenario.Judge(scenario.JudgeInput{
		StaticReasons:     r.validity,
		Cancelled:         res.Cancelled || res.Aborted != "",
		Overflows:         res.ProfilingOverflows,
		Responses:         a.ProfilingOK + a.ProfilingErrors + res.ProfilingOverflows,
		OverflowRateLimit: r.env.overflowRateLimit,
		PhaseDuration:     r.duration,
		TTFTCoverage:      scenario.CoverageRatio(res.ProfilingStart, res.LastTTFT, r.duration),
		ITLCoverage:       scenario.CoverageRatio(res.ProfilingStart, res.LastITL, r.duration),
		Completed:         a.ProfilingOK,
	})

	ttftCov := scenario.CoverageRatio(res.ProfilingStart, res.LastTTFT, r.duration)
	itlCov := scenario.CoverageRatio(res.ProfilingStart, res.LastITL, r.duration)
	info := metrics.RunInfo{
		Coverage: []metrics.PhaseCoverage{{PhaseName: "profiling", ExpectedDurationSeconds: r.duration.Seconds(),
			RequiredRatio: scenario.CoverageRequired, TTFTRatio: ttftCov, ITLRatio: itlCov}},
		BenchmarkID:             res.BenchmarkID,
		Scenario:                r.scenario,
		StartTime:               res.StartTime,
		EndTime:                 res.EndTime,
		ProfilingStart:          res.ProfilingStart,
		ProfilingEnd:            res.ProfilingEnd,
		InputConfig:             r.inputConfig(),
		Dataset:                 datasetMetadata(id, r),
		Cancelled:               res.Cancelled || res.Aborted != "",
		Accounting:              a,
		Concurrency:             r.concurrency,
		SkippedSubagentRequests: res.SkippedSubagentRequests,
		Extra: map[string]any{
			"synthesis":           syn.Describe(),
			"start_turns":         res.StartTurns,
			"aborted":             res.Aborted,
			"abort_message":       res.AbortMessage,
			"profiling_overflows": res.ProfilingOverflows,
			"warmup_overflows":    res.WarmupOverflows,
			"warmup_retries":      res.WarmupRetries,
			"agentx_generation":   r.generation.Name,
			"semantics":           r.generation.Doc,
			"profiling_end":       res.EndReason,
			"tokenizer":           tokenizerMetadata(r.tokOrigin, syn),
			"invalid_messages":    verdict.Messages,
			"schedule":            scheduleMetadata(res),
		},
	}
	switch {
	case res.Killed:
		info.Extra["interrupted"] = "twice"
		warnings = append(warnings, fmt.Sprintf("interrupted twice: the grace period was skipped and the requests in flight were cancelled at once (%d cancelled requests in all); every request sent is recorded", a.Cancelled))
	case res.Cancelled:
		info.Extra["interrupted"] = "once"
	}
	if res.Schedule.Traces > 0 && r.generation.Replay != timing.V02 {
		info.Extra["subagents"] = subagentMetadata(res)
	}
	if derived != nil {
		info.Extra["server_derived"] = derived
	}
	// Submission validity is a scenario's notion: without --scenario the
	// verdict's findings are warnings (an overflow rate above the limit),
	// or a failure when nothing was measured.
	if r.scenario == "" {
		delete(info.Extra, "invalid_messages")
		for i, reason := range verdict.Reasons {
			if reason == scenario.ReasonOverflowRateExceeded {
				warnings = append(warnings, reason+": "+verdict.Messages[i]+"; "+r.overflowAdvice())
			}
		}
	}
	info.Validity.Valid = verdict.Valid
	info.Validity.Reasons = verdict.Reasons
	sum, err := col.Finish(info)
	if err != nil {
		problems = append(problems, fmt.Sprintf("writing the request exports failed: %v", err))
	}
	if scr != nil && aggFirst {
		if _, err := scr.Export(p.outputDir); err != nil {
			problems = append(problems, fmt.Sprintf("writing the server metrics export failed: %v", err))
		}
	}
	_, aggErr := os.Stat(filepath.Join(p.outputDir, metrics.FileAggregateJSON))

	if !p.noPlot {
		w, err := renderPlot(p.outputDir)
		warnings = append(warnings, w...)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("metrics_plots.png was not rendered: %v", err))
		}
	}
	for _, w := range warnings {
		lg.Printf("warning: %s", w)
	}
	// The warnings found at the start were logged then.
	if all := append(append([]string(nil), r.startWarnings...), warnings...); len(all) > 0 && aggErr == nil {
		if err := metrics.AddWarnings(p.outputDir, all...); err != nil {
			problems = append(problems, fmt.Sprintf("recording warnings in profile_export_aiperf.json: %v", err))
		}
	}
	// report.html last, so that it shows every warning above. Without the
	// aggregates (their write failed, reported above) there is nothing to
	// show.
	if aggErr != nil {
		problems = append(problems, "report.html was not written: it shows "+metrics.FileAggregateJSON+", which could not be written")
	} else if hw, err := writeHTMLReport(p.outputDir); err != nil {
		problems = append(problems, err.Error())
	} else if len(hw) > 0 {
		for _, w := range hw {
			lg.Printf("warning: %s", w)
		}
		if err := metrics.AddWarnings(p.outputDir, hw...); err != nil {
			problems = append(problems, fmt.Sprintf("recording warnings in profile_export_aiperf.json: %v", err))
		}
	}

	if sum != nil {
		sum.WriteTable(io.out)
	}
	if derived != nil {
		printDerived(io, derived)
	}
	cancelled := fmt.Sprintf("%d cancelled", a.Cancelled)
	if sum != nil && sum.CancelledRequestCount+sum.WarmupCancelledCount == a.Cancelled {
		// The same split as the summary's first line.
		cancelled = fmt.Sprintf("%d cancelled (profiling %d, warmup %d)", a.Cancelled, sum.CancelledRequestCount, sum.WarmupCancelledCount)
	}
	retried := ""
	if res.WarmupRetries > 0 {
		retried = fmt.Sprintf(" (%d of them failed attempts that were retried)", res.WarmupRetries)
	}
	fmt.Fprintf(io.out, "requests: sent %d = profiling %d ok + %d failed, warmup %d ok + %d failed%s, %d context overflows, %s\n",
		a.Sent, a.ProfilingOK, a.ProfilingErrors, a.WarmupOK, a.WarmupErrors, retried, a.Overflows, cancelled)
	if sa := res.Subagents; r.generation.Replay != timing.V02 && sa.Children > 0 {
		fmt.Fprintf(io.out, "subagents: %d child requests sent (%d branches spawned, %d child streams started); %d subagents (%d requests) dropped, no parent request before them; %d turns cut by the duration\n",
			sa.Sent, sa.Spawned, sa.Started, sa.Dropped, sa.DroppedRequests, sa.Cut)
	}
	if res.EndedEarly {
		fmt.Fprintf(io.out, "profiling ended at %s, before the %s deadline: %s\n", res.ProfilingEnd.Format("15:04:05"), res.Deadline.Format("15:04:05"), res.EndReason)
	}
	fmt.Fprintf(io.out, "tokenizer: %s\n", r.tokOrigin)
	fmt.Fprintf(io.out, "artifacts: %s\n", p.outputDir)

	if res.Aborted != "" {
		problems = append(problems, "run aborted ("+res.Aborted+"): "+res.AbortMessage)
	}
	problems = append(problems, r.validityProblems(verdict)...)
	for _, pr := range problems {
		fmt.Fprintf(io.err, "agentperf: %s\n", pr)
		lg.FileOnly("error: %s", pr)
	}
	if res.Cancelled && res.Aborted == "" {
		return fmt.Errorf("run interrupted; artifacts written to %s: %w", p.outputDir, context.Canceled)
	}
	if len(problems) > 0 {
		return errRunFailed
	}
	return nil
}

// subagentMetadata is metadata.subagents: what was done with the corpus's
// subagents.
func subagentMetadata(res *replay.Result) map[string]any {
	sa := res.Subagents
	return map[string]any{
		"branches":                 sa.Branches,
		"child_streams":            sa.Children,
		"child_requests_in_corpus": sa.Requests,
		"dropped_no_anchor":        sa.Dropped,
		"dropped_requests":         sa.DroppedRequests,
		"branches_spawned":         sa.Spawned,
		"children_started":         sa.Started,
		"child_requests_sent":      sa.Sent,
	}
}

// scheduleMetadata is metadata.schedule: the replay core's counters.
func scheduleMetadata(res *replay.Result) map[string]any {
	st := res.Schedule
	return map[string]any{
		"trees":                st.Trees,
		"recycles":             st.Recycles,
		"warmup_requests":      st.Sent[0],
		"profiling_requests":   st.Sent[1],
		"cut_by_duration":      st.Cut,
		"wrap_filled_lanes":    st.WrapFilled,
		"usable_traces":        st.Usable,
		"live_fallbacks":       st.LiveFallbacks,
		"lanes_done":           st.LanesDone,
		"ended_early":          res.EndedEarly,
		"system_idle_jumps":    st.SystemIdleJumps,
		"system_idle_skipped":  st.SystemIdleSkipped.Seconds(),
		"trace_idle_jumps":     st.TraceIdleJumps,
		"trace_idle_skipped_s": st.TraceIdleSkipped.Seconds(),
	}
}

// datasetMetadata is metadata.dataset: the corpus identity in the keys
// InferenceX reads (docs/artifacts.md) plus agentperf's own.
func datasetMetadata(id dataset.Identity, r *profileRun) map[string]any {
	// source_type is aiperf's name for where the corpus came from
	// (InferenceX copies the block verbatim); agentperf's own is in
	// "source".
	st := id.SourceType
	if kind, _, _ := r.p.data.loaderKind(); kind == scenario.LoaderPublic {
		st = "public_dataset"
	}
	m := map[string]any{
		"source_type":         st,
		"source":              id.SourceType,
		"loader":              id.Loader,
		"num_dataset_entries": id.NumDatasetEntries,
		"traces":              id.Traces,
		"parent_requests":     id.ParentRequests,
		"subagent_requests":   id.SubagentRequests,
	}
	if id.HFRepo != "" {
		m["hf_dataset_name"] = id.HFRepo
		m["hf_revision"] = id.HFRevision
		m["hf_commit"] = id.HFCommit
		m["hf_split"] = id.HFSplit
	}
	if id.Path != "" {
		m["path"] = id.Path
	}
	if id.SHA256 != "" {
		m["sha256"] = id.SHA256
	}
	return m
}

// redactURL hides the password of a URL's user info (it is a credential).
func redactURL(s string) string {
	if u, err := neturl.Parse(s); err == nil {
		return u.Redacted()
	}
	return s
}

// inputConfig is input_config: the resolved settings, secrets left out.
func (r *profileRun) inputConfig() map[string]any {
	p := r.p
	cfg := map[string]any{
		"scenario":                   r.scenario,
		"url":                        redactURL(p.url),
		"endpoint":                   p.endpoint,
		"endpoint_type":              p.endpointType,
		"model_names":                p.models,
		"tokenizer":                  p.tokenizer,
		"tokenizer_revision":         p.tokenizerRev,
		"concurrency":                r.concurrency,
		"benchmark_duration":         r.duration.Seconds(),
		"benchmark_grace_period":     p.graceBench,
		"warmup_grace_period":        p.graceWarmup,
		"random_seed":                r.seed,
		"failed_request_threshold":   p.threshold,
		"trajectory_start_min_ratio": p.startMin,
		"trajectory_start_max_ratio": p.startMax,
		"inter_turn_delay_cap":       r.delayCap.Seconds(),
		"trace_idle_gap_cap_seconds": r.idleGapCap.Seconds(),
		"agentx_generation":          r.generation.Name,
		"cache_bust":                 string(r.cacheBust),
		"streaming":                  r.streaming,
		"ignore_eos":                 r.ignoreEOS,
		"use_server_token_count":     r.serverTok,
		"use_legacy_max_tokens":      p.legacyMaxTok,
		"slice_duration":             p.sliceDuration,
		"server_metrics":             redactURLs(p.serverMetrics),
		"output_artifact_dir":        p.outputDir,
		"unsafe_override":            p.unsafeOverride || r.env.unsafeOverride,
		"live_assistant_responses":   r.liveAssistant,
		"key_supplied":               r.apiKey != "", // whether a bearer key was sent (never its value)
	}
	extra := map[string]any{}
	for _, e := range r.extra {
		var v any
		if json.Unmarshal(e.Value, &v) == nil {
			extra[e.Key] = v
		}
	}
	if len(extra) > 0 {
		cfg["extra_inputs"] = extra
	}
	if len(r.headers) > 0 {
		names := make([]string, 0, len(r.headers))
		for k := range r.headers {
			names = append(names, k)
		}
		cfg["header_names"] = names // values may hold credentials
	}
	if len(r.metricsHeaders) > 0 {
		names := make([]string, 0, len(r.metricsHeaders))
		for k := range r.metricsHeaders {
			names = append(names, k)
		}
		sort.Strings(names)
		cfg["server_metrics_header_names"] = names
	}
	return cfg
}

// validityProblems turns the verdict into the problems that make the exit
// code 1. Under --scenario every reason is one ("not a valid submission");
// without a scenario only a run that completed no request is.
func (r *profileRun) validityProblems(v scenario.Verdict) []string {
	var out []string
	for i, reason := range v.Reasons {
		msg := reason
		if i < len(v.Messages) {
			msg = reason + ": " + v.Messages[i]
		}
		if reason == scenario.ReasonOverflowRateExceeded {
			msg += "; " + r.overflowAdvice()
		}
		switch {
		case r.scenario != "":
			out = append(out, "not a valid submission: "+msg)
		case reason == scenario.ReasonZeroCompleted:
			out = append(out, "the run failed: "+msg)
		}
	}
	return out
}

// overflowAdvice says how to stop context overflows from agentperf's side.
func (r *profileRun) overflowAdvice() string {
	a := "or pass --max-context-length N (the server's context window in tokens) so that only the traces that fit are replayed"
	if strings.HasPrefix(r.p.url, "sim:") {
		a += "; the in-process simulator's window is set in the URL, e.g. sim://?max-model-len=262144 (default 131072)"
	}
	return a
}

// tokenizerMetadata is metadata.agentperf.tokenizer: the tokenizer used
// and where it came from.
func tokenizerMetadata(o tokenizer.Origin, syn *synth.Synthesizer) map[string]any {
	m := map[string]any{"source": o.Kind, "name": syn.Tokenizer().Name(), "approximate": syn.Tokenizer().Approximate()}
	if o.Path != "" {
		m["path"] = o.Path
	}
	if o.Kind == "hub" {
		m["hf_model"], m["hf_revision"], m["hf_commit"] = o.Repo, o.Revision, o.Commit
		m["downloaded"] = append([]string{}, o.Downloaded...)
	}
	return m
}
