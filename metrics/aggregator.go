package metrics

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// AggregatorOptions configure an Aggregator. The zero value is usable.
type AggregatorOptions struct {
	// SliceDuration enables the timeslice exports (--slice-duration);
	// 0 disables them.
	SliceDuration time.Duration
	// Version is written as aiperf_version (default "agentperf-dev").
	Version string
	// Location is the zone of the naive local start_time/end_time
	// (default time.Local).
	Location *time.Location
	// Tally, when set, is the run's outcome tally, which whoever produces
	// the records updates (CollectorOptions.Tally): the accounting reads
	// it and the Aggregator counts nothing itself; Summary checks that it
	// received every record the tally counts that is not a context
	// overflow. nil: the Aggregator tallies the records added.
	Tally *Tally
}

func (o *AggregatorOptions) defaults() {
	if o.Version == "" {
		o.Version = "agentperf-dev"
	}
	if o.Location == nil {
		o.Location = time.Local
	}
}

// Aggregator is the sink that keeps compact per-record values (about 225
// bytes a record, in chunked columns allocated 4,096 records at a time;
// never more with the number of chunks) and reads the accounting from the
// run's tally (AggregatorOptions.Tally, else its own), for the exact
// aggregates of Summary and Finish. It writes nothing until Finish. It is
// safe for concurrent use.
type Aggregator struct {
	opt    AggregatorOptions
	counts tallyRef

	mu   sync.Mutex
	t    aggInput // rows and error summary; the counts are in counts
	done bool
	// late counts the records added after Summary or Finish: not an
	// outcome count (those are the tally's), the records no aggregate
	// holds.
	late int
}

var _ Sink = (*Aggregator)(nil)

// NewAggregator returns an empty Aggregator.
func NewAggregator(opt AggregatorOptions) *Aggregator {
	opt.defaults()
	return &Aggregator{opt: opt, counts: newTallyRef(opt.Tally)}
}

// Add keeps r's values (and, without a Tally given, counts r in its
// bucket, Record.Bucket); a context overflow has no values. Add does not
// retain r. Records added after Summary or Finish are in no aggregate;
// LateRecords counts them.
func (a *Aggregator) Add(r *Record) {
	e := newEntry(r)
	a.addEntry(&e)
}

func (a *Aggregator) addEntry(e *entry) {
	rw, er := tallied(e)
	a.mu.Lock()
	if a.done {
		a.late++
	} else {
		a.counts.add(e)
		a.t.addRow(e.b, &rw, er)
	}
	a.mu.Unlock()
}

// tallied is what a tally keeps of e: its row (none for an overflow) and,
// for a profiling error, its error (for error_summary).
func tallied(e *entry) (rw row, er *Error) {
	if e.b != BucketOverflow {
		rw = rowOf(e)
	}
	if e.b == BucketProfilingError {
		er = e.r.Error
	}
	return rw, er
}

// rowOf is what the aggregates keep of a record that is not an overflow.
func rowOf(e *entry) row {
	r := e.r
	rw := row{v: e.v, startNs: r.RequestStartNs, endNs: r.RequestEndNs, warmup: r.Phase == PhaseWarmup}
	rw.setBucket(e.b)
	if r.TotalBlocks > 0 {
		rw.hit, rw.total = int64(r.HitBlocks), int64(r.TotalBlocks)
	}
	return rw
}

// setBucket sets the row's outcome flags from its bucket.
func (rw *row) setBucket(b Bucket) {
	rw.cancelled = b == BucketCancelled
	rw.failed = b == BucketWarmupError || b == BucketProfilingError
}

// Accounting returns the buckets of the tally (AggregatorOptions.Tally,
// else the records added so far), with Sent set to their sum.
func (a *Aggregator) Accounting() Accounting {
	acct := a.counts.t.Counts().Accounting()
	return withSent(acct, acct.Total())
}

// LateRecords returns how many records were added after Summary or
// Finish.
func (a *Aggregator) LateRecords() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.late
}

