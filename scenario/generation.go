package scenario

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentperf/agentperf/timing"
)

// Generation is one AgentX generation: the replay semantics InferenceX ran
// during one period, and the defaults it set around them. docs/replay.md
// has the rules of each.
type Generation struct {
	// Name is the selector value: "v0.2", "v0.3", "v0.3-early".
	Name string
	// Replay is the replay core's generation.
	Replay timing.Generation
	// TurnStart starts every lane at a sampled start turn k_i (instead of
	// a t* snapshot).
	TurnStart bool
	// LiveAssistant is InferenceX's AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES
	// of the period: the default when the variable is not set.
	LiveAssistant bool
	// Doc says what the generation is, in one line.
	Doc string
}

// The generations, oldest first. DefaultGeneration is the newest one built.
var generations = []Generation{
	{Name: "v0.2", Replay: timing.V02, TurnStart: true, LiveAssistant: true,
		Doc: "InferenceX v0.2 (2026-05-17): parent requests only, think-time delays capped at 60 s, start turn k_i, FIFO recycle, live assistant replies"},
	{Name: "v0.3-early", Replay: timing.V03, TurnStart: true, LiveAssistant: true,
		Doc: "InferenceX v0.3 as first run (2026-05-20 to 05-26, the Kimi MI355X LMCache run): session trees, 60 s trace idle-gap warp, start turn k_i, live assistant replies"},
	{Name: "v0.3", Replay: timing.V03,
		Doc: "InferenceX v0.3 at its main-line merge (2026-05-27 to 06-02): session trees, 60 s trace idle-gap warp, t* snapshot start, pre-canned assistant text"},
	{Name: "v1.0", Replay: timing.V10,
		Doc: "InferenceX v1.0 and today (aiperf 754356e9): t* snapshots, one-token primers, per-lane cache warmup, end-to-start delays, 10 s system idle cap, replay barriers, sampler recycle"},
}

// DefaultGeneration is the generation used when none is selected: the
// one InferenceX runs today.
const DefaultGeneration = "v1.0"

// ErrUnknownGeneration is wrapped by LookupGeneration's error.
var ErrUnknownGeneration = errors.New("unknown AgentX generation")

// LookupGeneration returns the generation called name ("" is
// DefaultGeneration).
func LookupGeneration(name string) (Generation, error) {
	if name == "" {
		name = DefaultGeneration
	}
	for _, g := range generations {
		if g.Name == name {
			return g, nil
		}
	}
	return Generation{}, fmt.Errorf("%w %q; known: %s", ErrUnknownGeneration, name, strings.Join(GenerationNames(), ", "))
}

// Generations returns every generation, oldest first.
func Generations() []Generation { return append([]Generation(nil), generations...) }

// GenerationNames returns the selector values, oldest first.
func GenerationNames() []string {
	out := make([]string, len(generations))
	for i, g := range generations {
		out[i] = g.Name
	}
	return out
}

// SplitScenario splits a --scenario value "name@generation" into its
// parts; without "@" the generation is "".
func SplitScenario(v string) (name, generation string) {
	name, generation, _ = strings.Cut(v, "@")
	return name, generation
}
