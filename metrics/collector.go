package metrics

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
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
	// OnRecord, when set, is called after each record is added (outside
	// the Collector's lock) with the record and its values; for live
	// hooks such as a failure-threshold check.
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

func (o *CollectorOptions) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	if o.LiveWindow <= 0 {
		o.LiveWindow = 10 * time.Second
	}
	if o.Version == "" {
		o.Version = "agentperf-dev"
	}
	if o.RecordProcessorID == "" {
		o.RecordProcessorID = defaultProcessorID
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.BufferSize <= 0 {
		o.BufferSize = 256 << 10
	}
}

// liveBuckets is the number of buckets of the sliding window.
const liveBuckets = 10

// Collector receives the records of a run (it implements Sink), streams
// each one to profile_export.jsonl (or context_overflow_export.jsonl) as it
// arrives, keeps compact per-record values for exact aggregates, and
// serves live statistics. It is safe for concurrent use. Its memory grows
// by about 225 bytes per record (chunked columns, allocated 4,096 records
// at a time) and never with the number of chunks.
type Collector struct {
	dir string
	opt CollectorOptions

	bufs     sync.Pool // *[]byte line buffers
	inFlight atomic.Int64
	late     atomic.Int64

	mu       sync.Mutex
	recF     *os.File
	recW     *bufio.Writer
	ovfF     *os.File
	ovfW     *bufio.Writer
	werr     error       // first write error (sticky)
	failed   atomic.Bool // werr is set (read without the lock by Err)
	reserve  string      // path of the reserve file, "" when none
	lastSync time.Time
	rows     columns
	errs     errorTally
	acct     Accounting // counted from records; Sent left 0
	warmOvf  int        // overflows and cancellations of warmup records (live view)
	warmCanc int
	warmRetr int // failed warmup attempts that were retried (live view)
	finished bool

	// live view state
	started    time.Time
	ttft, itl  *hdrhistogram.WindowedHistogram
	winCount   [liveBuckets]int64
	winTokens  [liveBuckets]float64
	winHit     [liveBuckets]int64 // theoretical hit / total blocks of the window's records
	winBlocks  [liveBuckets]int64
	winIdx     int
	nextRotate time.Time
	rotations  int
}

var _ Sink = (*Collector)(nil)

// NewCollector creates dir if needed and opens the streaming JSONL files
// under temporary names (renamed into place by Finish).
func NewCollector(dir string, opt CollectorOptions) (*Collector, error) {
	opt.defaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create artifact dir %s: %w", dir, err)
	}
	c := &Collector{dir: dir, opt: opt}
	c.bufs.New = func() any { b := make([]byte, 0, 2048); return &b }
	var err error
	if c.recF, err = os.Create(filepath.Join(dir, FileRecords+partialSuffix)); err != nil {
		return nil, fmt.Errorf("open record export: %w", err)
	}
	if c.ovfF, err = os.Create(filepath.Join(dir, FileOverflow+partialSuffix)); err != nil {
		c.recF.Close()
		return nil, fmt.Errorf("open overflow export: %w", err)
	}
	if opt.ReserveBytes > 0 {
		c.reserve = writeReserve(filepath.Join(dir, FileReserve), opt.ReserveBytes)
	}
	c.recW = bufio.NewWriterSize(c.recF, opt.BufferSize)
	c.ovfW = bufio.NewWriterSize(c.ovfF, 16<<10)
	now := opt.Now()
	c.started, c.lastSync = now, now
	// Latencies in microseconds, 1 µs .. 1 h, 3 significant figures.
	c.ttft = hdrhistogram.NewWindowed(liveBuckets, 1, 3_600_000_000, 3)
	c.itl = hdrhistogram.NewWindowed(liveBuckets, 1, 3_600_000_000, 3)
	c.nextRotate = now.Add(c.bucketDur())
	return c, nil
}

// Dir returns the artifact directory.
func (c *Collector) Dir() string { return c.dir }

func (c *Collector) bucketDur() time.Duration { return c.opt.LiveWindow / liveBuckets }

// SetInFlight sets the number of requests in flight shown by Snapshot.
func (c *Collector) SetInFlight(n int) { c.inFlight.Store(int64(n)) }

// AddInFlight adds delta to the in-flight count.
func (c *Collector) AddInFlight(delta int) { c.inFlight.Add(int64(delta)) }

