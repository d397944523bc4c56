package replay

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
	"github.com/agentperf/agentperf/timing"
)

// fakeServer is a minimal OpenAI-compatible streaming server for engine
// tests. fail decides, per request (counted from 1), whether to answer with
// an error status and body instead of a stream.
type fakeServer struct {
	*httptest.Server
	received atomic.Int64
	mu       sync.Mutex
	bodies   map[string][]byte // X-Request-ID → body
	fail     func(n int64, body []byte) (status int, msg string)
	stall    atomic.Int64 // nanoseconds to hold each stream before its first chunk
	chunks   int
	// midError, when it returns an event, ends request n's stream with it
	// after its first chunk (an error inside a 200 stream).
	midError func(n int64) string
}

func newFakeServer(t *testing.T) *fakeServer {
	t.Helper()
	f := &fakeServer{bodies: map[string][]byte{}, chunks: 4}
	f.Server = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) handle(w http.ResponseWriter, r *http.Request) {
	n := f.received.Add(1)
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies[r.Header.Get("X-Request-ID")] = body
	f.mu.Unlock()
	if f.fail != nil {
		if status, msg := f.fail(n, body); status != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprint(w, msg)
			return
		}
	}
	var req struct {
		MaxTokens int `json:"max_completion_tokens"`
	}
	json.Unmarshal(body, &req)
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	if d := time.Duration(f.stall.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	for i := 0; i < f.chunks; i++ {
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d \"}}]}\n\n", i)
		fl.Flush()
		if f.midError != nil {
			if ev := f.midError(n); ev != "" {
				fmt.Fprint(w, ev)
				return
			}
		}
	}
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d,\"prompt_tokens_details\":{\"cached_tokens\":0}}}\n\n", len(body)/4, f.chunks, len(body)/4+f.chunks)
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// memSink collects records.
type memSink struct {
	mu   sync.Mutex
	recs []*metrics.Record
}

func (s *memSink) Add(r *metrics.Record) {
	s.mu.Lock()
	s.recs = append(s.recs, r)
	s.mu.Unlock()
}

func (s *memSink) records() []*metrics.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*metrics.Record(nil), s.recs...)
}

func testCorpus(t testing.TB, n int) []dataset.Trace {
	t.Helper()
	return dataset.Synthesize(dataset.SynthOptions{Seed: 7, Traces: n, MinTurns: 4, MaxTurns: 8, TimeScale: 0.0005})
}

// presetMarkers are the scenario preset's cache-bust markers at its place
// (--cache-bust first_turn_prefix), as profile gives them to the engine.
var presetMarkers = CacheBust{Placement: prompttext.FirstUserPrefix, Marker: scenario.Marker}

func testConfig(t testing.TB, url string, traces []dataset.Trace, sink, ovf metrics.Sink) Config {
	t.Helper()
	syn, err := prompttext.New(tokenizer.Builtin(), prompttext.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.Generation = timing.V02
	c.URL = url
	c.Models = []string{"m"}
	c.Traces = traces
	c.Synth = syn
	c.Concurrency = 3
	c.Seed = 42
	c.BenchmarkDuration = 700 * time.Millisecond
	c.GracePeriod = 2 * time.Second
	c.Streaming = true
	c.IgnoreEOS = true
	c.UseServerTokenCount = true
	c.CacheBust = presetMarkers
	c.Classifier = scenario.DefaultClassifier()
	c.Sink = sink
	c.Overflows = ovf
	return c
}

func checkAccounting(t *testing.T, res *Result, srv *fakeServer, sink, ovf *memSink) {
	t.Helper()
	a := res.Accounting
	if err := a.Check(); err != nil {
		t.Fatalf("accounting: %v (%+v)", err, a)
	}
	// A request cancelled before it left (its lane was aborted while it
	// dialled) is a cancelled record that the server never saw.
	if got := int(srv.received.Load()); got > a.Sent || a.Sent-got > a.Cancelled {
		t.Fatalf("server received %d requests, accounting says %d sent (%d cancelled)", got, a.Sent, a.Cancelled)
	}
	recs := sink.records()
	if len(recs)+len(ovf.records()) != a.Sent {
		t.Fatalf("%d records + %d overflow records != %d sent", len(recs), len(ovf.records()), a.Sent)
	}
	var warm, prof, perr, canc int
	for _, r := range recs {
		switch {
		case r.Cancelled:
			canc++
		case r.Phase == metrics.PhaseWarmup:
			warm++
		case r.Error != nil:
			perr++
		default:
			prof++
		}
	}
	if warm != a.WarmupOK+a.WarmupErrors || prof != a.ProfilingOK || perr != a.ProfilingErrors || canc != a.Cancelled {
		t.Fatalf("records by kind warm=%d prof=%d perr=%d cancelled=%d disagree with %+v", warm, prof, perr, canc, a)
	}
}

func TestRunAccountsForEveryRequestAndRecycles(t *testing.T) {
	srv := newFakeServer(t)
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 5), sink, ovf)
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, res, srv, sink, ovf)
	if res.Accounting.WarmupOK != cfg.Concurrency {
		t.Fatalf("warmup records = %d, want one per lane (%d)", res.Accounting.WarmupOK, cfg.Concurrency)
	}
	if res.Accounting.ProfilingOK < 10 {
		t.Fatalf("only %d profiling records in 700 ms with tiny delays", res.Accounting.ProfilingOK)
	}
	if res.Schedule.Recycles == 0 {
		t.Fatalf("no trace was recycled: %+v", res.Schedule)
	}
	if res.Aborted != "" || res.Cancelled {
		t.Fatalf("run ended early: %q %v", res.Aborted, res.Cancelled)
	}
	for _, r := range sink.records() {
		if r.Usage == nil || r.FirstChunkNs <= r.RequestStartNs || r.LastChunkNs < r.FirstChunkNs || r.RequestEndNs < r.LastChunkNs {
			t.Fatalf("record timestamps out of order or usage missing: %+v", r)
		}
		if r.ContentChunks != srv.chunks {
			t.Fatalf("content chunks = %d, want %d", r.ContentChunks, srv.chunks)
		}
	}
}

