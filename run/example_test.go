package run_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/servermetrics"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// A whole embedded run: the in-process simulator as the server, a small
// synthetic corpus, every artifact written and the run judged.
func Example() {
	dir, _ := os.MkdirTemp("", "agentperf-example")
	defer os.RemoveAll(dir)
	s := run.NewSpec() // every default: AgentX v1.0, the engine's settings
	s.Corpus.Traces = dataset.Synthesize(dataset.SynthOptions{Seed: 1, Traces: 8, MinTurns: 6, MaxTurns: 12, TimeScale: 0.001})
	s.Replay.URL, s.Replay.Models = "sim://?zero-latency=true", []string{"demo"}
	s.Replay.Concurrency, s.Replay.Seed = 4, 7
	s.Replay.BenchmarkDuration, s.Replay.TraceIdleGapCap = 300*time.Millisecond, 10*time.Millisecond
	s.Replay.Streaming, s.Replay.UseServerTokenCount = true, true
	s.OutputDir = dir
	out, err := run.Run(context.Background(), s)
	if err != nil {
		panic(err)
	}
	a := out.Result.Accounting
	fmt.Println("valid:", out.Verdict.Valid, "failed:", out.Failed(), "problems:", out.Problems)
	fmt.Println("accounting adds up:", a.Check() == nil && out.Summary.RequestCount == a.ProfilingOK && a.ProfilingOK > 0)
	fmt.Println("server figures:", out.Derived != nil)
	// Output:
	// valid: true failed: false problems: []
	// accounting adds up: true
	// server figures: true
}

// The pieces Run puts together, for a harness that drives the engine
// itself: replay.Run with a collector and a server-metrics scraper, then
// run.Finish for the artifacts and the verdict.
func ExampleFinish() {
	// The server: the simulator, answering at once.
	sc := sim.DefaultConfig()
	sc.Model, sc.ZeroLatency = "demo", true
	srv, err := sim.New(sc)
	if err != nil {
		panic(err)
	}
	if err := srv.Start(); err != nil {
		panic(err)
	}
	defer srv.Close()

	dir, err := os.MkdirTemp("", "agentperf-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	// The sinks: the record collector and the server-metrics scraper.
	col, err := metrics.NewCollector(dir, metrics.CollectorOptions{})
	if err != nil {
		panic(err)
	}
	scr := servermetrics.New(servermetrics.Config{URLs: []string{srv.URL + "/metrics"}, SliceDuration: servermetrics.DefaultSliceDuration})
	ctx := context.Background()
	scr.Baseline(ctx)

	syn, err := prompttext.New(tokenizer.Builtin(), prompttext.Options{Seed: 1})
	if err != nil {
		panic(err)
	}
	cfg := replay.DefaultConfig()
	cfg.URL, cfg.Models, cfg.Synth = srv.URL, []string{"demo"}, syn
	cfg.Traces = dataset.Synthesize(dataset.SynthOptions{Seed: 1, Traces: 8, MinTurns: 6, MaxTurns: 12, TimeScale: 0.001})
	cfg.Concurrency, cfg.Seed = 4, 7
	cfg.BenchmarkDuration = 300 * time.Millisecond
	cfg.TraceIdleGapCap = 10 * time.Millisecond
	cfg.Streaming, cfg.UseServerTokenCount = true, true
	// The scenario preset's context-overflow texts.
	cfg.Classifier = scenario.DefaultClassifier()
	cfg.Sink = col     // overflow records too (Config.Overflows unset)
	cfg.Observer = scr // the scraper marks the profiling window itself
	res, err := replay.Run(ctx, cfg)
	if err != nil {
		panic(err)
	}
	scr.Final(ctx)

	out, err := run.Finish(res, run.Input{
		Dir: dir, Collector: col, Scraper: scr,
		Duration: cfg.BenchmarkDuration, Concurrency: cfg.Concurrency,
		Synth: syn, Tokenizer: tokenizer.Origin{Kind: "builtin"},
		InputConfig: map[string]any{"model_names": cfg.Models, "concurrency": cfg.Concurrency},
	})
	if err != nil {
		panic(err)
	}
	a := res.Accounting
	fmt.Println("valid:", out.Verdict.Valid, "failed:", out.Failed(), "problems:", out.Problems)
	fmt.Println("accounting adds up:", a.Check() == nil && a.Sent == a.ProfilingOK+a.ProfilingErrors+a.WarmupOK+a.WarmupErrors+a.Overflows+a.Cancelled)
	fmt.Println("profiling requests ok:", a.ProfilingOK > 0 && out.Summary.RequestCount == a.ProfilingOK)
	fmt.Println("server figures:", out.Derived != nil)
	for _, name := range []string{"profile_export.jsonl", "profile_export_aiperf.json", "profile_export_aiperf.csv",
		"server_metrics_export.json", "metrics_plots.png", "report.html"} {
		_, err := os.Stat(filepath.Join(dir, name))
		fmt.Printf("%s: %v\n", name, err == nil)
	}
	// Output:
	// valid: true failed: false problems: []
	// accounting adds up: true
	// profiling requests ok: true
	// server figures: true
	// profile_export.jsonl: true
	// profile_export_aiperf.json: true
	// profile_export_aiperf.csv: true
	// server_metrics_export.json: true
	// metrics_plots.png: true
	// report.html: true
}