// Add records r: its line goes to profile_export.jsonl and its values to
// the aggregates. A record flagged ContextOverflow is handled as by
// AddOverflow. Add does not retain r. Records added after Finish are not
// exported; LateRecords counts them.
func (c *Collector) Add(r *Record) {
	b := r.bucket()
	if b == BucketOverflow {
		c.AddOverflow(r)
		return
	}
	v := Compute(r)
	bp := c.bufs.Get().(*[]byte)
	line := appendRecordLine((*bp)[:0], r, &v, c.opt.RecordProcessorID)
	now := c.opt.Now()

	c.mu.Lock()
	if c.finished {
		c.mu.Unlock()
		c.late.Add(1)
		*bp = line
		c.bufs.Put(bp)
		return
	}
	c.write(c.recW, line, FileRecords)
	rw := row{v: v, startNs: r.RequestStartNs, endNs: r.RequestEndNs,
		warmup:    r.Phase == PhaseWarmup,
		cancelled: b == BucketCancelled,
		failed:    b == BucketWarmupError || b == BucketProfilingError}
	if r.TotalBlocks > 0 {
		rw.hit, rw.total = int64(r.HitBlocks), int64(r.TotalBlocks)
	}
	c.rows.append(&rw)
	switch b {
	case BucketCancelled:
		c.acct.Cancelled++
		if rw.warmup {
			c.warmCanc++
		}
	case BucketWarmupError:
		c.acct.WarmupErrors++
		if r.Retried {
			c.warmRetr++
		}
	case BucketWarmupOK:
		c.acct.WarmupOK++
	case BucketProfilingError:
		c.acct.ProfilingErrors++
		c.errs.add(r.Error)
	default:
		c.acct.ProfilingOK++
	}
	c.rotate(now)
	if rw.ok() {
		if Has(v.TTFT) {
			recordClamped(c.ttft.Current, v.TTFT)
		}
		if Has(v.ITL) {
			recordClamped(c.itl.Current, v.ITL)
		}
		c.winCount[c.winIdx]++
		if Has(v.OSL) {
			c.winTokens[c.winIdx] += v.OSL
		}
		c.winHit[c.winIdx] += rw.hit
		c.winBlocks[c.winIdx] += rw.total
	}
	c.maybeFlush(now)
	c.mu.Unlock()

	*bp = line
	c.bufs.Put(bp)
	if c.opt.OnRecord != nil {
		c.opt.OnRecord(r, v)
	}
}

// AddOverflow records a context-overflow response: its line goes to
// context_overflow_export.jsonl only, and it is counted in the accounting
// and in context_overflow_count (a profiling record) or
// warmup_context_overflow_count, never in any other metric.
func (c *Collector) AddOverflow(r *Record) {
	v := Compute(r)
	bp := c.bufs.Get().(*[]byte)
	line := appendRecordLine((*bp)[:0], r, &v, c.opt.RecordProcessorID)
	now := c.opt.Now()
	c.mu.Lock()
	if c.finished {
		c.mu.Unlock()
		c.late.Add(1)
	} else {
		c.write(c.ovfW, line, FileOverflow)
		c.acct.Overflows++
		if r.Phase == PhaseWarmup {
			c.warmOvf++
		}
		c.maybeFlush(now)
		c.mu.Unlock()
	}
	*bp = line
	c.bufs.Put(bp)
}

// write appends line to w, keeping the first error.
func (c *Collector) write(w *bufio.Writer, line []byte, name string) {
	if c.werr != nil {
		return
	}
	if _, err := w.Write(line); err != nil {
		c.fail(c.writeErr(name, err))
	}
}

// writeErr names the stream file in a write error (an *fs.PathError of
// the file already does).
func (c *Collector) writeErr(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("write %s: %w", filepath.Join(c.dir, name+partialSuffix), err)
}

// fail keeps the first write error. Nothing more is written to the
// streams: each is cut back to its last complete line (a record is never
// left half-written), and the reserve is given up so that what is written
// at the end still fits. c.mu held.
func (c *Collector) fail(err error) {
	c.werr = err
	c.failed.Store(true)
	for _, f := range []*os.File{c.recF, c.ovfF} {
		if terr := cutToLastLine(f); terr != nil {
			c.werr = errors.Join(c.werr, terr)
		}
	}
	c.dropReserve()
}

// dropReserve removes the reserve file. c.mu held (or Finish).
func (c *Collector) dropReserve() {
	if c.reserve != "" {
		os.Remove(c.reserve)
		c.reserve = ""
	}
}

// maybeFlush flushes the writers when FlushInterval has passed. c.mu held.
func (c *Collector) maybeFlush(now time.Time) {
	if now.Sub(c.lastSync) < c.opt.FlushInterval {
		return
	}
	c.lastSync = now
	c.flushLocked()
}