var markerRE = regexp.MustCompile(`\[rid:[0-9a-f]{12}\]`)

// TestRunSameSeedSameBytes: two runs with the same seed send the same prompt
// bytes for the same (lane, trace, turn), the cache-bust marker aside.
func TestRunSameSeedSameBytes(t *testing.T) {
	traces := testCorpus(t, 4)
	bodies := func() map[string]string {
		srv := newFakeServer(t)
		sink := &memSink{}
		cfg := testConfig(t, srv.URL, traces, sink, sink)
		cfg.BenchmarkDuration = 300 * time.Millisecond
		if _, err := Run(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		for _, r := range sink.records() {
			if r.Phase != metrics.PhaseWarmup {
				continue
			}
			b := srv.bodies[r.XRequestID]
			if !markerRE.Match(b) {
				t.Fatalf("warmup body has no cache-bust marker")
			}
			sum := sha256.Sum256(markerRE.ReplaceAll(b, []byte("[rid:X]")))
			out[fmt.Sprintf("lane%d/%s/%d", r.Lane, r.ConversationID, r.TurnIndex)] = fmt.Sprintf("%x", sum)
		}
		return out
	}
	a, b := bodies(), bodies()
	if len(a) != 3 || len(a) != len(b) {
		t.Fatalf("warmup bodies: %d vs %d, want 3", len(a), len(b))
	}
	for k, v := range a {
		if b[k] != v {
			t.Fatalf("%s: prompt bytes differ between runs with the same seed", k)
		}
	}
}

func TestRunFailedRequestThresholdAborts(t *testing.T) {
	srv := newFakeServer(t)
	const lanes = 3
	srv.fail = func(n int64, _ []byte) (int, string) {
		if n > lanes { // warmup passes, every profiling request fails
			return 500, `{"error":{"message":"internal error","type":"InternalServerError","code":500}}`
		}
		return 0, ""
	}
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 5), sink, ovf)
	cfg.Concurrency = lanes
	cfg.BenchmarkDuration = 30 * time.Second
	withThreshold(&cfg, 0.1)
	start := time.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Aborted != AbortFailedRequestThreshold {
		t.Fatalf("aborted = %q, want %q", res.Aborted, AbortFailedRequestThreshold)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("abort did not stop the run early")
	}
	checkAccounting(t, res, srv, sink, ovf)
	// At a 10 % limit, 5 failures in a row are the fewest that show a
	// rate above it with 99.9 % confidence (scenario.Threshold): no abort
	// before, and not many more after (3 lanes in flight).
	if e := res.Accounting.ProfilingErrors; e < 5 || e > 20 {
		t.Fatalf("aborted after %d profiling errors, want 5 to 20", e)
	}
	if !strings.Contains(res.AbortMessage, "of the first") || !strings.Contains(res.AbortMessage, "profiling requests sent failed") {
		t.Fatalf("abort message %q does not explain", res.AbortMessage)
	}
}

// TestRunWarmupFailureAborts: a root warmup request that fails with an
// error that is not transient (a 4xx other than 429) aborts the run at
// once; transient ones are retried (retry_test.go).
func TestRunWarmupFailureAborts(t *testing.T) {
	srv := newFakeServer(t)
	srv.fail = func(n int64, _ []byte) (int, string) {
		if n == 2 {
			return 422, `{"error":"overloaded"}`
		}
		return 0, ""
	}
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 5), sink, ovf)
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Aborted != AbortWarmupFailed || !res.ProfilingStart.IsZero() {
		t.Fatalf("aborted = %q, profiling started %v; want a warmup abort before profiling", res.Aborted, res.ProfilingStart)
	}
	if !strings.Contains(res.AbortMessage, "overloaded") || !strings.Contains(res.AbortMessage, "not retried") {
		t.Fatalf("abort message %q does not carry the server's error and why it was not retried", res.AbortMessage)
	}
	if res.WarmupRetries != 0 {
		t.Fatalf("%d retries of a 422", res.WarmupRetries)
	}
	checkAccounting(t, res, srv, sink, ovf)
}

