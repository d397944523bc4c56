package replay

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestLivenessLineWhileHung: while requests are in flight and none
// progresses (a server that accepts and then says nothing), a line says so
// once per interval, naming how many and for how long; a server that
// streams steadily, however long each response, gets none.
func TestLivenessLineWhileHung(t *testing.T) {
	t.Run("hung", func(t *testing.T) {
		srv := newFakeServer(t)
		srv.stall.Store(int64(time.Hour))
		cfg := testConfig(t, srv.URL, testCorpus(t, 3), &memSink{}, nil)
		cfg.LivenessInterval = 50 * time.Millisecond
		cfg.GracePeriod = 10 * time.Millisecond
		var logs logLines
		cfg.Logf = logs.add
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			for countLiveness(&logs) < 2 {
				time.Sleep(10 * time.Millisecond)
			}
			cancel()
		}()
		if _, err := Run(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		if n := countLiveness(&logs); n < 2 {
			t.Fatalf("%d liveness lines:\n%s", n, logs.String())
		}
		if !logs.has("liveness: 3 requests in flight, none has progressed for") || logs.has("progressed for 0s") || !logs.has("the warmup has no time limit") {
			t.Errorf("the liveness line does not say how many and for how long:\n%s", logs.String())
		}
	})
	t.Run("streaming steadily", func(t *testing.T) {
		s := startFaultSim(t, "decode-base-ms=5&prefill-tokens-per-sec=1e7")
		cfg := testConfig(t, s.URL, testCorpus(t, 3), &memSink{}, nil)
		// Responses of ~1.5 s (300 tokens, a chunk every 5 ms): longer
		// than the interval, but never silent for long.
		cfg.LivenessInterval = time.Second
		cfg.BenchmarkDuration = 3 * time.Second
		cfg.SynthesisMaxOSL = 300
		var logs logLines
		cfg.Logf = logs.add
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Accounting.ProfilingOK == 0 {
			t.Fatalf("fixture: nothing completed: %+v", res.Accounting)
		}
		if logs.has("liveness:") {
			t.Errorf("a liveness line for a server that streams:\n%s", logs.String())
		}
	})
}

func countLiveness(l *logLines) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.lines {
		if strings.HasPrefix(s, "liveness:") {
			n++
		}
	}
	return n
}
