package main

import (
	"math/rand/v2"

	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/scenario"
)

// applyScenario puts the AgentX generation into s with its defaults
// (run.Spec.ApplyGeneration), refuses the flags the generation has no use
// for (run.CheckGenerationSettings) and, under --scenario, lets the preset
// fill what the flags left unset and check its locks
// (run.Spec.ApplyScenario). Without --scenario the flags are taken as
// given.
func (r *profileRun) applyScenario(s *run.Spec) error {
	s.ApplyGeneration(r.generation, r.fs.Changed("trace-idle-gap-cap-seconds"), r.env.LiveAssistantSet)
	note, err := run.CheckGenerationSettings(r.generation, r.changed, r.preset != nil)
	if err != nil {
		return asUsage(err)
	}
	if note != "" {
		r.notes = append(r.notes, note)
	}
	if r.preset == nil {
		return nil
	}
	_, err = s.ApplyScenario(r.preset, r.given(s))
	return asUsage(err)
}

// changed says whether the flag was given.
func (r *profileRun) changed(flag string) bool { return r.fs.Lookup(flag) != nil && r.fs.Changed(flag) }

// given is the preset's view of what the user chose (the flags given:
// run.Spec.GivenSettings), with the source of an auto-filled seed.
func (r *profileRun) given(s *run.Spec) scenario.Settings {
	set := s.GivenSettings(r.changed)
	set.SeedSource = func() int64 { return rand.Int64N(1 << 31) }
	return set
}

// envGeneration is run.EnvGeneration.
const envGeneration = run.EnvGeneration
