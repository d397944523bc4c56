package replay

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
	"github.com/agentperf/agentperf/timing"
)

// TestServerPrefixHitsMatchTheCorpus is the fidelity check of the whole
// prompt path: with a KV cache large enough never to evict, the share of
// prompt tokens the simulator served from its prefix cache must be close
// to the corpus's theoretical hit rate (definition C) over the same
// profiling records. Exact block synthesis and the per-session marker are
// what make the two agree; drift in either shows up here.
func TestServerPrefixHitsMatchTheCorpus(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Model = "m"
	cfg.ZeroLatency = true
	cfg.KVCapacityTokens = 50_000_000
	cfg.MaxModelLen = 1_000_000
	tok := tokenizer.Builtin()
	cfg.Tokenizer = tok
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	syn, err := prompttext.New(tok, prompttext.Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	rc := DefaultConfig()
	rc.Generation = timing.V02
	rc.URL, rc.Models, rc.Synth = srv.URL, []string{"m"}, syn
	rc.Traces = dataset.Synthesize(dataset.SynthOptions{Seed: 11, Traces: 6, MinTurns: 10, MaxTurns: 20, TimeScale: 0.0001})
	rc.Concurrency, rc.Seed, rc.BenchmarkDuration = 4, 1, time.Second
	rc.Streaming, rc.IgnoreEOS, rc.UseServerTokenCount = true, true, true
	rc.CacheBust, rc.Classifier, rc.Sink = presetMarkers, scenario.DefaultClassifier(), sink
	res, err := Run(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Accounting.Check(); err != nil {
		t.Fatal(err)
	}
	var hit, total, cached, prompt float64
	n := 0
	for _, r := range sink.records() {
		// Turn 0 of a recycled trace is left out: its system prefix is
		// (rightly) cached from the trace's earlier sessions — the marker
		// sits after it — while definition C counts only hits within one
		// play of the trace.
		if r.Phase != metrics.PhaseProfiling || r.Error != nil || r.Usage == nil || r.TurnIndex == 0 {
			continue
		}
		n++
		hit += float64(r.HitBlocks)
		total += float64(r.TotalBlocks)
		cached += float64(r.Usage.CachedTokens)
		prompt += float64(r.Usage.PromptTokens)
	}
	if n < 20 || total == 0 || prompt == 0 {
		t.Fatalf("too few profiling records to compare: %d", n)
	}
	theory, server := hit/total, cached/prompt
	t.Logf("%d records: theoretical %.4f, server %.4f", n, theory, server)
	// The server's rate is a little lower: the chat template, the marker and
	// partial 16-token blocks at the end of each prompt are never cached.
	if math.Abs(theory-server) > 0.015 {
		t.Fatalf("server prefix-cache hit rate %.4f is not within 1.5 points of the corpus's theoretical %.4f", server, theory)
	}
}
