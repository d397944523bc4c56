package main

import (
	"context"
	"encoding/json"
	"fmt"
	neturl "net/url"
	"slices"
	"sort"
	"strings"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/dataset/synth"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/server"
	"github.com/agentperf/agentperf/profile"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/timing"
)

// finish hands the run to profile.Finish, which writes every artifact and
// judges it, then prints the outcome and returns the exit status: nil for
// a valid run, errRunFailed (exit 1) for an aborted or invalid one,
// context.Canceled (exit 130) for an interrupted one. Artifacts are
// written in every case.
func (r *profileRun) finish(res *replay.Result, col *metrics.Collector, scr *server.Scraper, id dataset.Identity, syn *synth.Synthesizer, lg *runLog, io stdio) error {
	p := r.p
	kind, _, _ := p.data.loaderKind()
	out, err := profile.Finish(res, profile.Input{
		Dir: p.outputDir, Collector: col, Scraper: scr,
		Scenario: r.scenario, StaticReasons: r.validity, Generation: r.generation,
		Duration: r.duration, Concurrency: r.concurrency,
		OverflowRateLimit: r.env.overflowRateLimit, OverflowAdvice: r.overflowAdvice(),
		InputConfig: r.inputConfig(), Corpus: id, PublicDataset: kind == scenario.LoaderPublic,
		Synth: syn, Tokenizer: r.tokOrigin,
		RequiredServerMetricPrefix: r.env.requiredPrefix,
		Warnings:                   r.startWarnings, // logged when found
		NoPlot:                     p.noPlot,
		FailOnInvalid:              p.failOnInvalid,
		Signals:                    r.signals,
	})
	if err != nil {
		return err
	}
	for _, w := range append(slices.Clone(out.Warnings), out.LateWarnings...) {
		lg.Printf("warning: %s", w)
	}

	a, sum := res.Accounting, out.Summary
	if sum != nil {
		// The run's warnings were logged; the table adds the summary's own.
		t := *sum
		t.Info.Warnings = nil
		t.WriteTable(io.out)
	}
	if out.Derived != nil {
		printDerived(io, out.Derived)
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

	for _, w := range []any{io.out, io.err} {
		if err := outputFailed(w); err != nil {
			lg.FileOnly("note: terminal output was turned off after a failed write (%v); the run went on, and this log and the artifacts are complete", err)
			break
		}
	}
	forgiven := false
	for _, pr := range out.Problems {
		msg := flagNames(pr.Message)
		printPrefixed(io.err, msg)
		if out.Fatal(pr) {
			lg.FileOnly("error: %s", msg)
		} else {
			lg.FileOnly("note: %s", msg)
			forgiven = true
		}
	}
	code := out.ExitCode()
	if forgiven && code == profile.ExitOK {
		m := "the run completed: under --scenario it exits 0 with submission_valid false, as the pinned aiperf does (--fail-on-invalid exits 1 instead)"
		fmt.Fprintf(io.err, "agentperf: %s\n", m)
		lg.FileOnly("note: %s", m)
	}
	switch code {
	case profile.ExitInterrupted:
		return fmt.Errorf("run interrupted; artifacts written to %s: %w", p.outputDir, context.Canceled)
	case profile.ExitFailed:
		return errRunFailed
	}
	return nil
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

// overflowAdvice says how to stop context overflows from agentperf's side.
func (r *profileRun) overflowAdvice() string {
	a := "or pass --max-context-length N (the server's context window in tokens) so that only the traces that fit are replayed"
	if strings.HasPrefix(r.p.url, "sim:") {
		a += "; the in-process simulator's window is set in the URL, e.g. sim://?max-model-len=262144 (default 131072)"
	}
	return a
}
