package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/metrics"
)

// warmupAttempts groups the warmup records of a run by request (lane,
// conversation instance, turn) in the order they were sent.
func warmupAttempts(recs []*metrics.Record) map[[3]any][]*metrics.Record {
	out := map[[3]any][]*metrics.Record{}
	for _, r := range recs {
		if r.Phase == metrics.PhaseWarmup {
			k := [3]any{r.Lane, r.XCorrelationID, r.TurnIndex}
			out[k] = append(out[k], r)
		}
	}
	return out
}

// TestRunWarmupRetriesTransientErrors: warmup requests that fail with a
// 503, a 429, a 500 or a reset are sent again; every attempt is a record
// (the failed ones warmup errors marked Retried, counted as sent), the
// run is not aborted, and the core saw each request once: the warmup
// progress reaches exactly its total.
func TestRunWarmupRetriesTransientErrors(t *testing.T) {
	srv := newFakeServer(t)
	// Requests 1, 2, 3 and 5 fail transiently; the lanes' requests are
	// sent again and then succeed.
	codes := map[int64]int{1: 503, 2: 429, 3: 500, 5: 502}
	srv.fail = func(n int64, _ []byte) (int, string) {
		if c, ok := codes[n]; ok {
			return c, `{"error":{"message":"try later","type":"ServiceUnavailableError"}}`
		}
		return 0, ""
	}
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 5), sink, ovf)
	cfg.WarmupRetryBackoff = 5 * time.Millisecond
	var logs logLines
	cfg.Logf = logs.add
	prog := &Progress{}
	cfg.Progress = prog
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Aborted != "" {
		t.Fatalf("aborted: %s", res.AbortMessage)
	}
	checkAccounting(t, res, srv, sink, ovf)
	if res.WarmupRetries != len(codes) || res.Accounting.WarmupErrors != len(codes) {
		t.Fatalf("%d retries, %d warmup errors; want %d of each", res.WarmupRetries, res.Accounting.WarmupErrors, len(codes))
	}
	requests := 0
	for k, attempts := range warmupAttempts(sink.records()) {
		requests++
		for i, r := range attempts {
			last := i == len(attempts)-1
			if r.Retried == last || (r.Error == nil) != last {
				t.Fatalf("request %v attempt %d of %d: retried=%v error=%v", k, i+1, len(attempts), r.Retried, r.Error)
			}
			if want := i + 1; (want > 1 && r.Attempt != want) || (want == 1 && r.Attempt != 0) {
				t.Fatalf("request %v: attempt %d recorded as %d", k, want, r.Attempt)
			}
		}
	}
	if requests != prog.WarmupTotal() || prog.Counts().WarmupDone() != prog.WarmupTotal() {
		t.Fatalf("%d warmup requests, progress %d/%d", requests, prog.Counts().WarmupDone(), prog.WarmupTotal())
	}
	if !logs.has("retry 1 of 4") || !logs.has("failed attempts were retried") {
		t.Errorf("the retries are not logged:\n%s", logs.String())
	}
}

// TestRunWarmupRetryBudgetSpent: a root warmup request that keeps failing
// transiently aborts the run once its 5 attempts are spent, naming the
// trace and the last error; every attempt is a record.
func TestRunWarmupRetryBudgetSpent(t *testing.T) {
	srv := newFakeServer(t)
	srv.fail = func(n int64, _ []byte) (int, string) {
		return 503, `{"error":"still overloaded"}`
	}
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 5), sink, ovf)
	cfg.Concurrency = 1
	cfg.WarmupRetryBackoff = time.Millisecond
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Aborted != AbortWarmupFailed {
		t.Fatalf("aborted = %q (%s)", res.Aborted, res.AbortMessage)
	}
	for _, w := range []string{"the last of 5 attempts", "503", "still overloaded", "(trace synth_"} {
		if !strings.Contains(res.AbortMessage, w) {
			t.Errorf("abort message %q lacks %q", res.AbortMessage, w)
		}
	}
	checkAccounting(t, res, srv, sink, ovf)
	if res.Accounting.WarmupErrors != 5 || res.WarmupRetries != 4 {
		t.Fatalf("%d warmup error records, %d retries; want 5 and 4", res.Accounting.WarmupErrors, res.WarmupRetries)
	}
}

// TestRunWarmupRetryDelay: the pauses double from the configured backoff,
// each with jitter in [½, 1) of its step, and are capped.
func TestRunWarmupRetryDelay(t *testing.T) {
	e := &engine{c: (&Config{WarmupRetryBackoff: time.Second, Seed: 3}).normalize()}
	for attempt := 1; attempt <= 8; attempt++ {
		step := min(time.Second<<(attempt-1), maxRetryPause)
		seen := map[time.Duration]bool{}
		for i := range 50 {
			d := e.retryDelay(attempt, "req-"+string(rune('a'+i)))
			if d < step/2 || d >= step {
				t.Fatalf("attempt %d: pause %s outside [%s, %s)", attempt, d, step/2, step)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Fatalf("attempt %d: only %d distinct pauses over 50 requests: no jitter", attempt, len(seen))
		}
	}
	// A backoff of 0 (or less) is no pause: a Config's zero means zero.
	for _, b := range []time.Duration{0, -time.Second} {
		e := &engine{c: (&Config{WarmupRetryBackoff: b, Seed: 3}).normalize()}
		if d := e.retryDelay(3, "req"); d != 0 {
			t.Errorf("backoff %v: pause %v, want none", b, d)
		}
	}
}

// logLines collects log lines (safe for concurrent use).
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *logLines) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.lines {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestProgressIsTheRunsTally: Config.Progress is the run's one count of
// its requests: after the run its figures are the Result's accounting,
// and a second run cannot count into it (it would add to the first run's
// accounting).
func TestProgressIsTheRunsTally(t *testing.T) {
	srv := newFakeServer(t)
	sink, ovf := &memSink{}, &memSink{}
	cfg := testConfig(t, srv.URL, testCorpus(t, 3), sink, ovf)
	cfg.BenchmarkDuration = 200 * time.Millisecond
	prog := &Progress{}
	cfg.Progress = prog
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkAccounting(t, res, srv, sink, ovf)
	if c := prog.Counts(); c.Accounting() != res.Accounting || c.InFlight != 0 || c.WarmupDone() != prog.WarmupTotal() {
		t.Fatalf("progress %+v (warmup total %d) after the run, accounting %+v", c, prog.WarmupTotal(), res.Accounting)
	}
	_, err = Run(context.Background(), cfg)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "Config.Progress" {
		t.Fatalf("a second run on the same Progress: %v, want a *FieldError for Config.Progress", err)
	}
}
