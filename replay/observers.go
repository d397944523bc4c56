package replay

import "time"

// Observers is an Observer that tells each of its members in turn, in
// order: several parties (a server-metrics scraper, a log, a live view)
// watch one run.
type Observers []Observer

// WarmupStarted tells every member.
func (obs Observers) WarmupStarted(requests int, at time.Time) {
	for _, o := range obs {
		o.WarmupStarted(requests, at)
	}
}

// ProfilingStarted tells every member.
func (obs Observers) ProfilingStarted(start, deadline time.Time) {
	for _, o := range obs {
		o.ProfilingStarted(start, deadline)
	}
}

// ProfilingEnded tells every member.
func (obs Observers) ProfilingEnded(at time.Time) {
	for _, o := range obs {
		o.ProfilingEnded(at)
	}
}
