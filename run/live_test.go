package run

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/sim"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
	"github.com/agentperf/agentperf/timing"
	"github.com/agentperf/agentperf/ui"
)

// boundaryObserver takes a live sample when profiling starts, i.e. right
// after the warmup barrier, when every warmup request has finished.
type boundaryObserver struct {
	phaseLog
	src    *liveSource
	mu     sync.Mutex
	sample ui.Sample
}

func (o *boundaryObserver) ProfilingStarted(start, deadline time.Time) {
	o.phaseLog.ProfilingStarted(start, deadline)
	o.mu.Lock()
	o.sample = o.src.Sample()
	o.mu.Unlock()
}

// TestWarmupProgressCountsOverflows: when some warmup requests overflow
// the server's context window, the warmup progress still reaches N/N at
// the end of warmup (every outcome counts), as the live view shows it, and
// its warmup counts are the warmup records the run wrote.
func TestWarmupProgressCountsOverflows(t *testing.T) {
	t.Parallel()
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 3, Traces: 8, MinTurns: 6, MaxTurns: 16, TimeScale: 0.001})
	// A context window at the median request size: some lanes' warmup
	// turns fit, some overflow.
	var ins []int
	for _, tr := range traces {
		for _, r := range tr.Requests {
			ins = append(ins, r.In+r.Out)
		}
	}
	slices.Sort(ins)
	cfg := sim.DefaultConfig()
	cfg.Model, cfg.ZeroLatency, cfg.MaxModelLen = "demo", true, ins[len(ins)/2]
	srv, err := sim.New(cfg)
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
	dir := t.TempDir()
	prog := &replay.Progress{}
	col, err := metrics.NewCollector(filepath.Join(dir, "art"), metrics.CollectorOptions{Tally: &prog.Tally})
	if err != nil {
		t.Fatal(err)
	}
	pc := &phaseClock{duration: 300 * time.Millisecond}
	src := &liveSource{prog: prog, col: col, pc: pc, streaming: true}
	obs := &boundaryObserver{phaseLog: phaseLog{lg: &runLog{w: &strings.Builder{}}, pc: pc}, src: src}
	rc := replay.DefaultConfig()
	rc.Generation = timing.V02
	rc.URL, rc.Models, rc.Traces, rc.Synth, rc.Concurrency, rc.Seed = srv.URL, []string{"demo"}, traces, syn, 8, 7
	rc.BenchmarkDuration, rc.Streaming, rc.UseServerTokenCount = 300*time.Millisecond, true, true
	rc.Classifier = scenario.DefaultClassifier()
	rc.Sink, rc.Progress, rc.Observer = col, prog, obs
	res, err := replay.Run(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := col.Finish(metrics.RunInfo{Accounting: res.Accounting}); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	s := obs.sample
	obs.mu.Unlock()
	if s.Warmup.Overflows == 0 || s.Warmup.OK == 0 {
		t.Fatalf("fixture: want some warmup requests to overflow and some to succeed, got %+v (max-model-len %d)", s.Warmup, cfg.MaxModelLen)
	}
	if s.WarmupTotal != 8 || s.WarmupDone != s.WarmupTotal {
		t.Errorf("live warmup progress at the end of warmup: %d/%d (outcomes %+v), want 8/8", s.WarmupDone, s.WarmupTotal, s.Warmup)
	}
	// Every warmup request had finished at the boundary: the view's
	// counts are the warmup records on disk.
	art := filepath.Join(dir, "art")
	if n, ovf := phaseLines(t, filepath.Join(art, metrics.FileRecords), metrics.PhaseWarmup), phaseLines(t, filepath.Join(art, metrics.FileOverflow), metrics.PhaseWarmup); n+ovf != s.Warmup.Done() || ovf != s.Warmup.Overflows {
		t.Errorf("the run wrote %d warmup records and %d warmup overflows; the live view counted %+v", n, ovf, s.Warmup)
	}
}

// phaseLines counts the records of phase in a JSONL record file.
func phaseLines(t *testing.T, path string, phase metrics.Phase) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	if _, err := metrics.ReadRecords(f, path, false, func(l *metrics.RecordLine) error {
		if l.Record.Phase == phase {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLiveOverflowAdvice: the live diagnosis's overflow advice is the
// summary's (overflowAdvice): the engine's own settings (llama.cpp's -c /
// -np, not vLLM's flag), and with --max-context-length given, the margin
// to leave instead of "pass --max-context-length N".
func TestLiveOverflowAdvice(t *testing.T) {
	t.Parallel()
	prog := &replay.Progress{}
	col, err := metrics.NewCollector(filepath.Join(t.TempDir(), "art"), metrics.CollectorOptions{Tally: &prog.Tally})
	if err != nil {
		t.Fatal(err)
	}
	const flag = "or pass --max-context-length N (the server's context window in tokens)"
	src := &liveSource{prog: prog, col: col, pc: &phaseClock{}, advice: flag}
	if got := src.Sample().Server.OverflowAdvice; !strings.Contains(got, flag) || !strings.Contains(got, "vLLM --max-model-len, SGLang --context-length") {
		t.Errorf("no engine known, no --max-context-length: advice %q, want every engine's setting and the flag", got)
	}
	src.maxContextLength = 131072
	got := src.Sample().Server.OverflowAdvice
	if strings.Contains(got, "pass --max-context-length N") || !strings.Contains(got, "--max-context-length 131072 is already given") ||
		!strings.Contains(got, "chat template") || !strings.Contains(got, "--max-context-length 128451") {
		t.Errorf("--max-context-length 131072 given: advice %q, want the margin, not the flag again", got)
	}
	if got := overflowAdvice("llamacpp", 0, -1, flag); !strings.HasPrefix(got, "llama.cpp's per-request window is -c / -np") || strings.Contains(got, "max-model-len") {
		t.Errorf("llama.cpp: advice %q", got)
	}
}
