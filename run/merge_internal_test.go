package run

import (
	"testing"
	"time"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
)

// TestMergeResultsCountsEveryShard: the merged Result sums what each
// shard counted, the figures the hand-written merge used to drop included
// (response fallbacks, missing usage, restart waits, profiling CPU time,
// the SIGTERM), puts each shard's times on shard 0's clock, prefixes the
// abort with its shard and places the start turns by global lane.
func TestMergeResultsCountsEveryShard(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	term := &replay.Terminated{Signal: "SIGTERM", Grace: time.Second}
	shard := func(i int, shift int64, r replay.Result) *shardDir {
		return &shardDir{m: &ShardManifest{Index: i, Count: 2, Result: &r, Finish: &shardFinish{Concurrency: 4}}, shift: shift}
	}
	s0 := shard(0, 0, replay.Result{StartTime: at.Add(time.Second), EndTime: at.Add(time.Minute), EndedEarly: true,
		Accounting: metrics.Accounting{Sent: 3, ProfilingOK: 3}, ResponseFallbacks: 1, MissingUsage: 2, ServerRestartWaits: 1,
		ProfilingUserCPU: time.Second, StartTurns: []int{5, 6}, EndReason: "deadline"})
	s1 := shard(1, int64(-2*time.Second), replay.Result{StartTime: at.Add(2 * time.Second), EndTime: at.Add(2 * time.Minute), EndedEarly: true,
		Accounting: metrics.Accounting{Sent: 4, ProfilingOK: 3, ProfilingErrors: 1}, ResponseFallbacks: 2, MissingUsage: 1, ServerRestartWaits: 2,
		ProfilingUserCPU: 2 * time.Second, ProfilingSystemCPU: time.Second, Terminated: term, Cancelled: true,
		Aborted: "failed_request_threshold", AbortMessage: "too many", EndReason: "aborted", StartTurns: []int{7, 8}})
	got := mergeResults([]*shardDir{s0, s1})
	want := metrics.Accounting{Sent: 7, ProfilingOK: 6, ProfilingErrors: 1}
	switch {
	case got.Accounting != want:
		t.Errorf("Accounting = %+v, want %+v", got.Accounting, want)
	case got.ResponseFallbacks != 3 || got.MissingUsage != 3 || got.ServerRestartWaits != 3:
		t.Errorf("fallbacks, missing usage, restart waits = %d, %d, %d, want 3, 3, 3", got.ResponseFallbacks, got.MissingUsage, got.ServerRestartWaits)
	case got.ProfilingUserCPU != 3*time.Second || got.ProfilingSystemCPU != time.Second:
		t.Errorf("CPU = %v user, %v system, want 3s, 1s", got.ProfilingUserCPU, got.ProfilingSystemCPU)
	case got.Terminated != term || !got.Cancelled:
		t.Errorf("Terminated = %v, Cancelled = %v, want shard 1's SIGTERM", got.Terminated, got.Cancelled)
	case !got.StartTime.Equal(at) || !got.EndTime.Equal(at.Add(2*time.Minute-2*time.Second)):
		t.Errorf("StartTime, EndTime = %v, %v: shard 1's times must be shifted onto shard 0's clock", got.StartTime, got.EndTime)
	case got.Aborted != "failed_request_threshold" || got.AbortMessage != "shard 1/2: too many" || got.EndReason != "aborted" || got.EndedEarly:
		t.Errorf("abort = %q %q %q, ended early %v", got.Aborted, got.AbortMessage, got.EndReason, got.EndedEarly)
	case len(got.StartTurns) != 4 || got.StartTurns[0] != 5 || got.StartTurns[1] != 7 || got.StartTurns[2] != 6 || got.StartTurns[3] != 8:
		t.Errorf("StartTurns = %v, want [5 7 6 8] (lane g of shard i is its lane (g-i)/n)", got.StartTurns)
	}
	if s1.m.Result.AbortMessage != "too many" || !s1.m.Result.StartTime.Equal(at.Add(2*time.Second)) {
		t.Errorf("mergeResults changed a shard's Result: %+v", s1.m.Result)
	}
}
