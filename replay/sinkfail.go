package replay

import (
	"fmt"
	"time"
)

// AbortArtifactWriteFailed is Result.Aborted when the Sink could not write
// a record (a full disk): no new requests are sent, those in flight are
// drained, and the caller writes what fits.
const AbortArtifactWriteFailed = "artifact_write_failed"

// FallibleSink is a Sink whose writes can fail (metrics.Collector: a full
// disk). When Config.Sink implements it, the engine checks Err after every
// record; the first error stops the run (AbortArtifactWriteFailed): no new
// request is sent, those in flight get the grace period to finish (their
// records still reach the Sink, which keeps what it can), then they are
// cancelled. Err must be cheap: it is called once per record.
type FallibleSink interface {
	Err() error
}

// checkSink stops the run on the Sink's first write error.
func (e *engine) checkSink() {
	if e.sinkErr == nil || e.sinkFailed.Load() {
		return
	}
	err := e.sinkErr.Err()
	if err == nil || !e.sinkFailed.CompareAndSwap(false, true) {
		return
	}
	e.abortDrain(AbortArtifactWriteFailed, fmt.Sprintf("writing the artifacts failed: %v; no new requests are sent, the %d in flight may finish within the grace period (%s), and every artifact that fits is written: free space in the output directory or write the artifacts to another one",
		err, e.tally.InFlight(), e.c.GracePeriod))
}

// abortDrain aborts the run like abort, but lets the requests in flight
// finish within the grace period before they are cancelled.
func (e *engine) abortDrain(reason, msg string) {
	e.markAborted(reason, msg)
	e.stop()
	time.AfterFunc(e.c.GracePeriod, e.killAll)
}