func (c *Collector) flushLocked() {
	if c.werr != nil {
		return
	}
	if err := c.recW.Flush(); err != nil {
		c.fail(c.writeErr(FileRecords, err))
	} else if err := c.ovfW.Flush(); err != nil {
		c.fail(c.writeErr(FileOverflow, err))
	}
}

// Flush writes buffered lines to the files and returns the first write
// error so far.
func (c *Collector) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.finished {
		c.flushLocked()
	}
	return c.werr
}

// Err returns the first write error so far, if any. It is cheap (no lock
// until there is an error), for a caller that checks it after every
// record.
func (c *Collector) Err() error {
	if !c.failed.Load() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.werr
}

// LateRecords returns how many records were added after Finish (and so
// are in no artifact).
func (c *Collector) LateRecords() int { return int(c.late.Load()) }

// Accounting returns the buckets counted from the records added so far,
// with Sent set to their sum.
func (c *Collector) Accounting() Accounting {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.acct
	a.Sent = a.Total()
	return a
}

// rotate advances the live window to now. c.mu held.
func (c *Collector) rotate(now time.Time) {
	if now.Before(c.nextRotate) {
		return
	}
	bd := c.bucketDur()
	steps := int(now.Sub(c.nextRotate)/bd) + 1
	if steps > liveBuckets {
		steps = liveBuckets
		c.nextRotate = now.Add(bd)
	} else {
		c.nextRotate = c.nextRotate.Add(time.Duration(steps) * bd)
	}
	for range steps {
		c.ttft.Rotate()
		c.itl.Rotate()
		c.winIdx = (c.winIdx + 1) % liveBuckets
		c.winCount[c.winIdx] = 0
		c.winTokens[c.winIdx] = 0
		c.winHit[c.winIdx], c.winBlocks[c.winIdx] = 0, 0
		c.rotations++
	}
}

// LiveStats is a snapshot for the live view. Rates and percentiles cover
// the sliding window (CollectorOptions.LiveWindow) of successful records;
// counts cover the whole run. Percentiles are NaN without samples.
type LiveStats struct {
	Elapsed         time.Duration
	ProfilingOK     int
	ProfilingErrors int
	WarmupOK        int
	WarmupErrors    int
	Cancelled       int
	Overflows       int
	// WarmupCancelled and WarmupOverflows are the parts of Cancelled and
	// Overflows that belong to warmup records.
	WarmupCancelled, WarmupOverflows int
	// WarmupRetried is the part of WarmupErrors that are failed attempts
	// of requests sent again (Record.Retried): not requests done.
	WarmupRetried      int
	InFlight           int
	RequestsPerSec     float64
	OutputTokensPerSec float64
	TTFTP50, TTFTP99   float64 // ms
	ITLP50, ITLP99     float64 // ms
	WindowSamples      int
	// TheoreticalHitRate is the prefix-cache hit rate an infinite cache
	// would reach on the window's successful records (Σ hit blocks / Σ
	// blocks); NaN when they carry no block counts.
	TheoreticalHitRate float64
	// Window is the span the rates cover (shorter early in a run).
	Window time.Duration
}

// Errors returns all failed records (both phases).
func (s LiveStats) Errors() int { return s.ProfilingErrors + s.WarmupErrors }

// Snapshot returns the live statistics now.
func (c *Collector) Snapshot() LiveStats {
	now := c.opt.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rotate(now)
	if !c.finished {
		c.maybeFlush(now) // a quiet period still gets its lines on disk
	}
	s := LiveStats{
		Elapsed:     now.Sub(c.started),
		ProfilingOK: c.acct.ProfilingOK, ProfilingErrors: c.acct.ProfilingErrors,
		WarmupOK: c.acct.WarmupOK, WarmupErrors: c.acct.WarmupErrors,
		Cancelled: c.acct.Cancelled, Overflows: c.acct.Overflows,
		WarmupCancelled: c.warmCanc, WarmupOverflows: c.warmOvf, WarmupRetried: c.warmRetr,
		InFlight: int(c.inFlight.Load()),
	}
	var n, hit, blocks int64
	var tok float64
	for i := range liveBuckets {
		n += c.winCount[i]
		tok += c.winTokens[i]
		hit += c.winHit[i]
		blocks += c.winBlocks[i]
	}
	s.TheoreticalHitRate = math.NaN()
	if blocks > 0 {
		s.TheoreticalHitRate = float64(hit) / float64(blocks)
	}
	// The window spans the full older buckets plus the current partial
	// one, but never more than the time since start.
	bd := c.bucketDur()
	span := time.Duration(min(c.rotations, liveBuckets-1))*bd + bd - c.nextRotate.Sub(now)
	span = min(span, now.Sub(c.started))
	s.Window = max(span, 0)
	if span > 0 {
		s.RequestsPerSec = float64(n) / span.Seconds()
		s.OutputTokensPerSec = tok / span.Seconds()
	}
	s.WindowSamples = int(n)
	s.TTFTP50, s.TTFTP99 = hdrPercentiles(c.ttft.Merge())
	s.ITLP50, s.ITLP99 = hdrPercentiles(c.itl.Merge())
	return s
}

