package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/timing"
)

// applyScenario builds scenario.Settings from the flags, lets the preset
// (when --scenario is given) fill defaults and check its locks, and copies
// the result back. Without --scenario the flags are taken as given.
func (r *profileRun) applyScenario() error {
	p := r.p
	s, err := r.scenarioSettings()
	if err != nil {
		return err
	}
	if p.scenario == "" {
		// No preset: the flags are the settings; the defaults of the
		// generation apply.
		g, err := timing.LookupGeneration(r.generationName)
		if err != nil {
			return asUsage(err)
		}
		r.generation = g
		r.scenario = ""
		if !r.fs.Changed("cache-bust") {
			r.cacheBust = scenario.CacheBustNone
		}
		r.generationDefaults()
		return r.checkGenerationFlags()
	}
	preset, err := scenario.LookupAt(p.scenario, r.generationName)
	if err != nil {
		return asUsage(err)
	}
	r.generation = preset.Generation
	r.generationDefaults()
	if err := r.checkGenerationFlags(); err != nil {
		return err
	}
	reasons, err := preset.Enforce(s)
	if err != nil {
		return asUsage(err)
	}
	r.scenario = preset.Name
	r.validity = reasons
	return r.takeSettings(s)
}

// scenarioSettings is scenario.Settings as the flags give them: an Opt is
// set where the user passed its flag.
func (r *profileRun) scenarioSettings() (*scenario.Settings, error) {
	p, fs := r.p, r.fs
	s := &scenario.Settings{
		TimingMode:     scenario.TimingAgenticReplay,
		UnsafeOverride: p.unsafeOverride || r.env.UnsafeOverride,
	}
	if fs.Changed("streaming") {
		s.Streaming = scenario.Some(p.streaming)
	}
	if fs.Changed("ignore-eos") {
		s.IgnoreEOS = scenario.Some(p.ignoreEOS)
	}
	for _, e := range r.extra {
		var v any
		if err := json.Unmarshal(e.Value, &v); err != nil {
			return nil, usagef("--extra-inputs %s: %v", e.Key, err)
		}
		s.ExtraInputs = append(s.ExtraInputs, scenario.ExtraInput{Key: e.Key, Value: v})
	}
	if fs.Changed("cache-bust") {
		s.CacheBust = scenario.Some(r.cacheBust)
	}
	if fs.Changed("benchmark-duration") {
		s.BenchmarkDuration = scenario.Some(r.duration)
	}
	s.Concurrency = []int{r.concurrency}
	if fs.Changed("random-seed") {
		s.RandomSeed = scenario.Some(p.seed)
	}
	s.SeedSource = func() int64 { return rand.Int64N(1 << 31) }
	if fs.Changed("inter-turn-delay-cap-seconds") {
		s.InterTurnDelayCap = scenario.Some(r.delayCap)
	}
	if fs.Changed("trace-idle-gap-cap-seconds") {
		s.TraceIdleGapCap = scenario.Some(r.idleGapCap)
	}
	if fs.Changed("system-idle-gap-cap-seconds") {
		s.SystemIdleGapCap = scenario.Some(r.sysIdleCap)
	}
	if fs.Changed("use-server-token-count") {
		s.UseServerTokenCount = scenario.Some(p.serverTokens)
	}
	if fs.Changed("trajectory-start-min-ratio") {
		s.TrajectoryMinRatio = scenario.Some(p.startMin)
	}
	if fs.Changed("trajectory-start-max-ratio") {
		s.TrajectoryMaxRatio = scenario.Some(p.startMax)
	}
	s.Loader, s.PublicDataset, s.HFDataset = p.data.loaderKind()
	return s, nil
}

