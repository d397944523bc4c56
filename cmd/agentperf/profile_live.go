package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/server"
	"github.com/agentperf/agentperf/replay"
)

// liveView runs the metrics live view for the duration of a replay.
type liveView struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (l *liveView) stop() {
	if l == nil {
		return
	}
	l.cancel()
	l.wg.Wait()
}

// phaseClock remembers when profiling started, for the progress bar.
type phaseClock struct {
	start    atomic.Int64 // unix ns
	duration time.Duration
}

func startLiveView(p *profileFlags, io stdio, col *metrics.Collector, prog *replay.Progress, scr *server.Scraper, interval time.Duration, pc *phaseClock) *liveView {
	if p.uiType == "none" {
		return nil
	}
	opt := metrics.LiveViewOptions{
		Out:      io.err,
		Interval: interval,
		Progress: func() metrics.Progress {
			mp := metrics.Progress{
				Phase:             metrics.PhaseWarmup,
				WarmupDone:        int(prog.WarmupDone.Load()),
				WarmupTotal:       int(prog.WarmupTotal.Load()),
				ProfilingDuration: pc.duration,
			}
			if ns := pc.start.Load(); ns != 0 {
				mp.Phase = metrics.PhaseProfiling
				mp.ProfilingStart = time.Unix(0, ns)
			}
			return mp
		},
	}
	if p.uiType == "simple" {
		f := false
		opt.Terminal = &f
	}
	if scr != nil {
		opt.ServerHitRate = func() (float64, bool) {
			lf := scr.Live()
			return lf.GPUPrefixHitRate, lf.GPUPrefixHitRateValid
		}
	}
	stats := func() metrics.LiveStats {
		col.SetInFlight(int(prog.InFlight.Load()))
		return col.Snapshot()
	}
	lv := metrics.NewLiveView(stats, opt)
	ctx, cancel := context.WithCancel(context.Background())
	l := &liveView{cancel: cancel}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if err := lv.Run(ctx); err != nil {
			fmt.Fprintf(io.err, "agentperf: live view: %v\n", err)
		}
	}()
	return l
}

// printDerived prints the server-side figures under the summary table.
func printDerived(io stdio, d *server.Derived) {
	pct := func(v float64, ok bool) string {
		if !ok {
			return "n/a"
		}
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	fmt.Fprintf(io.out, "server: GPU prefix-cache hit rate %s, external (offload) hit rate %s, overall hit rate %s, GPU KV usage mean (active) %s, peak %s\n",
		pct(d.GPUPrefixHitRate, d.GPUPrefixHitRateValid),
		pct(d.ExternalHitRate, d.ExternalHitRateValid),
		pct(d.OverallHitRate, d.OverallHitRateValid),
		pct(d.KVUsageMeanActive, d.KVUsageMeanActiveValid),
		pct(d.KVUsagePeak, d.KVUsagePeakValid))
	if d.ScrapeFailures > 0 {
		fmt.Fprintf(io.out, "server metrics: %d of %d scrapes failed (failed_fetches in %s; last: %s); the figures use the successful ones\n",
			d.ScrapeFailures, d.Scrapes, server.JSONFile, d.LastScrapeError)
	}
	if d.CollectionError != "" {
		fmt.Fprintf(io.out, "server metrics: collection stopped by an %s\n", d.CollectionError)
	}
}
