package plan_test

import (
	"fmt"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/plan"
	"github.com/agentperf/agentperf/timing"
)

// ExampleBuild plans a small synthetic corpus with AgentX v1.0's rules and
// prints each trace's conversations (streams) with their turns, and the
// recorded request behind the root's first turn.
func ExampleBuild() {
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 1, Traces: 2, Subagents: true, MinTurns: 4, MaxTurns: 6})
	g, err := timing.LookupGeneration(timing.DefaultGeneration)
	if err != nil {
		panic(err)
	}
	for i, p := range plan.Build(traces, plan.Options{PlanOptions: timing.PlanOptions{Generation: g}}) {
		for si := range p.Streams {
			st := &p.Streams[si]
			fmt.Printf("%s (%s): %d turns\n", st.ConvID, st.Kind, len(st.Turns))
		}
		first := plan.Requests(&traces[i], &p.Streams[0])[0]
		fmt.Printf("  the root's first turn: %d tokens in, %d out\n", first.In, first.Out)
	}
	// Output:
	// synth_0000 (weka_main): 4 turns
	// synth_0000::sa:agent_001 (weka_subagent): 12 turns
	//   the root's first turn: 21014 tokens in, 336 out
	// synth_0001 (weka_main): 4 turns
	//   the root's first turn: 14804 tokens in, 97 out
}