// recordClamped records ms (as µs) into h, clamped to its range so that
// no sample is dropped.
func recordClamped(h *hdrhistogram.Histogram, ms float64) {
	us := int64(ms * 1000)
	us = max(h.LowestTrackableValue(), min(us, h.HighestTrackableValue()))
	_ = h.RecordValue(us) // in range by construction
}

func hdrPercentiles(h *hdrhistogram.Histogram) (float64, float64) {
	if h.TotalCount() == 0 {
		return math.NaN(), math.NaN()
	}
	return float64(h.ValueAtQuantile(50)) / 1000, float64(h.ValueAtQuantile(99)) / 1000
}

// Finish closes the streaming exports (flushed, synced and renamed into
// place), computes the aggregates over the records added and writes
// profile_export_aiperf.json and .csv, plus the timeslice files when
// SliceDuration > 0. When info.Accounting is zero it is filled from the
// records added (Sent = their sum); when only Sent is set, the buckets are
// filled from the records; otherwise it is checked as given (and against
// the records received), and
// a mismatch is written into the metadata, returned as an error wrapping
// ErrAccounting, and reported by Summary.Warnings — after every file is
// written. Write errors are returned. Finish may be called once.
func (c *Collector) Finish(info RunInfo) (*Summary, error) {
	c.mu.Lock()
	if c.finished {
		c.mu.Unlock()
		return nil, errors.New("metrics: Collector.Finish called twice")
	}
	c.finished = true
	c.flushLocked()
	c.dropReserve() // its room is for what is written now
	werr := c.werr
	rows, errs, acct, warmOvf := c.rows, c.errs.list(), c.acct, c.warmOvf
	c.rows = columns{}
	c.mu.Unlock()

	var errsOut []error
	if werr != nil {
		errsOut = append(errsOut, werr)
	}
	for _, f := range []struct {
		file *os.File
		name string
	}{{c.recF, FileRecords}, {c.ovfF, FileOverflow}} {
		if err := closeAndRename(f.file, c.dir, f.name, werr == nil); err != nil {
			errsOut = append(errsOut, err)
		}
	}
	switch {
	case info.Accounting == (Accounting{}):
		info.Accounting = withSent(acct, acct.Total())
	case info.Accounting.Total() == 0:
		// Only Sent given: the buckets come from the records.
		info.Accounting = withSent(acct, info.Accounting.Sent)
	}
	s := aggregate(&rows, overflowCounts{profiling: acct.Overflows - warmOvf, warmup: warmOvf}, errs, info, c.opt.SliceDuration)
	s.AccountingErr = info.Accounting.Check()
	if s.AccountingErr == nil && info.Accounting != withSent(acct, info.Accounting.Sent) {
		s.AccountingErr = fmt.Errorf("%w: the caller's buckets %+v differ from the records received %+v", ErrAccounting, info.Accounting, acct)
	}
	if err := s.writeAggregates(c.dir, c.exportOptions(), true); err != nil {
		errsOut = append(errsOut, err)
	}
	if s.AccountingErr != nil {
		errsOut = append(errsOut, s.AccountingErr)
	}
	return s, errors.Join(errsOut...)
}

func withSent(a Accounting, sent int) Accounting {
	a.Sent = sent
	return a
}

func (c *Collector) exportOptions() exportOptions {
	return exportOptions{version: c.opt.Version, location: c.opt.Location}
}

// closeAndRename syncs and closes f and, when publish is set, renames it
// from its .partial name to name.
func closeAndRename(f *os.File, dir, name string, publish bool) error {
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && publish {
		err = os.Rename(filepath.Join(dir, name+partialSuffix), filepath.Join(dir, name))
	}
	if err != nil {
		return fmt.Errorf("finish %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}
