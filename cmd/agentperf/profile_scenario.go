package main

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/timing"
)

// applyScenario puts the AgentX generation into s with its defaults
// (run.Spec.ApplyGeneration) and, under --scenario, lets the preset
// fill what the flags left unset and check its locks
// (run.Spec.ApplyScenario). Without --scenario the flags are taken as
// given.
func (r *profileRun) applyScenario(s *run.Spec) error {
	s.ApplyGeneration(r.generation, r.fs.Changed("trace-idle-gap-cap-seconds"), r.env.LiveAssistantSet)
	if err := r.checkGenerationFlags(r.generation); err != nil {
		return err
	}
	if r.preset == nil {
		return nil
	}
	_, err := s.ApplyScenario(r.preset, r.given(s))
	return asUsage(err)
}

// given is the preset's view of what the user chose (the flags given:
// run.Spec.GivenSettings), with the source of an auto-filled seed.
func (r *profileRun) given(s *run.Spec) scenario.Settings {
	set := s.GivenSettings(func(f string) bool { return r.fs.Lookup(f) != nil && r.fs.Changed(f) })
	set.SeedSource = func() int64 { return rand.Int64N(1 << 31) }
	return set
}

// envGeneration is run.EnvGeneration.
const envGeneration = run.EnvGeneration

// cacheWarmupFlags are the flags of the accelerated cache warmup and its
// runtime caps (timing.Settings.CacheWarmup: v1.0).
var cacheWarmupFlags = []string{"warmup-requests-per-lane", "agentic-cache-warmup-duration", "agentic-warmup-grace-period",
	"system-idle-gap-cap-seconds", "burst-phase-starts", "allow-dataset-wrap"}

// checkGenerationFlags refuses flags whose effect the generation does not
// have (timing.Generation.Takes), and notes the ones it ignores.
func (r *profileRun) checkGenerationFlags(g timing.Generation) error {
	fs := r.fs
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
