package metrics

import "sync/atomic"

// Tally is the one count of a run's requests: how many were sent, how
// many are in flight, and every finished one in its bucket (Record.Bucket)
// and phase. Whoever produces the records updates it once per record (the
// replay engine: Send before a request is written, Returned when its
// exchange is over, Add with its classified record); the request
// accounting, the live view's counts, the aggregates and the
// failed-request threshold read it. A sink given a Tally
// (CollectorOptions.Tally, AggregatorOptions.Tally, LiveOptions.Tally)
// counts nothing itself.
//
// It is lock-free (one atomic add per record, two per send) and safe for
// concurrent use; the zero value is an empty tally. Counts reads it.
type Tally struct {
	sent, inFlight atomic.Int64
	n              [slotCount]atomic.Int64
}

// The slots of a Tally: every finished record is counted in exactly one,
// so each update is one atomic add and the figures readers derive (a
// bucket's total, a phase's requests done) add slots up.
const (
	slotProfilingOK = iota
	slotProfilingError
	slotProfilingOverflow
	slotProfilingCancelled
	slotWarmupOK
	slotWarmupError
	// slotWarmupRetried holds the failed warmup attempts that were sent
	// again (Record.Retried): warmup errors, but not requests done.
	slotWarmupRetried
	slotWarmupOverflow
	slotWarmupCancelled
	slotCount
)

// Send counts a request being sent: Sent and InFlight go up by one. Call
// it right before the request is written (every attempt of a retried
// request is a request sent).
func (t *Tally) Send() {
	t.sent.Add(1)
	t.inFlight.Add(1)
}

// Returned counts a request's exchange as over: InFlight goes down by one.
// Its record follows (Add).
func (t *Tally) Returned() { t.inFlight.Add(-1) }

// InFlight returns the number of requests sent whose exchange is not over.
func (t *Tally) InFlight() int { return int(t.inFlight.Load()) }

var _ Sink = (*Tally)(nil)

// Add counts the finished request r in its bucket (Record.Bucket, or
// BucketOf when unset) and phase. Add does not retain r.
func (t *Tally) Add(r *Record) {
	t.Count(r.bucket(), r.Phase, r.Retried)
}

// Count counts one finished request of bucket b whose record is of phase
// p. A context overflow and a cancellation are counted in the phase on
// the record (p == PhaseWarmup: warmup, anything else profiling); the
// other buckets name their phase. retried marks a failed warmup attempt
// that was sent again (Record.Retried): it counts as a warmup error, not
// as a request done. BucketUnset is not counted.
func (t *Tally) Count(b Bucket, p Phase, retried bool) {
	if s, ok := slotOf(b, p == PhaseWarmup, retried); ok {
		t.n[s].Add(1)
	}
}

// slotOf is the slot of a record of bucket b.
func slotOf(b Bucket, warmup, retried bool) (int, bool) {
	switch b {
	case BucketProfilingOK:
		return slotProfilingOK, true
	case BucketProfilingError:
		return slotProfilingError, true
	case BucketWarmupOK:
		return slotWarmupOK, true
	case BucketWarmupError:
		if retried {
			return slotWarmupRetried, true
		}
		return slotWarmupError, true
	case BucketOverflow:
		if warmup {
			return slotWarmupOverflow, true
		}
		return slotProfilingOverflow, true
	case BucketCancelled:
		if warmup {
			return slotWarmupCancelled, true
		}
		return slotProfilingCancelled, true
	}
	return 0, false
}

// Counts returns the tally's figures. Each is read atomically, the set
// not at one instant: while requests finish, a later figure may include
// a request an earlier one did not. The finished requests are read before
// Sent, so Sent is never below their sum.
func (t *Tally) Counts() Counts {
	var n [slotCount]int
	for i := range n {
		n[i] = int(t.n[i].Load())
	}
	return Counts{
		Sent:     int(t.sent.Load()),
		InFlight: int(t.inFlight.Load()),
		Profiling: PhaseCounts{OK: n[slotProfilingOK], Errors: n[slotProfilingError],
			Overflows: n[slotProfilingOverflow], Cancelled: n[slotProfilingCancelled]},
		Warmup: PhaseCounts{OK: n[slotWarmupOK], Errors: n[slotWarmupError] + n[slotWarmupRetried],
			Overflows: n[slotWarmupOverflow], Cancelled: n[slotWarmupCancelled], Retried: n[slotWarmupRetried]},
	}
}