// Summary computes the aggregates of the records added, writing nothing.
// When info.Accounting is zero it is filled from the tally (Sent = the sum
// of its buckets); when only Sent is set, the buckets are filled from the
// tally; otherwise it is checked as given, and against the tally. With a
// Tally given, the records received are checked against it too. A
// mismatch is in Summary.AccountingErr (wrapping ErrAccounting) and in
// its warnings. Summary ends the Aggregator (its values are released): it
// may be called once, and not with Finish.
func (a *Aggregator) Summary(info RunInfo) (*Summary, error) {
	a.mu.Lock()
	if a.done {
		a.mu.Unlock()
		return nil, errors.New("metrics: the Aggregator's Summary or Finish called twice")
	}
	a.done = true
	t := a.t
	a.t = aggInput{}
	a.mu.Unlock()

	c := a.counts.t.Counts()
	acct := withSent(c.Accounting(), 0)
	switch {
	case info.Accounting == (Accounting{}):
		info.Accounting = withSent(acct, acct.Total())
	case info.Accounting.Total() == 0:
		// Only Sent given: the buckets come from the records.
		info.Accounting = withSent(acct, info.Accounting.Sent)
	}
	s := aggregate(&t.rows, overflowCounts{profiling: c.Profiling.Overflows, warmup: c.Warmup.Overflows}, t.errs.list(), info, a.opt.SliceDuration)
	s.AccountingErr = info.Accounting.Check()
	if s.AccountingErr == nil && info.Accounting != withSent(acct, info.Accounting.Sent) {
		s.AccountingErr = fmt.Errorf("%w: the caller's buckets %+v differ from the records received %+v", ErrAccounting, info.Accounting, acct)
	}
	if n := acct.Total() - acct.Overflows; s.AccountingErr == nil && !a.counts.own && t.rows.len() != n {
		// The tally counted the records as the run made them; the rows are
		// the records that reached the aggregates.
		s.AccountingErr = fmt.Errorf("%w: the run's tally counts %d records that are not context overflows, but %d reached the aggregates", ErrAccounting, n, t.rows.len())
	}
	return s, nil
}

// Finish computes the Summary (as Summary does) and writes
// profile_export_aiperf.json and .csv into dir, plus the timeslice files
// when SliceDuration > 0. It returns the write error, then the accounting
// mismatch (after every file is written).
func (a *Aggregator) Finish(dir string, info RunInfo) (*Summary, error) {
	s, err := a.Summary(info)
	if err != nil {
		return nil, err
	}
	var errs []error
	if err := s.writeAggregates(dir, exportOptions{version: a.opt.Version, location: a.opt.Location}, true); err != nil {
		errs = append(errs, err)
	}
	if s.AccountingErr != nil {
		errs = append(errs, s.AccountingErr)
	}
	return s, errors.Join(errs...)
}

func withSent(a Accounting, sent int) Accounting {
	a.Sent = sent
	return a
}

// aggInput is what the aggregates are computed from: the rows of the
// records that are not overflows and their errors by kind (the counts are
// a Tally: the run's, or Recompute's of an export's lines). It is not
// safe for concurrent use.
type aggInput struct {
	rows columns
	errs errorTally
}

// addRow keeps the row rw of a record of bucket b (none for an overflow)
// and e, its error when it is a profiling error (for error_summary).
func (t *aggInput) addRow(b Bucket, rw *row, e *Error) {
	if b == BucketOverflow {
		return
	}
	t.rows.append(rw)
	if b == BucketProfilingError {
		if e == nil { // a caller's Bucket without an Error
			e = &Error{}
		}
		t.errs.add(e)
	}
}

// RequestRow is one request as the aggregates hold it: what a figure of
// the run's requests draws.
type RequestRow struct {
	StartNs, EndNs     int64   // Unix ns
	TTFT, Latency, ITL float64 // ms; NaN when absent
	OK                 bool    // no error, not cancelled
	Warmup             bool
}

// EachRequest calls fn with every record added so far that is not a
// context overflow (those have no row), in the order they were added, so
// that a figure of the run needs no second read of profile_export.jsonl.
func (a *Aggregator) EachRequest(fn func(RequestRow)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	eachRow(&a.t.rows, fn)
}

// eachRow calls fn with every row of c, in order.
func eachRow(c *columns, fn func(RequestRow)) {
	ttft, lat, itl := metricIndex("time_to_first_token"), metricIndex("request_latency"), metricIndex("inter_token_latency")
	for i := range c.len() {
		f := c.flags(i)
		start, end := c.times(i)
		fn(RequestRow{StartNs: start, EndNs: end, TTFT: c.value(ttft, i), Latency: c.value(lat, i), ITL: c.value(itl, i),
			OK: !f.failed() && !f.cancelled(), Warmup: f.warmup()})
	}
}
