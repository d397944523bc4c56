package run

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/timing"
)

// TestGenerationChoice: profile and `dataset plan` resolve the AgentX
// generation through one function; the flag and the environment must
// agree, a scenario's @GEN or the name picks the preset's generation.
func TestGenerationChoice(t *testing.T) {
	for _, tc := range []struct {
		c       GenerationChoice
		want    string // generation name, or the error's text
		preset  bool
		wantErr bool
	}{
		{c: GenerationChoice{}, want: timing.DefaultGeneration},
		{c: GenerationChoice{Flag: "v0.2"}, want: "v0.2"},
		{c: GenerationChoice{Env: "v0.3"}, want: "v0.3"},
		{c: GenerationChoice{Flag: "v0.3", Env: "v0.3"}, want: "v0.3"},
		{c: GenerationChoice{Flag: "v0.2", Env: "v0.3"}, want: "--agentx-generation v0.2 and AGENTPERF_AGENTX_GENERATION=v0.3 disagree", wantErr: true},
		{c: GenerationChoice{Flag: "v9"}, want: "AgentX generation: ", wantErr: true},
		{c: GenerationChoice{Scenario: "inferencex-agentx-mvp", Env: "v0.2"}, want: "v0.2", preset: true},
		{c: GenerationChoice{Scenario: "inferencex-agentx-mvp@v0.3"}, want: "v0.3", preset: true},
		{c: GenerationChoice{Scenario: "no-such-preset"}, want: "no-such-preset", wantErr: true},
	} {
		p, g, err := tc.c.Resolve()
		switch {
		case tc.wantErr:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v: error %v, want one containing %q", tc.c, err, tc.want)
			}
		case err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case g.Name != tc.want || (p != nil) != tc.preset:
			t.Errorf("%+v: generation %s preset %v, want %s preset %v", tc.c, g.Name, p != nil, tc.want, tc.preset)
		case p != nil && p.Generation.Name != g.Name:
			t.Errorf("%+v: the preset's generation %s is not the one returned (%s)", tc.c, p.Generation.Name, g.Name)
		}
	}
}

// TestApplyGeneration: the generation's defaults fill what was not given,
// and the plan options follow the generation's delay rule.
func TestApplyGeneration(t *testing.T) {
	s := NewSpec()
	s.ApplyGeneration(timing.V03, false, false)
	if s.Replay.TraceIdleGapCap != timing.DefaultV03IdleGapCap || s.Replay.LiveAssistant != timing.V03.LiveAssistant {
		t.Errorf("v0.3: idle-gap cap %v live %v, want the generation's %v %v", s.Replay.TraceIdleGapCap, s.Replay.LiveAssistant, timing.DefaultV03IdleGapCap, timing.V03.LiveAssistant)
	}
	if o := s.PlanOptions(); o.IdleGapCap != timing.DefaultV03IdleGapCap || o.InterTurnDelayCap != 0 || o.Generation.Name != "v0.3" {
		t.Errorf("v0.3 plan options %+v: want the idle-gap cap and no per-turn cap", o)
	}
	s = NewSpec()
	s.Replay.TraceIdleGapCap = 5 * time.Second
	s.Replay.LiveAssistant = !timing.V03.LiveAssistant
	s.ApplyGeneration(timing.V03, true, true)
	if s.Replay.TraceIdleGapCap != 5*time.Second || s.Replay.LiveAssistant == timing.V03.LiveAssistant {
		t.Errorf("given values replaced: idle-gap cap %v live %v", s.Replay.TraceIdleGapCap, s.Replay.LiveAssistant)
	}
	s = NewSpec()
	s.ApplyGeneration(timing.V02, false, false)
	if o := s.PlanOptions(); o.InterTurnDelayCap != timing.DefaultInterTurnDelayCap {
		t.Errorf("v0.2 plan options %+v: want the default per-turn cap", o)
	}
}

// TestCheckGenerationSettings: a flag the generation has no use for is
// refused by name, or noted when a preset's command line may carry it.
func TestCheckGenerationSettings(t *testing.T) {
	gen := func(name string) timing.Generation {
		g, err := timing.LookupGeneration(name)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	for _, c := range []struct {
		gen    string
		flags  []string
		preset bool
		err    string // "" = accepted
		note   string
	}{
		{gen: "v1.0", flags: []string{"warmup-requests-per-lane", "burst-phase-starts", "trace-idle-gap-cap-seconds"}},
		{gen: "v0.3", flags: []string{"warmup-requests-per-lane", "allow-dataset-wrap"}, err: "--warmup-requests-per-lane, --allow-dataset-wrap: AgentX v0.3 has no such mechanism"},
		{gen: "v0.2", flags: []string{"trace-idle-gap-cap-seconds"}, err: "--trace-idle-gap-cap-seconds: AgentX v0.2 has no trace idle-gap cap"},
		{gen: "v0.2", flags: []string{"inter-turn-delay-cap-seconds"}},
		{gen: "v1.0", flags: []string{"inter-turn-delay-cap-seconds"}, err: "--inter-turn-delay-cap-seconds: AgentX v1.0 has no per-turn delay cap"},
		{gen: "v1.0", flags: []string{"inter-turn-delay-cap-seconds"}, preset: true},
		{gen: "v0.3", flags: []string{"inter-turn-delay-cap-seconds"}, note: "--inter-turn-delay-cap-seconds has no effect in AgentX v0.3"},
	} {
		given := func(f string) bool { return slices.Contains(c.flags, f) }
		note, err := CheckGenerationSettings(gen(c.gen), given, c.preset)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s %v: refused: %v", c.gen, c.flags, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s %v: error %v, want %q", c.gen, c.flags, err, c.err)
		case !strings.HasPrefix(note, c.note) || (c.note == "") != (note == ""):
			t.Errorf("%s %v: note %q, want %q", c.gen, c.flags, note, c.note)
		}
	}
}