// Counts are a Tally's figures.
type Counts struct {
	// Sent counts the requests sent (every attempt); InFlight those whose
	// exchange is not over.
	Sent, InFlight int
	// Profiling and Warmup count the finished requests by the phase on
	// their record.
	Profiling, Warmup PhaseCounts
}

// PhaseCounts count the finished requests of one phase by how they ended:
// one bucket each (Errors of the phase's error bucket, Overflows and
// Cancelled of the records of the phase in BucketOverflow and
// BucketCancelled).
type PhaseCounts struct {
	OK, Errors, Overflows, Cancelled int
	// Retried is the part of Errors that are failed attempts sent again
	// (Record.Retried; warmup only): records, but not requests done.
	Retried int
}

// Add adds b's counts to p's: every field is a count.
func (p *PhaseCounts) Add(b PhaseCounts) {
	p.OK += b.OK
	p.Errors += b.Errors
	p.Overflows += b.Overflows
	p.Cancelled += b.Cancelled
	p.Retried += b.Retried
}

// Add adds b's counts to c's: every field is a count (InFlight too: the
// requests in flight of two tallies are both in flight), per phase.
func (c *Counts) Add(b Counts) {
	c.Sent += b.Sent
	c.InFlight += b.InFlight
	c.Profiling.Add(b.Profiling)
	c.Warmup.Add(b.Warmup)
}

// Total returns the records of the phase: every bucket, retried attempts
// included.
func (p PhaseCounts) Total() int { return p.OK + p.Errors + p.Overflows + p.Cancelled }

// Judged returns the requests of the phase that the failed-request
// threshold judges: the successes and the failures (overflows and
// cancellations are neither).
func (p PhaseCounts) Judged() int { return p.OK + p.Errors }

// Done returns the requests of the phase that are done: every outcome,
// but not an attempt that was sent again.
func (p PhaseCounts) Done() int { return p.Total() - p.Retried }

// Accounting returns the request accounting: Sent, and every finished
// request in its bucket.
func (c Counts) Accounting() Accounting {
	return Accounting{
		Sent:            c.Sent,
		ProfilingOK:     c.Profiling.OK,
		ProfilingErrors: c.Profiling.Errors,
		WarmupOK:        c.Warmup.OK,
		WarmupErrors:    c.Warmup.Errors,
		Overflows:       c.Overflows(),
		Cancelled:       c.Cancelled(),
	}
}

// WarmupDone returns the warmup requests done, whatever their outcome (a
// failed attempt that was sent again is not done).
func (c Counts) WarmupDone() int { return c.Warmup.Done() }

// ProfilingDone returns the profiling requests done, cancelled ones
// aside.
func (c Counts) ProfilingDone() int { return c.Profiling.Done() - c.Profiling.Cancelled }

// Errors returns the failed records of both phases (every failed warmup
// attempt included).
func (c Counts) Errors() int { return c.Profiling.Errors + c.Warmup.Errors }

// Overflows returns the context overflows of both phases.
func (c Counts) Overflows() int { return c.Profiling.Overflows + c.Warmup.Overflows }

// Cancelled returns the cancelled requests of both phases.
func (c Counts) Cancelled() int { return c.Profiling.Cancelled + c.Warmup.Cancelled }

// tallyRef is a sink's tally: the one it was given (CollectorOptions.Tally
// and the like), which the records' producer updates, or, when it was
// given none, one of its own, which it updates from the records it is
// given. Either way a record is counted once.
type tallyRef struct {
	t   *Tally
	own bool
}

func newTallyRef(t *Tally) tallyRef {
	if t == nil {
		return tallyRef{t: new(Tally), own: true}
	}
	return tallyRef{t: t}
}

// add counts e when the tally is the sink's own.
func (r tallyRef) add(e *entry) {
	if r.own {
		r.t.Count(e.b, e.r.Phase, e.r.Retried)
	}
}