func TestRunContextOverflowEndsSessionAndIsExportedApart(t *testing.T) {
	srv := newFakeServer(t)
	srv.fail = func(n int64, body []byte) (int, string) {
		if n > 3 && n%4 == 0 {
			return 400, `{"object":"error","message":"This model's maximum context length is 1024 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}`
		}
		return 0, ""
	}
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 5), sink, ovf)
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, res, srv, sink, ovf)
	if res.Accounting.Overflows == 0 || len(ovf.records()) != res.Accounting.Overflows {
		t.Fatalf("overflows = %d, overflow records = %d", res.Accounting.Overflows, len(ovf.records()))
	}
	for _, r := range ovf.records() {
		if !r.ContextOverflow || r.Error == nil || r.Error.Code != 400 {
			t.Fatalf("overflow record not marked: %+v", r)
		}
	}
	for _, r := range sink.records() {
		if r.ContextOverflow {
			t.Fatalf("an overflow record reached the main sink")
		}
	}
	if res.Accounting.ProfilingErrors != 0 {
		t.Fatalf("overflows were counted as errors: %+v", res.Accounting)
	}
}

func TestRunCancelWritesCancelledRecords(t *testing.T) {
	srv := newFakeServer(t)
	var once sync.Once
	started := make(chan struct{})
	srv.fail = func(n int64, _ []byte) (int, string) {
		if n > 3 {
			once.Do(func() { close(started) })
		}
		return 0, ""
	}
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 5), sink, ovf)
	cfg.BenchmarkDuration = time.Minute
	cfg.GracePeriod = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		srv.stall.Store(int64(time.Hour)) // later requests hang until cancelled
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled {
		t.Fatalf("result not marked cancelled")
	}
	checkAccounting(t, res, srv, sink, ovf)
}

// TestRunLiveAssistantThreadsReplies: in live mode a later turn of a
// session carries the server's reply to an earlier turn, not the
// pre-canned text.
func TestRunLiveAssistantThreadsReplies(t *testing.T) {
	srv := newFakeServer(t)
	sink := &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 4), sink, sink)
	syn, err := prompttext.New(tokenizer.Builtin(), prompttext.Options{Seed: 1, Live: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Synth, cfg.LiveAssistant = syn, true
	cfg.BenchmarkDuration = 400 * time.Millisecond
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	// The fake server answers "tok0 tok1 tok2 tok3 " to every request.
	threaded := 0
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, r := range sink.records() {
		if r.Phase == metrics.PhaseProfiling && r.Error == nil && strings.Contains(string(srv.bodies[r.XRequestID]), `"role":"assistant","content":"tok0 tok1 tok2 tok3 "`) {
			threaded++
		}
	}
	if threaded == 0 {
		t.Fatal("no profiling request carried a live reply of an earlier turn")
	}
	// A mismatched synthesizer is refused.
	cfg.Synth, _ = prompttext.New(tokenizer.Builtin(), prompttext.Options{Seed: 1})
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "LiveAssistant") {
		t.Fatalf("err = %v, want a LiveAssistant/synthesizer mismatch", err)
	}
}

// TestRunTerminatedBoundsTheGrace: a ctx cancelled with a *Terminated (a
// scheduler's SIGTERM) gives the requests in flight at most its Grace, not
// the hour of GracePeriod: Run returns with the stalled requests recorded
// as cancelled (a hang here would mean the bound was ignored), and the
// result names the cause.
func TestRunTerminatedBoundsTheGrace(t *testing.T) {
	srv := newFakeServer(t)
	var once sync.Once
	started := make(chan struct{})
	srv.fail = func(n int64, _ []byte) (int, string) {
		if n > 3 {
			once.Do(func() { close(started) })
		}
		return 0, ""
	}
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 5), sink, ovf)
	cfg.BenchmarkDuration = time.Minute
	cfg.GracePeriod = time.Hour
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-started
		srv.stall.Store(int64(time.Hour)) // later requests hang until cancelled
		time.Sleep(100 * time.Millisecond)
		cancel(&Terminated{Signal: "SIGTERM", Grace: 100 * time.Millisecond})
	}()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Cancelled || res.Killed || res.Terminated == nil || res.Terminated.Signal != "SIGTERM" {
		t.Fatalf("cancelled %v, killed %v, terminated %v", res.Cancelled, res.Killed, res.Terminated)
	}
	if !res.ProfilingStart.IsZero() && !strings.Contains(res.EndReason, "SIGTERM") {
		t.Errorf("EndReason %q does not name SIGTERM", res.EndReason)
	}
	checkAccounting(t, res, srv, sink, ovf)
}
