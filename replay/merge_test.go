package replay_test

import (
	"testing"
	"time"

	"github.com/agentperf/agentperf/internal/mergetest"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
)

// TestResultMergeEveryField fails when a field of Result is added without
// being merged, or is merged against its documented rule (Result.Merge):
// a field without a rule below is a count, summed.
func TestResultMergeEveryField(t *testing.T) {
	t.Parallel()
	first := mergetest.First
	mergetest.Check(t, func(a, b *replay.Result) { a.Merge(b) }, map[string]mergetest.Rule{
		"BenchmarkID": first, "Generation.*": first, "ProfilingStart": first, "Deadline": first,
		"StartTime": mergetest.Min, "WarmupStart": mergetest.Min,
		"ProfilingEnd": mergetest.Max, "EndTime": mergetest.Max,
		"LastTTFT": mergetest.Max, "LastITL": mergetest.Max, "LastContent": mergetest.Max,
		"EndedEarly": mergetest.And, "Cancelled": mergetest.Or, "Killed": mergetest.Or,
		"Terminated": first, "PromptOverheadMax": mergetest.Larger,
		// Both aborted, r not by AbortShardStopped: r's abort stays.
		"Aborted": first, "AbortMessage": first, "EndReason": first,
		"SkippedSubagentRequests": first, "Flat.*": first, "StartTurns": first,
		"Subagents.Branches": first, "Subagents.Children": first, "Subagents.Requests": first,
		"Subagents.Dropped": first, "Subagents.DroppedRequests": first,
		"Schedule.Traces": first, "Schedule.Usable": first,
	})
}

func TestSubagentStatsMergeEveryField(t *testing.T) {
	t.Parallel()
	first := mergetest.First
	mergetest.Check(t, func(a, b *replay.SubagentStats) { a.Merge(*b) }, map[string]mergetest.Rule{
		"Branches": first, "Children": first, "Requests": first, "Dropped": first, "DroppedRequests": first,
	})
}

// TestResultMergeRules covers what the filled values of
// TestResultMergeEveryField cannot: unset times, flags that differ, the
// abort the other shards were stopped by, the first SIGTERM.
func TestResultMergeRules(t *testing.T) {
	t.Parallel()
	term := &replay.Terminated{Signal: "SIGTERM"}
	cases := []struct {
		name string
		a, b replay.Result
		want func(r *replay.Result) bool
	}{
		{"unset start takes the other's", replay.Result{}, replay.Result{StartTime: base(3)},
			func(r *replay.Result) bool { return r.StartTime.Equal(base(3)) }},
		{"set start is not replaced by an unset one", replay.Result{WarmupStart: base(3)}, replay.Result{},
			func(r *replay.Result) bool { return r.WarmupStart.Equal(base(3)) }},
		{"ended early only when both did", replay.Result{EndedEarly: true}, replay.Result{},
			func(r *replay.Result) bool { return !r.EndedEarly }},
		{"cancelled when either was", replay.Result{}, replay.Result{Cancelled: true, Killed: true},
			func(r *replay.Result) bool { return r.Cancelled && r.Killed }},
		{"the first SIGTERM", replay.Result{}, replay.Result{Terminated: term},
			func(r *replay.Result) bool { return r.Terminated == term }},
		{"an abort where there was none", replay.Result{EndReason: "deadline"}, replay.Result{Aborted: "x", AbortMessage: "m", EndReason: "aborted"},
			func(r *replay.Result) bool {
				return r.Aborted == "x" && r.AbortMessage == "m" && r.EndReason == "aborted"
			}},
		{"the cause over a shard stopped by it", replay.Result{Aborted: replay.AbortShardStopped, AbortMessage: "stopped"}, replay.Result{Aborted: "failed_request_threshold", AbortMessage: "cause"},
			func(r *replay.Result) bool {
				return r.Aborted == "failed_request_threshold" && r.AbortMessage == "cause"
			}},
		{"a shard stopped does not replace the cause", replay.Result{Aborted: "failed_request_threshold", AbortMessage: "cause"}, replay.Result{Aborted: replay.AbortShardStopped, AbortMessage: "stopped"},
			func(r *replay.Result) bool {
				return r.Aborted == "failed_request_threshold" && r.AbortMessage == "cause"
			}},
		{"accounting summed", replay.Result{Accounting: metrics.Accounting{Sent: 2, ProfilingOK: 2}}, replay.Result{Accounting: metrics.Accounting{Sent: 3, Cancelled: 3}},
			func(r *replay.Result) bool { return r.Accounting.Check() == nil && r.Accounting.Sent == 5 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a, b := c.a, c.b
			a.Merge(&b)
			if !c.want(&a) {
				t.Fatalf("merged %+v", a)
			}
		})
	}
}

func base(s int) time.Time { return time.Date(2026, 1, 2, 3, 4, s, 0, time.UTC) }
