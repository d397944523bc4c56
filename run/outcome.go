package run

import (
	"fmt"
	"io"
	"strings"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/server/gputelemetry"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// WriteSummary writes what a person reads at the end of a run: the
// summary table, the server's derived figures, the request accounting,
// the subagents, an early end, the tokenizer and the artifact folder.
// The run's warnings and problems are not in it (Run logs them).
func (o *Outcome) WriteSummary(w io.Writer) {
	if sum := o.Summary; sum != nil {
		// The run's warnings were logged; the table adds the summary's own.
		t := *sum
		t.Info.Warnings = nil
		t.WriteTable(w)
	}
	if o.Derived != nil {
		WriteDerived(w, o.Derived)
	}
	if o.GPU != nil {
		WriteGPU(w, o.GPU)
	}
	res := o.Result
	if res == nil {
		return
	}
	a, sum := res.Accounting, o.Summary
	cancelled := fmt.Sprintf("%d cancelled", a.Cancelled)
	if sum != nil && sum.CancelledRequestCount+sum.WarmupCancelledCount == a.Cancelled {
		// The same split as the summary's first line.
		cancelled = fmt.Sprintf("%d cancelled (profiling %d, warmup %d)", a.Cancelled, sum.CancelledRequestCount, sum.WarmupCancelledCount)
	}
	retried := ""
	if res.WarmupRetries > 0 {
		retried = fmt.Sprintf(" (%d of them failed attempts that were retried)", res.WarmupRetries)
	}
	fmt.Fprintf(w, "requests: sent %d = profiling %d ok + %d failed, warmup %d ok + %d failed%s, %d context overflows, %s\n",
		a.Sent, a.ProfilingOK, a.ProfilingErrors, a.WarmupOK, a.WarmupErrors, retried, a.Overflows, cancelled)
	if sum != nil {
		if l := OccupancyLine(sum.Occupancy, sum.Info.Concurrency); l != "" {
			fmt.Fprintln(w, l)
		}
	}
	if sa := res.Subagents; res.Generation.Subagents && sa.Children > 0 {
		fmt.Fprintf(w, "subagents: %s; %d subagents (%d requests) dropped, no parent request before them; %d turns cut by the duration\n",
			subagentLine(sa), sa.Dropped, sa.DroppedRequests, sa.Cut)
	}
	if res.ServerRestartWaits > 0 {
		fmt.Fprintf(w, "server restarts: %d requests were sent again while the server was restarting (503 \"Loading model\" or a refused connection); the wait is in their latency, each record has server_restart_tries and server_restart_wait_ns\n",
			res.ServerRestartWaits)
	}
	if res.EndedEarly {
		fmt.Fprintf(w, "profiling ended at %s, before the %s deadline: %s\n", res.ProfilingEnd.Format("15:04:05"), res.Deadline.Format("15:04:05"), res.EndReason)
	}
	fmt.Fprintf(w, "tokenizer: %s\n", o.Tokenizer)
	fmt.Fprintf(w, "artifacts: %s\n", o.Dir)
}

// WriteDerived writes the server-side figures under the summary table.
func WriteDerived(w io.Writer, d *servermetrics.Derived) {
	pct := func(v float64, ok bool) string {
		if !ok {
			return "n/a"
		}
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	if d.Engine.Unknown() {
		fmt.Fprintf(w, "server /metrics: %s\n", d.Engine.UnknownText(8))
	} else {
		who := "server"
		if e := d.Engine.Engine; e != nil {
			who = e.Title
		}
		fmt.Fprintf(w, "%s /metrics over the profiling window (every request it served): GPU prefix-cache hit rate %s, external (offload) hit rate %s, overall hit rate %s, GPU KV usage mean (active) %s, peak %s\n",
			who,
			pct(d.GPUPrefixHitRate, d.GPUPrefixHitRateValid),
			pct(d.ExternalHitRate, d.ExternalHitRateValid),
			pct(d.OverallHitRate, d.OverallHitRateValid),
			pct(d.KVUsageMeanActive, d.KVUsageMeanActiveValid),
			pct(d.KVUsagePeak, d.KVUsagePeakValid))
		if e := d.Engine.Engine; e != nil && e.Missing != "" {
			fmt.Fprintf(w, "server metrics: n/a where %s: %s\n", e.Title, e.Missing)
		} else if e != nil && len(e.ExternalHits) == 0 && len(e.CacheSourceLabel) == 0 {
			fmt.Fprintf(w, "server metrics: n/a where %s has no external cache tier counter\n", e.Title)
		}
	}
	if d.ScrapeFailures > 0 {
		fmt.Fprintf(w, "server metrics: %d of %d scrapes failed (failed_fetches in %s; last: %s); the figures use the successful ones\n",
			d.ScrapeFailures, d.Scrapes, servermetrics.JSONFile, d.LastScrapeError)
	}
	if d.CollectionError != "" {
		fmt.Fprintf(w, "server metrics: collection stopped by an %s\n", d.CollectionError)
	}
}

// WriteGPU writes the GPUs' energy over the profiling window under the
// summary table: per GPU, in all, and per unit of work.
func WriteGPU(w io.Writer, r *gputelemetry.Result) {
	fmt.Fprintf(w, "GPU energy over the profiling window (%.1f s, %d GPUs, from %s):\n", r.WindowSeconds, len(r.GPUs), gpuSources(r))
	for _, g := range r.GPUs {
		if g.EnergyJ == nil {
			fmt.Fprintf(w, "  GPU %s %s: no energy (%s)\n", g.Index, g.Model, g.Problem)
			continue
		}
		fmt.Fprintf(w, "  GPU %s %s: %.0f J (%s), average %.0f W, max %.0f W\n", g.Index, g.Model, *g.EnergyJ, g.EnergySource, *g.AvgPowerW, g.Max["power_w"])
	}
	if r.TotalEnergyJ == nil {
		fmt.Fprintf(w, "  in all: n/a (a GPU has no energy for the window)\n")
		return
	}
	fmt.Fprintf(w, "  in all: %.0f J, average %.0f W", *r.TotalEnergyJ, *r.AvgTotalPowerW)
	if e := r.Efficiency; e != nil {
		fmt.Fprintf(w, "; %.4g output tokens per joule, %.4g J per output token, %.4g J per request (%d successful profiling requests, %d output tokens)",
			e.OutputTokensPerJoule, e.JoulesPerOutputToken, e.JoulesPerRequest, e.Requests, e.OutputTokens)
	}
	fmt.Fprintln(w)
}

// gpuSources names the exporters of r.
func gpuSources(r *gputelemetry.Result) string {
	var urls []string
	for _, e := range r.Endpoints {
		urls = append(urls, e.URL)
	}
	return strings.Join(urls, ", ")
}

// subagentLine says how many child requests were sent and where their
// streams came from: spawned during the run, or already under way at a
// lane's start state (a start inside a recorded subagent), which is how
// child requests can be sent with no spawn during the run.
func subagentLine(sa replay.SubagentStats) string {
	s := fmt.Sprintf("%d child requests sent, from %d child streams started in %d branches spawned during the run", sa.Sent, sa.Started, sa.Spawned)
	if sa.StartedAtStart > 0 || sa.SpawnedAtStart > 0 {
		s += fmt.Sprintf(" and %d child streams already under way at the lanes' start states", sa.StartedAtStart)
	}
	return s
}

// OccupancyLine is the summary's line on achieved concurrency
// (metrics.Occupancy, per phase, profiling first) beside the configured
// lanes: a lane replays one trace tree at a time, and the requests in
// flight are what the server was sent. "" without figures.
func OccupancyLine(occ []metrics.Occupancy, lanes int) string {
	var parts []string
	for _, ph := range []string{"profiling", "warmup"} {
		for i := range occ {
			o := &occ[i]
			if o.Phase != ph {
				continue
			}
			parts = append(parts, fmt.Sprintf("%s mean %.2f, max %d, none in flight %.1f %% of the phase's %.1f s",
				o.Phase, o.MeanInFlight, o.MaxInFlight, 100*o.IdleShare, o.Seconds()))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	conf := ""
	if lanes > 0 {
		conf = fmt.Sprintf("; beside --concurrency %d lanes, which are trace trees replayed at a time, not requests: a lane waits between turns, and its subagents add requests", lanes)
	}
	return fmt.Sprintf("requests in flight (this client, exact from the records' start and end times%s): %s", conf, strings.Join(parts, "; "))
}
