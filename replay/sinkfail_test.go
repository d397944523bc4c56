package replay

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentperf/agentperf/metrics"
)

// failingSink fails (through Err) from its n-th record on.
type failingSink struct {
	memSink
	n, seen atomic.Int64
}

func (s *failingSink) Add(r *metrics.Record) {
	s.seen.Add(1)
	s.memSink.Add(r)
}

func (s *failingSink) Err() error {
	if s.seen.Load() >= s.n.Load() {
		return errors.New("write out/profile_export.jsonl.partial: no space left on device")
	}
	return nil
}

// TestRunStopsWhenTheSinkFails: the first write error of a FallibleSink
// stops the run (no new requests; those in flight drain and are still
// recorded): aborted as artifact_write_failed with the error in the
// message, and the accounting adds up.
func TestRunStopsWhenTheSinkFails(t *testing.T) {
	srv := newFakeServer(t)
	sink := &failingSink{}
	sink.n.Store(20)
	cfg := testConfig(t, srv.URL, testCorpus(t, 5), sink, nil)
	cfg.BenchmarkDuration = time.Hour
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Aborted != AbortArtifactWriteFailed || !strings.Contains(res.AbortMessage, "no space left on device") {
		t.Fatalf("aborted %q: %s", res.Aborted, res.AbortMessage)
	}
	if err := res.Accounting.Check(); err != nil {
		t.Fatal(err)
	}
	if got := len(sink.records()); got != res.Accounting.Sent || got < 20 || got > 20+cfg.Concurrency {
		t.Fatalf("%d records for %d sent: want the 20th and those in flight then", got, res.Accounting.Sent)
	}
}
