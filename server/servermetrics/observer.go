package servermetrics

import "time"

// WarmupStarted, ProfilingStarted and ProfilingEnded make a Scraper a
// replay.Observer: set as replay.Config.Observer (alone or among
// replay.Observers), it marks the profiling window the engine reports, so
// the export's metrics cover exactly that window and warmup_metrics the
// time before it. A nil *Scraper ignores them (a run without server
// metrics can pass its nil scraper as it is).

// WarmupStarted does nothing: the warmup block runs from the first scrape
// (Baseline) to the profiling start.
func (s *Scraper) WarmupStarted(requests int, at time.Time) {}

// ProfilingStarted marks the profiling start (MarkProfilingStart).
func (s *Scraper) ProfilingStarted(start, deadline time.Time) {
	if s != nil {
		s.MarkProfilingStart(start)
	}
}

// ProfilingEnded marks the profiling end (MarkProfilingEnd).
func (s *Scraper) ProfilingEnded(at time.Time) {
	if s != nil {
		s.MarkProfilingEnd(at)
	}
}
