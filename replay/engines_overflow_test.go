package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/scenario"
)

// llama.cpp's overflow answers, as its server sends them (recorded in
// testdata/wire/llamacpp-*): the HTTP 400 of a prompt longer than a
// slot's context, and the error event that ends a stream whose context
// filled up during generation.
const (
	llamaExceed400 = `{"error":{"code":400,"message":"request (17421 tokens) exceeds the available context size (16384 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":17421,"n_ctx":16384}}`
	llamaMidStream = "data: {\"error\":{\"code\":500,\"message\":\"Context size has been exceeded.\",\"type\":\"server_error\"}}\n\n"
)

// profilingFlag is an Observer that notes when profiling has started.
type profilingFlag struct{ on atomic.Bool }

func (p *profilingFlag) WarmupStarted(int, time.Time)          {}
func (p *profilingFlag) ProfilingStarted(time.Time, time.Time) { p.on.Store(true) }
func (p *profilingFlag) ProfilingEnded(time.Time)              {}

// TestRunLlamaCppOverflowsBothPhases: llama.cpp's overflow texts, the 400
// and the mid-stream event, are context overflows with the default
// classifier in the warmup (no warmup_failed abort, no retry) and in
// profiling (not failed requests, so the threshold never sees them).
func TestRunLlamaCppOverflowsBothPhases(t *testing.T) {
	srv := newFakeServer(t)
	prof := &profilingFlag{}
	var profN atomic.Int64
	srv.fail = func(n int64, _ []byte) (int, string) {
		if n == 1 || (prof.on.Load() && profN.Add(1)%5 == 1) {
			return 400, llamaExceed400
		}
		return 0, ""
	}
	srv.midError = func(n int64) string {
		if n == 2 || (prof.on.Load() && n%7 == 0) {
			return llamaMidStream
		}
		return ""
	}
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 5), sink, ovf)
	cfg.Observer = prof
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Aborted != "" {
		t.Fatalf("aborted %s: %s", res.Aborted, res.AbortMessage)
	}
	checkAccounting(t, res, srv, sink, ovf)
	if res.WarmupOverflows < 2 || res.ProfilingOverflows < 2 {
		t.Fatalf("overflows: warmup %d, profiling %d; want llama.cpp's texts classified in both", res.WarmupOverflows, res.ProfilingOverflows)
	}
	if res.Accounting.ProfilingErrors != 0 || res.Accounting.WarmupErrors != 0 || res.WarmupRetries != 0 {
		t.Fatalf("an overflow counted as an error: %+v, %d retries", res.Accounting, res.WarmupRetries)
	}
	mid := 0
	for _, r := range ovf.records() {
		if !r.ContextOverflow || r.Error == nil {
			t.Fatalf("overflow record %+v", r)
		}
		if r.Error.Message == "Context size has been exceeded." {
			mid++
		}
	}
	if mid == 0 {
		t.Error("no mid-stream overflow recorded with its message")
	}
}

// TestLlamaCppRecordedErrors: the error bodies recorded from a real
// llama-server (testdata/wire/errors, bench/real-engine/record-wire): its
// overflow 400 is a context overflow for the default classifier, and its
// 503 while loading the model is a restart (docs/server-restarts.md), not
// a failure.
func TestLlamaCppRecordedErrors(t *testing.T) {
	t.Parallel()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "wire", "errors", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ovf := read("llamacpp-overflow-400.json")
	if !scenario.DefaultClassifier().IsOverflow(ovf) || !strings.Contains(string(ovf), "exceed_context_size_error") {
		t.Errorf("llama.cpp's recorded overflow is not classified: %s", ovf)
	}
	loading := read("llamacpp-loading-503.json")
	e := &engine{}
	if !e.restarting(&metrics.Error{Category: metrics.CategoryHTTP, Code: 503}, loading) {
		t.Errorf("llama.cpp's recorded 503 is not a restart: %s", loading)
	}
	if scenario.DefaultClassifier().IsOverflow(loading) {
		t.Errorf("the 503 is classified as an overflow")
	}
}
