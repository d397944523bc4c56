package timing_test

import (
	"testing"

	"github.com/agentperf/agentperf/internal/mergetest"
	"github.com/agentperf/agentperf/timing"
)

// A field added to TreeStats or Stats without being merged fails these.

func TestTreeStatsAddSumsEveryField(t *testing.T) {
	t.Parallel()
	mergetest.Check(t, func(a, b *timing.TreeStats) { a.Add(b) }, nil)
}

func TestStatsMergeEveryField(t *testing.T) {
	t.Parallel()
	mergetest.Check(t, func(a, b *timing.Stats) { a.Merge(*b) }, map[string]mergetest.Rule{
		// The corpus, planned whole by every shard: the first shard's.
		"Traces": mergetest.First,
		"Usable": mergetest.First,
	})
}
