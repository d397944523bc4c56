package replay

import "time"

// Merge folds b, the Result of another shard of the same run (its times
// already on r's clock), into r, field by field:
//
//   - counts of what a shard did are summed: Accounting (Add), the
//     overflows, retries, fallbacks, missing usages and restart waits, the
//     profiling CPU time, the run counts of Subagents and Schedule
//     (SubagentStats.Merge, timing.Stats.Merge);
//   - what describes the run or its corpus, the same in every shard, is
//     r's (the first shard's): BenchmarkID, Generation, ProfilingStart
//     and Deadline (the common profiling start), SkippedSubagentRequests,
//     Flat, the corpus counts of Subagents and Schedule;
//   - StartTime and WarmupStart are the earliest set one; ProfilingEnd,
//     EndTime, LastTTFT, LastITL and LastContent the latest;
//     PromptOverheadMax the larger;
//   - EndedEarly holds when it holds for both; Cancelled and Killed when
//     either is; Terminated is the first set one;
//   - Aborted, AbortMessage and EndReason are r's, unless r was not
//     aborted, or only stopped by another shard (AbortShardStopped), and b
//     was aborted for another reason: the abort the others were stopped
//     by;
//   - StartTurns is r's: which lane of the run a shard's lane is belongs
//     to the caller (package run puts them in global order).
func (r *Result) Merge(b *Result) {
	if r.StartTime.IsZero() || !b.StartTime.IsZero() && b.StartTime.Before(r.StartTime) {
		r.StartTime = b.StartTime
	}
	if r.WarmupStart.IsZero() || !b.WarmupStart.IsZero() && b.WarmupStart.Before(r.WarmupStart) {
		r.WarmupStart = b.WarmupStart
	}
	for _, t := range []struct {
		dst *time.Time
		src time.Time
	}{
		{&r.ProfilingEnd, b.ProfilingEnd}, {&r.EndTime, b.EndTime},
		{&r.LastTTFT, b.LastTTFT}, {&r.LastITL, b.LastITL}, {&r.LastContent, b.LastContent},
	} {
		if t.src.After(*t.dst) {
			*t.dst = t.src
		}
	}
	r.ProfilingUserCPU += b.ProfilingUserCPU
	r.ProfilingSystemCPU += b.ProfilingSystemCPU
	r.EndedEarly = r.EndedEarly && b.EndedEarly
	r.Accounting.Add(b.Accounting)
	r.Cancelled = r.Cancelled || b.Cancelled
	r.Killed = r.Killed || b.Killed
	if r.Terminated == nil {
		r.Terminated = b.Terminated
	}
	if b.Aborted != "" && (r.Aborted == "" || r.Aborted == AbortShardStopped && b.Aborted != AbortShardStopped) {
		r.Aborted, r.AbortMessage, r.EndReason = b.Aborted, b.AbortMessage, b.EndReason
	}
	r.Subagents.Merge(b.Subagents)
	r.ProfilingOverflows += b.ProfilingOverflows
	r.WarmupOverflows += b.WarmupOverflows
	r.ResponseFallbacks += b.ResponseFallbacks
	r.PromptOverheadMax = max(r.PromptOverheadMax, b.PromptOverheadMax)
	r.MissingUsage += b.MissingUsage
	r.WarmupRetries += b.WarmupRetries
	r.ServerRestartWaits += b.ServerRestartWaits
	r.Schedule.Merge(b.Schedule)
}

// Merge folds b, another shard's subagent statistics, into s: the
// corpus's plans (Branches, Children, Requests, Dropped, DroppedRequests)
// are s's, the same in every shard; what the run did (Spawned, Started,
// Sent, Cut, SpawnedAtStart, StartedAtStart) is summed.
func (s *SubagentStats) Merge(b SubagentStats) {
	s.Spawned += b.Spawned
	s.Started += b.Started
	s.Sent += b.Sent
	s.Cut += b.Cut
	s.SpawnedAtStart += b.SpawnedAtStart
	s.StartedAtStart += b.StartedAtStart
}
