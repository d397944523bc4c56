package run

import (
	"fmt"
	"math"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// warmCache is a check rather than a file: it adds to the written
// aggregates a warning when the server's prefix cache was warm before the
// run (warmCacheWarning), before report.html shows them.
type warmCache struct{}

func (warmCache) Stage() Stage { return StagePublish }

func (warmCache) Write(f *Finishing) {
	if f.Folder() {
		return
	}
	if w := warmCacheWarning(f.Summary, f.Outcome.Derived); w != "" {
		f.Warn(w)
		if err := metrics.AddWarnings(f.Dir, w); err != nil {
			f.Warn(fmt.Sprintf("the warm-cache warning could not be recorded in %s: %v", metrics.FileAggregateJSON, err))
		}
	}
}

// warmCacheWarning returns a warning when the server's prefix cache
// missed far less than an infinite cache could have from this run's own
// requests (the theoretical hit rate): it held the prompts of an earlier
// run (the same corpus and seed) when this one started, which flatters
// every latency figure. The test is on the miss rates: the theoretical
// one at least 2 points (a run with almost nothing new to miss tells
// nothing), the server's under half of it (block sizes differ, the trace's
// 64 tokens and the server's 16, so a server can hit a partial block an
// infinite cache of whole blocks misses; that is a small share, not
// half). "" otherwise.
func warmCacheWarning(sum *metrics.Summary, d *servermetrics.Derived) string {
	if sum == nil || d == nil || !d.GPUPrefixHitRateValid || sum.TheoreticalTotalBlocks == 0 || math.IsNaN(sum.TheoreticalHitPct) {
		return ""
	}
	server := 100 * d.GPUPrefixHitRate
	theoMiss, serverMiss := 100-sum.TheoreticalHitPct, 100-server
	if theoMiss < 2 || serverMiss >= theoMiss/2 {
		return ""
	}
	return fmt.Sprintf("the server's prefix cache was warm before the run: it hit %.1f %% over the profiling window, where an infinite cache starting empty would hit at most about %.1f %% of this run's prompts (the theoretical hit rate), so it held an earlier run's prompts and the latency figures are flattered; reset the server's prefix cache before the run (--reset-prefix-cache; Spec.ResetPrefixCache) or restart it",
		server, sum.TheoreticalHitPct)
}
