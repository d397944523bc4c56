package replay

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentperf/agentperf/metrics"
)

// restartWindow is an Observer that makes the fake server "restart" (503
// Loading model, llama.cpp's body) for a while once profiling starts.
type restartWindow struct{ until atomic.Int64 }

func (w *restartWindow) WarmupStarted(int, time.Time) {}
func (w *restartWindow) ProfilingStarted(start, _ time.Time) {
	w.until.Store(start.Add(150 * time.Millisecond).UnixNano())
}
func (w *restartWindow) ProfilingEnded(time.Time) {}

const loadingModel = `{"error":{"message":"Loading model","type":"unavailable_error","code":503}}`

// TestRunServerRestartSameInBothPhases: a server that answers 503
// "Loading model" (llama.cpp restarting) during the warmup and again at
// the start of profiling: in both phases the same request is sent again
// until the server answers, it stays one request and one record (no
// failure, no warmup retry), its start is its first try's (the wait is
// the server's time) and it records the tries and the wait.
func TestRunServerRestartSameInBothPhases(t *testing.T) {
	srv := newFakeServer(t)
	win := &restartWindow{}
	srv.fail = func(n int64, _ []byte) (int, string) {
		if (n >= 2 && n <= 4) || time.Now().UnixNano() < win.until.Load() {
			return 503, loadingModel
		}
		return 0, ""
	}
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 5), sink, ovf)
	cfg.Observer = win
	var logs logLines
	cfg.Logf = logs.add
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Aborted != "" {
		t.Fatalf("aborted: %s", res.AbortMessage)
	}
	a := res.Accounting
	if err := a.Check(); err != nil {
		t.Fatal(err)
	}
	if a.WarmupErrors != 0 || a.ProfilingErrors != 0 || res.WarmupRetries != 0 {
		t.Fatalf("a restart counted as a failure: %+v, %d warmup retries", a, res.WarmupRetries)
	}
	waited := map[metrics.Phase]int{}
	tries := 0
	for _, r := range sink.records() {
		if r.RestartTries == 0 {
			continue
		}
		waited[r.Phase]++
		tries += r.RestartTries - 1
		if r.Error != nil || r.RestartWaitNs <= 0 || r.RequestEndNs-r.RequestStartNs < r.RestartWaitNs {
			t.Errorf("record after a restart: error %v, wait %d ns, start→end %d ns", r.Error, r.RestartWaitNs, r.RequestEndNs-r.RequestStartNs)
		}
	}
	if waited[metrics.PhaseWarmup] == 0 || waited[metrics.PhaseProfiling] == 0 {
		t.Fatalf("requests that waited for the restart, by phase: %v; want some in both", waited)
	}
	if res.ServerRestartWaits != waited[metrics.PhaseWarmup]+waited[metrics.PhaseProfiling] {
		t.Errorf("Result.ServerRestartWaits %d, records %v", res.ServerRestartWaits, waited)
	}
	// The server saw every try; the accounting counts requests.
	if got := int(srv.received.Load()); got != a.Sent+tries {
		t.Errorf("server received %d, sent %d + %d restart tries", got, a.Sent, tries)
	}
	if !logs.has("server restarting: warmup request") || !logs.has("server restarting: profiling request") {
		t.Errorf("the restart waits are not logged:\n%s", logs.String())
	}
}

// TestRunServerRestartWaitSpent: a server that stays in "Loading model"
// beyond ServerRestartWait fails the request with a message that says
// so, never as a silent normal failure; with the wait off, the first 503
// is the request's failure (a warmup request is then retried as any 5xx).
func TestRunServerRestartWaitSpent(t *testing.T) {
	srv := newFakeServer(t)
	srv.fail = func(n int64, _ []byte) (int, string) { return 503, loadingModel }
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 5), sink, ovf)
	cfg.Concurrency = 1
	cfg.WarmupRetries = 0
	cfg.ServerRestartWait = 300 * time.Millisecond
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Aborted != AbortWarmupFailed || !strings.Contains(res.AbortMessage, "the server was still restarting after") {
		t.Fatalf("aborted %q: %s", res.Aborted, res.AbortMessage)
	}
	recs := sink.records()
	if len(recs) != 1 || recs[0].RestartTries < 2 || recs[0].RestartWaitNs < int64(300*time.Millisecond) {
		t.Fatalf("records %d, first %+v", len(recs), recs[0])
	}
}

// TestRestartingAnswers: which answers mean a restart.
func TestRestartingAnswers(t *testing.T) {
	e := &engine{}
	http503 := &metrics.Error{Category: metrics.CategoryHTTP, Code: 503}
	if !e.restarting(http503, []byte(loadingModel)) {
		t.Error("llama.cpp's 503 Loading model is not a restart")
	}
	if e.restarting(http503, []byte(`{"error":"overloaded"}`)) {
		t.Error("a plain 503 is a restart")
	}
	refused := &metrics.Error{Category: metrics.CategoryTransport, Type: "ConnectionRefused"}
	if e.restarting(refused, nil) {
		t.Error("a refused connection before the server ever answered is a restart (a wrong URL would wait)")
	}
	e.served.Store(true)
	if !e.restarting(refused, nil) {
		t.Error("a refused connection after the server answered is not a restart")
	}
}
