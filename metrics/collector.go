package metrics

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// CollectorOptions configure a Collector. The zero value is usable.
type CollectorOptions struct {
	// SliceDuration enables the timeslice exports (--slice-duration);
	// 0 disables them.
	SliceDuration time.Duration
	// Now is the clock (default time.Now). It drives the periodic flush
	// of the JSONL file and the live view's sliding window.
	Now func() time.Time
	// FlushInterval is how often the JSONL writer is flushed (default 1 s).
	FlushInterval time.Duration
	// LiveWindow is the sliding window of Snapshot's rates and percentiles
	// (default 10 s, in 10 buckets).
	LiveWindow time.Duration
	// Tally, when set, is the run's outcome tally, which whoever produces
	// the records updates once per record (the replay engine's,
	// replay.Progress): the aggregates' accounting, Accounting and
	// Snapshot's counts and in-flight figure read it, and the Collector
	// counts nothing itself. Give it every record the tally counts. nil:
	// the Collector tallies the records added itself (once for the
	// aggregates and the live window), and Snapshot's in-flight figure is
	// 0.
	Tally *Tally
	// Streamed, when set, is the live window's count of streamed tokens
	// (LiveOptions.Streamed).
	Streamed func() int64
	// OnRecord, when set, is called after each record is added (outside
	// the sinks' locks) with the record and its values; for live hooks
	// such as a failure-threshold check.
	OnRecord func(r *Record, v Values)
	// Version is written as aiperf_version (default "agentperf-dev").
	Version string
	// RecordProcessorID is written as metadata.record_processor_id
	// (default "record_processor_0").
	RecordProcessorID string
	// Location is the zone of the naive local start_time/end_time
	// (default time.Local).
	Location *time.Location
	// BufferSize is the JSONL write buffer (default 256 KiB).
	BufferSize int
	// ReserveBytes, when positive, is room kept in dir for the end of a
	// run on a disk that fills up: NewCollector writes a file of that size
	// (FileReserve) and removes it at the first write error or at Finish,
	// so the aggregates still fit. Zero keeps no reserve.
	ReserveBytes int64
}

// Collector receives the records of a run (it implements Sink) and gives
// each to three sinks, each with its own lock: the RecordWriter (the
// JSONL streams), the Aggregator (exact aggregates) and the LiveWindow
// (live statistics). A record is classified (Record.Bucket) and computed
// once for all three, and counted once: in the tally the Collector was
// given (CollectorOptions.Tally), else in its own, which the aggregator and
// the live window read. The Collector adds their common end: Finish closes
// the streams, then writes the aggregates. It is safe for concurrent use.
type Collector struct {
	dir    string
	opt    CollectorOptions
	counts tallyRef
	w      *RecordWriter
	agg    *Aggregator
	live   *LiveWindow

	// gate makes Finish atomic against Add: Add holds it shared, so a
	// record is in all three sinks or, added after Finish, in none.
	gate     sync.RWMutex
	finished bool
	late     atomic.Int64
}

var _ Sink = (*Collector)(nil)

// NewCollector creates dir if needed and opens the streaming JSONL files
// under temporary names (renamed into place by Finish).
func NewCollector(dir string, opt CollectorOptions) (*Collector, error) {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	w, err := NewRecordWriter(dir, WriterOptions{Now: opt.Now, FlushInterval: opt.FlushInterval,
		RecordProcessorID: opt.RecordProcessorID, BufferSize: opt.BufferSize, ReserveBytes: opt.ReserveBytes})
	if err != nil {
		return nil, err
	}
	counts := newTallyRef(opt.Tally)
	return &Collector{dir: dir, opt: opt, w: w, counts: counts,
		agg:  NewAggregator(AggregatorOptions{SliceDuration: opt.SliceDuration, Version: opt.Version, Location: opt.Location, Tally: counts.t}),
		live: NewLiveWindow(LiveOptions{Now: opt.Now, Window: opt.LiveWindow, Tally: counts.t, Streamed: opt.Streamed}),
	}, nil
}

// Dir returns the artifact directory.
func (c *Collector) Dir() string { return c.dir }

