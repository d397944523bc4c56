package replay_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// countSink counts the records it receives.
type countSink struct {
	mu           sync.Mutex
	warmup, prof int
}

func (s *countSink) Add(r *metrics.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Phase == metrics.PhaseWarmup {
		s.warmup++
	} else {
		s.prof++
	}
}

// ExampleRun replays a small synthetic corpus against the in-process
// simulator and checks that every request is accounted for.
func ExampleRun() {
	srvCfg := sim.DefaultConfig()
	srvCfg.Model = "demo"
	srvCfg.ZeroLatency = true
	srv, err := sim.New(srvCfg)
	if err != nil {
		panic(err)
	}
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Close()

	syn, err := prompttext.New(tokenizer.Builtin(), prompttext.Options{Seed: 42})
	if err != nil {
		panic(err)
	}
	sink := &countSink{}
	cfg := replay.DefaultConfig() // AgentX v1.0 semantics and every other default
	cfg.URL = srv.URL
	cfg.Models = []string{"demo"}
	cfg.Traces = dataset.Synthesize(dataset.SynthOptions{Seed: 1, Traces: 4, MinTurns: 6, MaxTurns: 12, TimeScale: 0.001})
	cfg.Synth = syn
	cfg.Concurrency = 2
	cfg.Seed = 42
	cfg.BenchmarkDuration = 500 * time.Millisecond
	cfg.Streaming = true
	cfg.UseServerTokenCount = true
	cfg.Classifier = scenario.DefaultClassifier() // the preset's context-overflow texts
	cfg.Sink = sink
	res, err := replay.Run(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	fmt.Println("warmup records:", sink.warmup)
	fmt.Println("profiling records > 0:", sink.prof > 0)
	fmt.Println("accounting adds up:", res.Accounting.Check() == nil && res.Accounting.Sent == sink.warmup+sink.prof) // overflow records go to Sink too when Config.Overflows is nil
	// Output:
	// warmup records: 2
	// profiling records > 0: true
	// accounting adds up: true
}
