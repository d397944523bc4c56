package servermetrics

import (
	"testing"
	"time"

	"github.com/agentperf/agentperf/replay"
)

// The engine tells the scraper itself about phase changes.
var _ replay.Observer = (*Scraper)(nil)

// TestScraperObservesPhases: the phase changes the engine reports are the
// profiling window the export uses; a nil scraper takes them without
// panicking (a run without server metrics).
func TestScraperObservesPhases(t *testing.T) {
	t.Parallel()
	s := New(Config{URLs: []string{"http://127.0.0.1:1/metrics"}})
	start := time.Unix(1_700_000_000, 5)
	var o replay.Observer = s
	o.WarmupStarted(8, start.Add(-time.Minute))
	o.ProfilingStarted(start, start.Add(time.Hour))
	o.ProfilingEnded(start.Add(30 * time.Minute))
	s.mu.Lock()
	from, to := s.profStartNs, s.profEndNs
	s.mu.Unlock()
	if from != start.UnixNano() || to != start.Add(30*time.Minute).UnixNano() {
		t.Fatalf("profiling window %d..%d, want %d..%d", from, to, start.UnixNano(), start.Add(30*time.Minute).UnixNano())
	}
	var none *Scraper
	o = none
	o.WarmupStarted(1, start)
	o.ProfilingStarted(start, start)
	o.ProfilingEnded(start)
}
