package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/timing"
)

// v10Config is a v1.0 replay of corpus against url with a cache warmup of
// r requests per lane; the child model is sent as "child" so a test server
// can tell children from roots.
func v10Config(t *testing.T, url string, corpus []dataset.Trace, sink *memSink, r int) Config {
	cfg := testConfig(t, url, corpus, sink, nil)
	cfg.Generation = timing.V10
	cfg.Models = []string{"root", "child"}
	cfg.WarmupRequestsPerLane = r
	cfg.SystemIdleGapCap = timing.DefaultSystemIdleCap
	cfg.BenchmarkDuration = 2 * time.Second
	cfg.CacheBust = presetMarkers
	return cfg
}

// treeCorpus has subagents early in every trace, so the cache warmup
// spawns children.
func treeCorpus() []dataset.Trace {
	return dataset.Synthesize(dataset.SynthOptions{Seed: 9, Traces: 4, Subagents: true, MinTurns: 6, MaxTurns: 10, TimeScale: 0.001})
}

// TestV10WarmupFailures: a failed subagent request during the warmup does
// not abort the run; a failed root warmup request does, naming the trace.
func TestV10WarmupFailures(t *testing.T) {
	srv := newFakeServer(t)
	child := func(body []byte) bool { return bytes.Contains(body, []byte(`"model":"child"`)) }
	srv.fail = func(n int64, body []byte) (int, string) {
		if child(body) {
			return 500, `{"error":{"message":"child boom","type":"InternalServerError","code":500}}`
		}
		return 0, ""
	}
	sink := &memSink{}
	cfg := v10Config(t, srv.URL, treeCorpus(), sink, 40)
	cfg.WarmupRetryBackoff = time.Millisecond // the failures are retried first
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	childErrs := 0
	for _, r := range sink.records() {
		if r.Phase == metrics.PhaseWarmup && r.AgentDepth > 0 && r.Error != nil {
			childErrs++
		}
	}
	if childErrs == 0 {
		t.Fatal("no subagent request failed in the warmup: the test proves nothing")
	}
	if res.Aborted != "" || res.ProfilingStart.IsZero() {
		t.Fatalf("run aborted (%q: %s) on %d failed subagent warmup requests; want profiling to start", res.Aborted, res.AbortMessage, childErrs)
	}

	srv.fail = func(n int64, body []byte) (int, string) {
		if !child(body) {
			return 503, `{"error":{"message":"root boom","type":"ServiceUnavailable","code":503}}`
		}
		return 0, ""
	}
	sink = &memSink{}
	cfg = v10Config(t, srv.URL, treeCorpus(), sink, 40)
	cfg.WarmupRetryBackoff = time.Millisecond
	res, err = Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Aborted != AbortWarmupFailed || !strings.Contains(res.AbortMessage, "trace synth_000") || !res.ProfilingStart.IsZero() {
		t.Fatalf("root warmup failure: aborted %q (%s), profiling start %v; want warmup_failed naming the trace, no profiling", res.Aborted, res.AbortMessage, res.ProfilingStart)
	}
	if err := res.Accounting.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestDynamoSessionControl: with Dynamo's conversation-aware routing every
// request body carries nvext.session_control — the conversation id and its
// cache-bust marker as the session id, the timeout, and "bind" on a
// conversation's first request only — merged into a user nvext object.
func TestDynamoSessionControl(t *testing.T) {
	srv := newFakeServer(t)
	sink := &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 2), sink, nil)
	cfg.Concurrency = 1
	cfg.BenchmarkDuration = 300 * time.Millisecond
	cfg.CacheBust = presetMarkers
	cfg.DynamoSession = DynamoSession{Enabled: true, TimeoutSeconds: 3600}
	cfg.ExtraInputs = []ExtraInput{{Key: "nvext", Value: json.RawMessage(`{"priority":1}`)}}
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	recs := sink.records()
	if len(recs) < 3 {
		t.Fatalf("%d records", len(recs))
	}
	first := map[string]bool{}
	for _, r := range recs {
		srv.mu.Lock()
		body := srv.bodies[r.XRequestID]
		srv.mu.Unlock()
		var b struct {
			Nvext struct {
				Priority       int `json:"priority"`
				SessionControl struct {
					SessionID string `json:"session_id"`
					Timeout   int    `json:"timeout"`
					Action    string `json:"action"`
				} `json:"session_control"`
			} `json:"nvext"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatalf("body is not JSON: %v\n%s", err, body)
		}
		sc := b.Nvext.SessionControl
		if b.Nvext.Priority != 1 || sc.Timeout != 3600 || !strings.HasPrefix(sc.SessionID, r.ConversationID+":[rid:") {
			t.Fatalf("nvext = %+v for conversation %s", b.Nvext, r.ConversationID)
		}
		wantBind := !first[r.XCorrelationID]
		first[r.XCorrelationID] = true
		if (sc.Action == "bind") != wantBind {
			t.Fatalf("turn %d of %s: action %q, want bind only on the conversation's first request", r.TurnIndex, r.XCorrelationID, sc.Action)
		}
	}
}

// TestWarmupProgressCountsOverflows: the warmup's progress counts every
// outcome, context overflows included, so it reaches its total.
func TestWarmupProgressCountsOverflows(t *testing.T) {
	srv := newFakeServer(t)
	srv.fail = func(n int64, body []byte) (int, string) {
		if n%2 == 0 {
			return 400, `{"error":{"message":"This model's maximum context length is 1000 tokens. However, your request has 5000 input tokens.","type":"BadRequestError","code":400}}`
		}
		return 0, ""
	}
	sink := &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 8), sink, nil)
	cfg.Concurrency = 8
	cfg.BenchmarkDuration = 200 * time.Millisecond
	prog := new(Progress)
	cfg.Progress = prog
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.WarmupOverflows == 0 {
		t.Fatal("no warmup request overflowed: the test proves nothing")
	}
	if d, n := prog.Counts().WarmupDone(), prog.WarmupTotal(); d != n || n != 8 {
		t.Fatalf("warmup progress %d/%d after %d warmup overflows, want 8/8", d, n, res.WarmupOverflows)
	}
}

// TestEarlyEndSaysWhy: when every lane is done before the deadline (v0.2:
// the next turns are all due after it), profiling ends early and the
// result says so.
func TestEarlyEndSaysWhy(t *testing.T) {
	srv := newFakeServer(t)
	sink := &memSink{}
	tr := dataset.Trace{ID: "slow", Requests: []dataset.Request{
		{T: 0, In: 100, Out: 4, HashIDs: []uint32{1}, ThinkTime: -1, APITime: 1},
		{T: 1, In: 110, Out: 4, HashIDs: []uint32{1}, ThinkTime: 0, APITime: 1},
		{T: 3600, In: 120, Out: 4, HashIDs: []uint32{1}, ThinkTime: 3600, APITime: 1},
	}}
	cfg := testConfig(t, srv.URL, []dataset.Trace{tr}, sink, nil)
	cfg.Concurrency = 1
	cfg.InterTurnDelayCap = 0 // no cap: the last turn is an hour away
	cfg.StartMinRatio, cfg.StartMaxRatio = 0, 0
	cfg.BenchmarkDuration = time.Minute
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.EndedEarly || !strings.Contains(res.EndReason, "every lane was done before the deadline") || !res.ProfilingEnd.Before(res.Deadline) {
		t.Fatalf("ended early %v (%q) at %v, deadline %v; want an early end, explained", res.EndedEarly, res.EndReason, res.ProfilingEnd, res.Deadline)
	}
}
