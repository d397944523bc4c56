package timing_test

import (
	"fmt"
	"time"

	"github.com/agentperf/agentperf/timing"
)

// A two-lane replay driven by a fake clock: warmup, the barrier, profiling,
// and a recycle when a trace runs out of turns.
func ExampleScheduler() {
	traces := []timing.TraceInfo{
		{ID: "a", Turns: 3, Delays: []time.Duration{0, 5 * time.Second, 2 * time.Second}},
		{ID: "b", Turns: 2, Delays: []time.Duration{0, time.Second}},
		{ID: "c", Turns: 2, Delays: []time.Duration{0, time.Second}},
	}
	cfg := timing.DefaultConfig()
	cfg.Lanes = 2
	cfg.Seed = 42
	cfg.Duration = 30 * time.Minute
	s, err := timing.New(cfg, traces)
	if err != nil {
		panic(err)
	}
	for _, w := range s.Warmup() {
		fmt.Printf("warmup  lane %d: trace %s turn %d\n", w.Lane, traces[w.Trace].ID, w.Turn)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range s.StartProfiling(start) {
		fmt.Printf("profile lane %d: trace %s turn %d at +%v\n", p.Lane, traces[p.Trace].ID, p.Turn, p.At.Sub(start))
	}
	// Lane 1 finished trace b's last turn 3 s in: it recycles to c at once.
	next, _ := s.Next(1, timing.Outcome{}, start.Add(3*time.Second))
	fmt.Printf("next    lane %d: trace %s turn %d at +%v new session %v\n", next.Lane, traces[next.Trace].ID, next.Turn, next.At.Sub(start), next.NewSession)
	// Output:
	// warmup  lane 0: trace a turn 1
	// warmup  lane 1: trace b turn 0
	// profile lane 0: trace a turn 2 at +0s
	// profile lane 1: trace b turn 1 at +0s
	// next    lane 1: trace c turn 0 at +3s new session true
}
