package replay

import (
	"github.com/agentperf/agentperf/metrics"
)

// Threshold is the failed-request threshold a run is judged by
// (Config.Threshold): it may abort the run when too many profiling
// requests fail. The engine's part is two calls per profiling request:
// Sent right before the request is written (its sequence number travels
// with the request), Done once its outcome is classified, exactly once per
// sequence number, whatever the outcome (success, failure, context
// overflow or cancellation), after the record was counted in the run's
// tally (Config.Progress). Warmup requests are not given to it. It must
// be safe for concurrent use.
//
// scenario.NewThreshold builds --failed-request-threshold's rule (the
// requests judged in the order they were sent; an abort only when the
// failure rate is above the limit with 99.9 % confidence;
// docs/failed-request-threshold.md); package run gives it to the
// engine.
type Threshold interface {
	// Sent registers a profiling request as sent and returns its sequence
	// number (1, 2, …, in the order requests go out).
	Sent() int
	// Done reports how request seq ended: its record's bucket. abort
	// stops the run (AbortFailedRequestThreshold) with msg as its reason.
	Done(seq int, b metrics.Bucket) (abort bool, msg string)
}

// thresholdSent registers a request of phase as sent and returns its
// sequence number (0 for warmup requests, which the threshold ignores,
// and without a threshold).
func (e *engine) thresholdSent(phase metrics.Phase) int {
	if phase != metrics.PhaseProfiling || e.c.Threshold == nil {
		return 0
	}
	return e.c.Threshold.Sent()
}

// thresholdDone gives the threshold how request seq ended (rec, counted
// in the tally) and aborts the run when it fires. In a sharded run it
// reports the shard's finished profiling requests, from the tally, to the
// coordinator that judges the threshold over every shard.
func (e *engine) thresholdDone(seq int, rec *metrics.Record) {
	if rec.Phase != metrics.PhaseProfiling {
		return
	}
	var abort bool
	var msg string
	if seq != 0 {
		abort, msg = e.c.Threshold.Done(seq, rec.Bucket)
	}
	if gt, ok := e.c.Coordinator.(GlobalThreshold); ok {
		p := e.tally.Counts().Profiling
		gt.ReportThreshold(p.Judged(), p.Errors)
	}
	if abort {
		e.abort(AbortFailedRequestThreshold, msg)
	}
}