// Add records r: its line goes to profile_export.jsonl (a context
// overflow's to context_overflow_export.jsonl), its values to the
// aggregates and the live window. Add does not retain r. Records added
// after Finish are not exported; LateRecords counts them.
func (c *Collector) Add(r *Record) {
	e := newEntry(r)
	c.add(&e)
}

// AddOverflow records r as a context-overflow response, whatever its
// fields say: its line goes to context_overflow_export.jsonl only, and it
// is counted in the accounting and in context_overflow_count (a profiling
// record) or warmup_context_overflow_count, never in any other metric.
func (c *Collector) AddOverflow(r *Record) {
	e := newEntry(r)
	e.b = BucketOverflow
	c.add(&e)
}

func (c *Collector) add(e *entry) {
	c.gate.RLock()
	if c.finished {
		c.gate.RUnlock()
		c.late.Add(1)
		return
	}
	e.now = c.opt.Now()
	c.counts.add(e)
	c.w.addEntry(e)
	c.agg.addEntry(e)
	c.live.addEntry(e)
	c.gate.RUnlock()
	if c.opt.OnRecord != nil && e.b != BucketOverflow {
		c.opt.OnRecord(e.r, e.v)
	}
}

// Flush writes buffered lines to the files and returns the first write
// error so far.
func (c *Collector) Flush() error { return c.w.Flush() }

// Err returns the first write error so far, if any (replay's
// FallibleSink). It is cheap (no lock until there is an error).
func (c *Collector) Err() error { return c.w.Err() }

// LateRecords returns how many records were added after Finish (and so
// are in no artifact).
func (c *Collector) LateRecords() int { return int(c.late.Load()) }

// Accounting returns the buckets of the tally (CollectorOptions.Tally, else
// the records added so far), with Sent set to their sum.
func (c *Collector) Accounting() Accounting { return c.agg.Accounting() }

// WarmupStarted does nothing; with ProfilingStarted and ProfilingEnded it
// makes the Collector an observer of a run's phases (replay.Observer).
func (c *Collector) WarmupStarted(int, time.Time) {}

// ProfilingStarted starts the live window's profiling phase
// (LiveWindow.StartProfiling): from start on, Snapshot's rates and
// percentiles cover profiling records only.
func (c *Collector) ProfilingStarted(start, _ time.Time) { c.live.StartProfiling(start) }

// ProfilingEnded does nothing: records of the grace period are
// profiling's.
func (c *Collector) ProfilingEnded(time.Time) {}

// Snapshot returns the live statistics now. It also flushes the streams
// when the flush interval has passed, so that a quiet period still gets
// its lines on disk.
func (c *Collector) Snapshot() LiveStats {
	c.w.FlushIfDue()
	return c.live.Snapshot()
}

// Finish closes the streaming exports (flushed, synced and renamed into
// place), computes the aggregates over the records added and writes
// profile_export_aiperf.json and .csv, plus the timeslice files when
// SliceDuration > 0. When info.Accounting is zero it is filled from the
// tally (CollectorOptions.Tally, else the records added; Sent = their
// sum); when only Sent is set, the buckets are filled from the tally;
// otherwise it is checked as given (and against the tally), and with a
// tally given, the records received are checked against it; a mismatch is
// written into the metadata,
// returned as an error wrapping ErrAccounting, and reported by
// Summary.Warnings — after every file is written. Write errors are
// returned. Finish may be called once.
func (c *Collector) Finish(info RunInfo) (*Summary, error) {
	c.gate.Lock()
	if c.finished {
		c.gate.Unlock()
		return nil, errors.New("metrics: Collector.Finish called twice")
	}
	c.finished = true
	c.gate.Unlock()

	werr := c.w.Close()
	s, aerr := c.agg.Finish(c.dir, info)
	return s, errors.Join(werr, aerr)
}

// EachRequest is the aggregator's EachRequest: every request recorded so
// far that is not a context overflow, in order.
func (c *Collector) EachRequest(fn func(RequestRow)) { c.agg.EachRequest(fn) }
