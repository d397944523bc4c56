package scenario_test

import (
	"fmt"
	"time"

	"github.com/agentperf/agentperf/scenario"
)

// The InferenceX command line under the AgentX preset, then a short smoke
// run that needs --unsafe-override.
func ExamplePreset_Enforce() {
	p, err := scenario.Lookup("inferencex-agentx-mvp@v0.2")
	if err != nil {
		panic(err)
	}
	s := scenario.Settings{
		Streaming:         scenario.Some(true),
		Concurrency:       []int{64},
		BenchmarkDuration: scenario.Some(3600 * time.Second),
		RandomSeed:        scenario.Some(int64(42)),
		Loader:            scenario.LoaderPublic,
		PublicDataset:     "semianalysis_cc_traces_weka_062126",
	}
	reasons, err := p.Enforce(&s)
	fmt.Println(reasons, err, s.CacheBust.V, s.InterTurnDelayCap.V)

	s.BenchmarkDuration = scenario.Some(120 * time.Second)
	_, err = p.Enforce(&s)
	fmt.Println(err != nil)
	s.UnsafeOverride = true
	reasons, err = p.Enforce(&s)
	fmt.Println(reasons, err)
	// Output:
	// [] <nil> first_turn_prefix 1m0s
	// true
	// [unsafe_override] <nil>
}

func ExampleClassifier_IsOverflow() {
	c, err := scenario.ClassifierFromEnv(func(string) string { return "" }) // defaults
	if err != nil {
		panic(err)
	}
	fmt.Println(c.IsOverflow([]byte(`{"error":{"message":"This model's maximum context length is 131072 tokens. However, your request has 140000 input tokens.","type":"BadRequestError","code":400}}`)))
	fmt.Println(c.IsOverflow([]byte(`{"error":{"message":"internal error","code":500}}`)))
	// Output:
	// true
	// false
}

func ExampleMarker() {
	fmt.Println(scenario.Marker("bench-1", 0, 3, "trace-1::sa:explore_001"))
	// Output: [rid:b97fa3db8491]
}

func ExampleJudge() {
	v := scenario.Judge(scenario.JudgeInput{
		Overflows: 101, Responses: 10000, Completed: 9800,
		Coverage: scenario.Coverage{Required: scenario.RequiredCoverage, MinPhase: 900 * time.Second, Phase: time.Hour, TTFT: 0.999, ITL: 0.999},
	})
	fmt.Println(v.Valid, v.Reasons)
	// Output: false [context_overflow_rate_exceeded]
}
