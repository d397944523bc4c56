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
// never more with the number of chunks) and the accounting, for the exact
// aggregates of Summary and Finish. It writes nothing until Finish. It is
// safe for concurrent use.
type Aggregator struct {
	opt AggregatorOptions

	mu   sync.Mutex
	t    tally
	done bool
	late int
}

var _ Sink = (*Aggregator)(nil)

// NewAggregator returns an empty Aggregator.
func NewAggregator(opt AggregatorOptions) *Aggregator {
	opt.defaults()
	return &Aggregator{opt: opt}
}

// Add counts r in its bucket (Record.Bucket) and keeps its values; a
// context overflow is only counted. Add does not retain r. Records added
// after Summary or Finish are in no aggregate; LateRecords counts them.
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
		a.t.add(e.b, e.r.Phase == PhaseWarmup, &rw, er)
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

// addEntry counts e as Aggregator.Add does a record (Recompute reads an
// export into a tally this way, so its rows are the run's).
func (t *tally) addEntry(e *entry) {
	rw, er := tallied(e)
	t.add(e.b, e.r.Phase == PhaseWarmup, &rw, er)
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

// Accounting returns the buckets counted from the records added so far,
// with Sent set to their sum.
func (a *Aggregator) Accounting() Accounting {
	a.mu.Lock()
	defer a.mu.Unlock()
	return withSent(a.t.acct, a.t.acct.Total())
}

// LateRecords returns how many records were added after Summary or
// Finish.
func (a *Aggregator) LateRecords() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.late
}

// Summary computes the aggregates of the records added, writing nothing.
// When info.Accounting is zero it is filled from the records (Sent =
// their sum); when only Sent is set, the buckets are filled from the
// records; otherwise it is checked as given, and against the records
// received: a mismatch is in Summary.AccountingErr (wrapping
// ErrAccounting) and in its warnings. Summary ends the Aggregator (its
// values are released): it may be called once, and not with Finish.
func (a *Aggregator) Summary(info RunInfo) (*Summary, error) {
	a.mu.Lock()
	if a.done {
		a.mu.Unlock()
		return nil, errors.New("metrics: the Aggregator's Summary or Finish called twice")
	}
	a.done = true
	t := a.t
	a.t = tally{}
	a.mu.Unlock()

	acct := t.acct
	switch {
	case info.Accounting == (Accounting{}):
		info.Accounting = withSent(acct, acct.Total())
	case info.Accounting.Total() == 0:
		// Only Sent given: the buckets come from the records.
		info.Accounting = withSent(acct, info.Accounting.Sent)
	}
	s := aggregate(&t.rows, overflowCounts{profiling: acct.Overflows - t.warmOvf, warmup: t.warmOvf}, t.errs.list(), info, a.opt.SliceDuration)
	s.AccountingErr = info.Accounting.Check()
	if s.AccountingErr == nil && info.Accounting != withSent(acct, info.Accounting.Sent) {
		s.AccountingErr = fmt.Errorf("%w: the caller's buckets %+v differ from the records received %+v", ErrAccounting, info.Accounting, acct)
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

// tally is what the aggregates are computed from: the rows of the records
// that are not overflows, and every record's bucket counted. Both the
// Aggregator (records of a run) and Recompute (lines of an export) fill it.
// It is not safe for concurrent use.
type tally struct {
	rows    columns
	errs    errorTally
	acct    Accounting // Sent left 0
	warmOvf int        // the warmup part of acct.Overflows
}

// add counts one record of bucket b; rw is its row (unused for an
// overflow) and e its error when it is a profiling error (for
// error_summary).
func (t *tally) add(b Bucket, warmup bool, rw *row, e *Error) {
	if b == BucketOverflow {
		t.acct.Overflows++
		if warmup {
			t.warmOvf++
		}
		return
	}
	t.rows.append(rw)
	switch b {
	case BucketCancelled:
		t.acct.Cancelled++
	case BucketWarmupError:
		t.acct.WarmupErrors++
	case BucketWarmupOK:
		t.acct.WarmupOK++
	case BucketProfilingError:
		t.acct.ProfilingErrors++
		if e == nil { // a caller's Bucket without an Error
			e = &Error{}
		}
		t.errs.add(e)
	default:
		t.acct.ProfilingOK++
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
