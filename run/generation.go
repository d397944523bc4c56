package run

import (
	"fmt"
	"strings"

	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/timing"
)

// EnvGeneration selects the AgentX generation when neither --scenario
// NAME@GEN nor --agentx-generation does: an InferenceX command line then
// runs unchanged with the semantics of its period.
const EnvGeneration = "AGENTPERF_AGENTX_GENERATION"

// GenerationChoice is how the AgentX generation of a run (or of `dataset
// plan`) was asked for. Resolve turns it into the generation, the same way
// for every command.
type GenerationChoice struct {
	// Scenario is --scenario NAME[@GEN] ("" = none).
	Scenario string
	// Flag is --agentx-generation ("" = not given).
	Flag string
	// Env is $AGENTPERF_AGENTX_GENERATION ("" = unset).
	Env string
}

// Resolve returns the scenario preset (nil without one) and the AgentX
// generation: the flag and the environment must agree; the name they give
// selects the preset's generation (scenario.LookupAt) or, without a
// scenario, the generation itself; none gives the default (the preset's,
// or timing.DefaultGeneration). Its errors are input errors.
func (c GenerationChoice) Resolve() (*scenario.Preset, timing.Generation, error) {
	name := c.Flag
	switch {
	case c.Flag != "" && c.Env != "" && c.Flag != c.Env:
		return nil, timing.Generation{}, fmt.Errorf("--agentx-generation %s and %s=%s disagree: set the AgentX generation once", c.Flag, EnvGeneration, c.Env)
	case c.Flag == "":
		name = c.Env
	}
	if name != "" {
		if _, err := timing.LookupGeneration(name); err != nil {
			return nil, timing.Generation{}, fmt.Errorf("AgentX generation: %v", err)
		}
	}
	if c.Scenario != "" {
		p, err := scenario.LookupAt(c.Scenario, name)
		if err != nil {
			return nil, timing.Generation{}, err
		}
		return p, p.Generation, nil
	}
	g, err := timing.LookupGeneration(name)
	return nil, g, err
}

// ApplyGeneration puts g into s and fills the settings whose default
// depends on the generation, where the caller left them unset: the trace
// idle-gap cap (v0.3's 60 s warp; v1.0's runtime cap is off by default)
// unless idleCapGiven, and live assistant replies unless the environment
// set them (Environment.LiveAssistantSet). The start ratios keep their
// defaults in every generation (a preset may lock others: ApplyScenario).
func (s *Spec) ApplyGeneration(g timing.Generation, idleCapGiven, liveAssistantSet bool) {
	s.Replay.Generation = g
	if !idleCapGiven && g.DefaultTraceIdleGapCap > 0 {
		s.Replay.TraceIdleGapCap = g.DefaultTraceIdleGapCap
	}
	if !liveAssistantSet {
		s.Replay.LiveAssistant = g.LiveAssistant
	}
}

// PlanOptions are the options the replay plans of s are built with: its
// generation and the caps of its delay rule (the per-turn delay cap only
// where the generation takes one).
func (s *Spec) PlanOptions() timing.PlanOptions {
	c := &s.Replay
	o := timing.PlanOptions{Generation: c.Generation, IdleGapCap: c.TraceIdleGapCap}
	if c.Generation.Takes.InterTurnDelayCap {
		o.InterTurnDelayCap = c.InterTurnDelayCap
	}
	return o
}

// generationWarmupFlags are the flags of v1.0's cache warmup and idle
// rules, which no earlier generation has.
var generationWarmupFlags = []string{"warmup-requests-per-lane", "agentic-cache-warmup-duration", "agentic-warmup-grace-period",
	"system-idle-gap-cap-seconds", "burst-phase-starts", "allow-dataset-wrap"}

// CheckGenerationSettings refuses the settings given (given(flag)) that
// generation g has no use for, naming their flags: v1.0's warmup and
// idle flags before v1.0, the trace idle-gap cap in v0.2, the per-turn
// delay cap after v0.2 outside a preset. A per-turn delay cap given to a
// generation that warps idle gaps (a preset's command line may carry it)
// is not refused: note says it has no effect.
func CheckGenerationSettings(g timing.Generation, given func(flag string) bool, underPreset bool) (note string, err error) {
	if !g.Takes.CacheWarmup {
		var bad []string
		for _, f := range generationWarmupFlags {
			if given(f) {
				bad = append(bad, "--"+f)
			}
		}
		if len(bad) > 0 {
			return "", fmt.Errorf("%s: AgentX %s has no such mechanism (they belong to v1.0); drop them or select --agentx-generation v1.0", strings.Join(bad, ", "), g.Name)
		}
	}
	if given("trace-idle-gap-cap-seconds") && !g.Takes.TraceIdleGapCap {
		return "", fmt.Errorf("--trace-idle-gap-cap-seconds: AgentX %s has no trace idle-gap cap (its delays are think times capped per turn by --inter-turn-delay-cap-seconds); drop the flag or select v0.3 or later", g.Name)
	}
	if given("inter-turn-delay-cap-seconds") && !g.Takes.InterTurnDelayCap {
		switch {
		case g.IdleWarp:
			return fmt.Sprintf("--inter-turn-delay-cap-seconds has no effect in AgentX %s: its delays come from the trace idle-gap warp (--trace-idle-gap-cap-seconds)", g.Name), nil
		case !underPreset:
			return "", fmt.Errorf("--inter-turn-delay-cap-seconds: AgentX %s has no per-turn delay cap (its delays are the recorded end-to-start gaps, bounded at run time by --trace-idle-gap-cap-seconds and --system-idle-gap-cap-seconds); drop the flag or select v0.2", g.Name)
		}
	}
	return "", nil
}