// takeSettings copies the settings a preset filled and checked back into
// the run.
func (r *profileRun) takeSettings(s *scenario.Settings) error {
	p := r.p
	r.streaming = s.Streaming.V
	r.ignoreEOS = s.IgnoreEOS.V
	r.cacheBust = s.CacheBust.V
	r.duration = s.BenchmarkDuration.V
	r.seed = s.RandomSeed.V
	if s.InterTurnDelayCap.Set {
		r.delayCap = s.InterTurnDelayCap.V
	}
	if s.TraceIdleGapCap.Set {
		r.idleGapCap = s.TraceIdleGapCap.V
	}
	if s.SystemIdleGapCap.Set {
		r.sysIdleCap = s.SystemIdleGapCap.V
	}
	r.serverTok = s.UseServerTokenCount.V
	if s.TrajectoryMinRatio.Set {
		p.startMin = s.TrajectoryMinRatio.V
	}
	if s.TrajectoryMaxRatio.Set {
		p.startMax = s.TrajectoryMaxRatio.V
	}
	r.extra = r.extra[:0]
	for _, e := range s.ExtraInputs {
		b, err := json.Marshal(e.Value)
		if err != nil {
			return usagef("--extra-inputs %s: %v", e.Key, err)
		}
		r.extra = append(r.extra, replay.ExtraInput{Key: e.Key, Value: b})
	}
	r.filled = s.Filled
	return nil
}

// envGeneration selects the AgentX generation when neither --scenario
// NAME@GEN nor --agentx-generation does: an InferenceX command line then
// runs unchanged with the semantics of its period.
const envGeneration = "AGENTPERF_AGENTX_GENERATION"

// generationDefaults fills the settings whose default depends on the
// generation, where the flags left them unset: the trace idle-gap cap
// (v0.3's 60 s warp; v1.0's runtime cap is off by default). Outside a
// scenario the start ratios keep the flags' 0.25/0.75 in every generation.
func (r *profileRun) generationDefaults() {
	if !r.fs.Changed("trace-idle-gap-cap-seconds") && r.generation.DefaultTraceIdleGapCap > 0 {
		r.idleGapCap = r.generation.DefaultTraceIdleGapCap
	}
}

// cacheWarmupFlags are the flags of the accelerated cache warmup and its
// runtime caps (timing.Settings.CacheWarmup: v1.0).
var cacheWarmupFlags = []string{"warmup-requests-per-lane", "agentic-cache-warmup-duration", "agentic-warmup-grace-period",
	"system-idle-gap-cap-seconds", "burst-phase-starts", "allow-dataset-wrap"}

// checkGenerationFlags refuses flags whose effect the selected generation
// does not have, and notes the ones it ignores.
func (r *profileRun) checkGenerationFlags() error {
	fs := r.fs
	g := r.generation
	if !g.Takes.CacheWarmup {
		var bad []string
		for _, f := range cacheWarmupFlags {
			if fs.Changed(f) {
				bad = append(bad, "--"+f)
			}
		}
		if len(bad) > 0 {
			return usagef("%s: AgentX %s has no such mechanism (they belong to v1.0); drop them or select --agentx-generation v1.0", strings.Join(bad, ", "), g.Name)
		}
	}
	// The per-turn delay cap and the trace idle-gap cap exist where the
	// generation's delay rule has them.
	if fs.Changed("trace-idle-gap-cap-seconds") && !g.Takes.TraceIdleGapCap {
		return usagef("--trace-idle-gap-cap-seconds: AgentX %s has no trace idle-gap cap (its delays are think times capped per turn by --inter-turn-delay-cap-seconds); drop the flag or select v0.3 or later", g.Name)
	}
	if fs.Changed("inter-turn-delay-cap-seconds") && !g.Takes.InterTurnDelayCap {
		switch {
		case g.IdleWarp:
			r.notes = append(r.notes, fmt.Sprintf("--inter-turn-delay-cap-seconds has no effect in AgentX %s: its delays come from the trace idle-gap warp (--trace-idle-gap-cap-seconds)", g.Name))
		case r.p.scenario == "":
			return usagef("--inter-turn-delay-cap-seconds: AgentX %s has no per-turn delay cap (its delays are the recorded end-to-start gaps, bounded at run time by --trace-idle-gap-cap-seconds and --system-idle-gap-cap-seconds); drop the flag or select v0.2", g.Name)
		}
	}
	return nil
}
