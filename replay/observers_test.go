package replay_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// phaseRecorder writes down the phase changes it is told about.
type phaseRecorder struct {
	mu     sync.Mutex
	events []string
}

func (p *phaseRecorder) add(format string, args ...any) {
	p.mu.Lock()
	p.events = append(p.events, fmt.Sprintf(format, args...))
	p.mu.Unlock()
}

func (p *phaseRecorder) WarmupStarted(n int, at time.Time) { p.add("warmup %d %d", n, at.UnixNano()) }
func (p *phaseRecorder) ProfilingStarted(s, d time.Time) {
	p.add("profiling %d %d", s.UnixNano(), d.UnixNano())
}
func (p *phaseRecorder) ProfilingEnded(at time.Time) { p.add("ended %d", at.UnixNano()) }

// TestObserversTellEveryMember: every member of Observers sees every phase
// change of a run, with the same arguments, in the engine's order, and the
// profiling bounds agree with the Result.
func TestObserversTellEveryMember(t *testing.T) {
	t.Parallel()
	sc := sim.DefaultConfig()
	sc.Model, sc.ZeroLatency = "demo", true
	srv, err := sim.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	syn, err := prompttext.New(tokenizer.Builtin(), prompttext.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	a, b := &phaseRecorder{}, &phaseRecorder{}
	cfg := replay.DefaultConfig()
	cfg.URL, cfg.Models, cfg.Synth, cfg.Concurrency, cfg.Seed = srv.URL, []string{"demo"}, syn, 2, 3
	cfg.Traces = dataset.Synthesize(dataset.SynthOptions{Seed: 1, Traces: 4, MinTurns: 6, MaxTurns: 12, TimeScale: 0.001})
	cfg.BenchmarkDuration = 200 * time.Millisecond
	cfg.Sink = &countSink{}
	cfg.Observer = replay.Observers{a, b}
	res, err := replay.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.events) != 3 || !slices.Equal(a.events, b.events) {
		t.Fatalf("members saw %q and %q, want the same three phase changes", a.events, b.events)
	}
	if want := fmt.Sprintf("profiling %d %d", res.ProfilingStart.UnixNano(), res.Deadline.UnixNano()); a.events[1] != want {
		t.Errorf("second event %q, want %q", a.events[1], want)
	}
	if want := fmt.Sprintf("ended %d", res.ProfilingEnd.UnixNano()); a.events[2] != want {
		t.Errorf("third event %q, want %q", a.events[2], want)
	}
}
