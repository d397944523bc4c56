package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
)

// applyScenario builds scenario.Settings from the flags, lets the preset
// (when --scenario is given) fill defaults and check its locks, and copies
// the result back. Without --scenario the flags are taken as given.
func (r *profileRun) applyScenario() error {
	p, fs := r.p, r.fs
	s := &scenario.Settings{
		TimingMode:     scenario.TimingAgenticReplay,
		UnsafeOverride: p.unsafeOverride || r.env.unsafeOverride,
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
			return usagef("--extra-inputs %s: %v", e.Key, err)
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

	if p.scenario == "" {
		// No preset: the flags are the settings; the legacy defaults apply.
		r.scenario = ""
		if !fs.Changed("cache-bust") {
			r.cacheBust = scenario.CacheBustNone
		}
		return nil
	}
	preset, err := scenario.Lookup(p.scenario)
	if err != nil {
		return asUsage(err)
	}
	reasons, err := preset.Enforce(s)
	if err != nil {
		return asUsage(err)
	}
	r.scenario = preset.Name
	r.validity = reasons
	r.streaming = s.Streaming.V
	r.ignoreEOS = s.IgnoreEOS.V
	r.cacheBust = s.CacheBust.V
	r.duration = s.BenchmarkDuration.V
	r.seed = s.RandomSeed.V
	r.delayCap = s.InterTurnDelayCap.V
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

func (r *profileRun) describeScenario() string {
	if r.scenario == "" {
		return "none"
	}
	return fmt.Sprintf("%s (%d defaults filled)", r.scenario, len(r.filled))
}
