package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/agentperf/agentperf/timing"
)

// AbortShardStopped is Result.Aborted when another shard of a sharded run
// stopped (it failed, was aborted, interrupted or vanished): every shard
// stops and writes its artifacts, marked (docs/distributed.md).
const AbortShardStopped = "shard_stopped"

// The barriers a sharded run passes, in order (Coordinator.Barrier).
const (
	// BarrierPrimers: every shard's v1.0 primers are done; the cache
	// warmup starts at the returned instant.
	BarrierPrimers = "primers"
	// BarrierWarmup: every shard's warmup is done; profiling starts at the
	// returned instant, aligned on the combined alignment.
	BarrierWarmup = "warmup"
	// BarrierEnd: every shard's profiling is done.
	BarrierEnd = "end"
)

// Coordinator joins one shard of a sharded run to the others
// (Config.Coordinator). The rendezvous package implements it over TCP.
// Calls come from the Run goroutine, except Stopped's channel, which Run
// watches.
type Coordinator interface {
	// Barrier reports that this shard reached barrier name with its
	// lanes' alignment a (BarrierWarmup; zero otherwise), and returns
	// when every shard has: with the instant the shards go on at, on
	// this shard's clock, and the alignment combined over the shards. An
	// error means the run cannot go on (another shard stopped, the
	// rendezvous was lost); Run then stops.
	Barrier(ctx context.Context, name string, a timing.Alignment) (at time.Time, combined timing.Alignment, err error)
	// Stopped is closed when the run was stopped by another shard;
	// StopReason then says which and why.
	Stopped() <-chan struct{}
	StopReason() string
	// Abort tells the other shards that this one stopped the run early
	// (reason is a Result.Aborted value or "interrupted"); they stop too.
	Abort(reason, msg string)
}

// GlobalThreshold is implemented by a Coordinator that also judges the
// failed-request threshold over every shard of the run (the rendezvous
// does, at shard 0): Run reports its shard's counts after each judged
// profiling request, and a stop the judge decided is a
// failed_request_threshold abort on every shard.
type GlobalThreshold interface {
	// ReportThreshold gives this shard's finished profiling requests
	// (overflows and cancellations not counted) and the failed ones.
	ReportThreshold(judged, failed int)
	// ThresholdFired reports whether the run was stopped by the threshold
	// over every shard.
	ThresholdFired() bool
}

// coordinate watches the coordinator for a stop by another shard until
// done is closed.
func (e *engine) coordinate(done <-chan struct{}) {
	co := e.c.Coordinator
	select {
	case <-co.Stopped():
		if gt, ok := co.(GlobalThreshold); ok && gt.ThresholdFired() {
			e.abortFrom(AbortFailedRequestThreshold, co.StopReason())
			return
		}
		e.abortFrom(AbortShardStopped, fmt.Sprintf("the run was stopped by another shard: %s; stopping this shard (%s) too", co.StopReason(), e.c.Shard))
	case <-done:
	}
}

// abortFrom marks the run aborted for a reason that came from another
// shard (not passed on to the others) and kills it.
func (e *engine) abortFrom(reason, msg string) {
	e.fromPeer.Store(true)
	e.abort(reason, msg)
}

// barrier passes barrier name of a sharded run: it returns the instant
// to go on at (now without a coordinator) and the combined alignment;
// false when the run must stop.
func (e *engine) barrier(name string, a timing.Alignment) (time.Time, timing.Alignment, bool) {
	co := e.c.Coordinator
	if co == nil {
		return e.now(), a, true
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := context.AfterFunc(e.stopCtx(), cancel)
	defer stop()
	at, combined, err := co.Barrier(ctx, name, a)
	if err != nil {
		if !e.stopped() {
			e.abortFrom(AbortShardStopped, fmt.Sprintf("shard %s: the %s barrier failed: %v", e.c.Shard, name, err))
		}
		return time.Time{}, a, false
	}
	// Wait for the common instant on this shard's clock.
	if d := at.Sub(e.now()); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-e.stopIssuing:
			t.Stop()
			return time.Time{}, a, false
		}
	}
	return at, combined, !e.stopped()
}

// stopCtx returns a context cancelled when issuing stops.
func (e *engine) stopCtx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-e.stopIssuing
		cancel()
	}()
	return ctx
}
