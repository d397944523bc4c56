package run

import (
	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// subagentMetadata is metadata.agentperf.subagents: what was done with
// the corpus's subagents.
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
		"branches_at_start":        sa.SpawnedAtStart,
		"children_at_start":        sa.StartedAtStart,
		"child_requests_sent":      sa.Sent,
	}
}

// scheduleMetadata is metadata.agentperf.schedule: the replay core's
// counters.
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
func datasetMetadata(id dataset.Identity, public bool) map[string]any {
	// source_type is aiperf's name for where the corpus came from
	// (InferenceX copies the block verbatim); agentperf's own is in
	// "source".
	st := id.SourceType
	if public {
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

// tokenizerMetadata is metadata.agentperf.tokenizer: the tokenizer used
// and where it came from.
func tokenizerMetadata(o tokenizer.Origin, syn *prompttext.Synthesizer) map[string]any {
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

// clientCPUMetadata is metadata.agentperf.client_cpu: the process's CPU
// time in the profiling phase, and per profiling request sent.
func clientCPUMetadata(res *replay.Result) map[string]any {
	m := map[string]any{
		"profiling_user_s":   res.ProfilingUserCPU.Seconds(),
		"profiling_system_s": res.ProfilingSystemCPU.Seconds(),
	}
	if n := res.Schedule.Sent[1]; n > 0 {
		m["per_profiling_request_us"] = float64((res.ProfilingUserCPU + res.ProfilingSystemCPU).Microseconds()) / float64(n)
	}
	return m
}
