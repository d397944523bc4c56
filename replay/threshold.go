package replay

import (
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/scenario"
)

// The failed-request threshold judges profiling requests in the order they
// were sent (scenario.Threshold). The engine's part is two calls per
// profiling request: thresholdSent right before the request is written
// (its sequence number travels with the request), thresholdDone once its
// outcome is classified, exactly once per sequence number, whatever the
// outcome: success, failure, context overflow or cancellation.

// thresholdSent registers a request of phase as sent and returns its
// sequence number (0 for warmup requests, which the threshold ignores).
func (e *engine) thresholdSent(phase metrics.Phase) int {
	if phase != metrics.PhaseProfiling {
		return 0
	}
	return e.threshold.Sent()
}

// thresholdDone reports how request seq ended (its record's bucket) and
// aborts the run when the threshold fires.
func (e *engine) thresholdDone(seq int, b metrics.Bucket) {
	if seq == 0 {
		return
	}
	o := scenario.ThresholdOK
	switch b {
	case metrics.BucketProfilingError:
		o = scenario.ThresholdFailed
	case metrics.BucketOverflow:
		o = scenario.ThresholdOverflow
	case metrics.BucketCancelled:
		o = scenario.ThresholdCancelled
	}
	abort, msg := e.threshold.Done(seq, o)
	if gt, ok := e.c.Coordinator.(GlobalThreshold); ok {
		gt.ReportThreshold(e.threshold.Counts())
	}
	if abort {
		e.abort(AbortFailedRequestThreshold, msg)
	}
}
