package replay

import (
	"time"
)

// DefaultLivenessInterval is how often Run checks that requests in flight
// progress; see Config.LivenessInterval.
const DefaultLivenessInterval = time.Minute

// Liveness. With the defaults (a 6 h request timeout, an unlimited warmup)
// a hung server holds a run for hours without a word; Run therefore logs a
// line every LivenessInterval while requests are in flight and none has
// progressed. Progress is any response byte the client times: the
// headers, an SSE event, the end of a response (each request's clock
// reads go through its lane's nowProgress, which keeps the lane's latest
// one). Sending a request is not progress. The check costs one atomic store
// per timed event and a scan of the lanes per interval.

// progressClock returns the lane's nowProgress: it reads the engine clock
// and records the time as the lane's latest progress.
func (l *lane) progressClock(e *engine) func() int64 {
	return func() int64 {
		t := e.nowNs()
		l.lastProgress.Store(t)
		return t
	}
}

// watchLiveness logs a line every interval while requests are in flight
// and none has progressed, until done is closed.
func (e *engine) watchLiveness(interval time.Duration, done <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	// quietSince is the last moment nothing was in flight: a stall is
	// measured from it when that is later than the last progress.
	quietSince := e.nowNs()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		now := e.nowNs()
		n := e.tally.InFlight()
		if n <= 0 {
			quietSince = now
			continue
		}
		last := quietSince
		for _, l := range e.lanes {
			last = max(last, l.lastProgress.Load())
		}
		if stalled := time.Duration(now - last); stalled >= interval {
			round := time.Second
			if stalled < time.Minute {
				round = time.Millisecond
			}
			e.c.Logf("liveness: %d requests in flight, none has progressed for %s (no response headers, stream event or completion); the server may be hung: a request waits up to the request timeout (%s)%s",
				n, stalled.Round(round), e.c.RequestTimeout, e.phaseBound())
		}
	}
}

// phaseBound names what else ends a stall in the current phase.
func (e *engine) phaseBound() string {
	e.mu.Lock()
	profiling := !e.res.ProfilingStart.IsZero()
	e.mu.Unlock()
	if profiling {
		return ", or the end of the benchmark duration and its grace period"
	}
	if e.c.WarmupGracePeriod > 0 {
		return ", or the warmup grace period (" + e.c.WarmupGracePeriod.String() + ")"
	}
	return "; the warmup has no time limit (set a warmup grace period to bound it)"
}
