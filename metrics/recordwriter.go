package metrics

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// WriterOptions configure a RecordWriter. The zero value is usable.
type WriterOptions struct {
	// Now is the clock of the periodic flush (default time.Now).
	Now func() time.Time
	// FlushInterval is how often the streams are flushed (default 1 s).
	FlushInterval time.Duration
	// RecordProcessorID is written as metadata.record_processor_id
	// (default "record_processor_0").
	RecordProcessorID string
	// BufferSize is the write buffer of profile_export.jsonl (default
	// 256 KiB).
	BufferSize int
	// ReserveBytes, when positive, is room kept in the directory for the
	// end of a run on a disk that fills up: NewRecordWriter writes a file
	// of that size (FileReserve) and removes it at the first write error
	// or at Close, so that what is written after (the aggregates) still
	// fits. Zero keeps no reserve.
	ReserveBytes int64
}

func (o *WriterOptions) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	if o.RecordProcessorID == "" {
		o.RecordProcessorID = defaultProcessorID
	}
	if o.BufferSize <= 0 {
		o.BufferSize = 256 << 10
	}
}

// RecordWriter is the sink that streams every record, as it arrives, to
// profile_export.jsonl or (a context overflow, Record.Bucket) to
// context_overflow_export.jsonl, under temporary names (.partial) until
// Close renames them into place. It is safe for concurrent use.
//
// A write that fails (a full disk) is kept as Err (replay's FallibleSink:
// the engine stops the run on it); nothing more is written, each stream
// is cut back to its last complete line, so no record is left
// half-written, and the reserve is given up. Close then leaves the streams
// under their .partial names.
type RecordWriter struct {
	dir  string
	opt  WriterOptions
	bufs sync.Pool // *[]byte line buffers
	late atomic.Int64

	mu       sync.Mutex
	recF     *os.File
	recW     *bufio.Writer
	ovfF     *os.File
	ovfW     *bufio.Writer
	werr     error       // first write error (sticky)
	failed   atomic.Bool // werr is set (read without the lock by Err)
	reserve  string      // path of the reserve file, "" when none
	lastSync time.Time
	closed   bool
}

var _ Sink = (*RecordWriter)(nil)

// NewRecordWriter creates dir if needed and opens both streams under
// their temporary names.
func NewRecordWriter(dir string, opt WriterOptions) (*RecordWriter, error) {
	opt.defaults()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create artifact dir %s: %w", dir, err)
	}
	w := &RecordWriter{dir: dir, opt: opt}
	w.bufs.New = func() any { b := make([]byte, 0, 2048); return &b }
	var err error
	if w.recF, err = os.Create(filepath.Join(dir, FileRecords+partialSuffix)); err != nil {
		return nil, fmt.Errorf("open record export: %w", err)
	}
	if w.ovfF, err = os.Create(filepath.Join(dir, FileOverflow+partialSuffix)); err != nil {
		w.recF.Close()
		return nil, fmt.Errorf("open overflow export: %w", err)
	}
	if opt.ReserveBytes > 0 {
		w.reserve = writeReserve(filepath.Join(dir, FileReserve), opt.ReserveBytes)
	}
	w.recW = bufio.NewWriterSize(w.recF, opt.BufferSize)
	w.ovfW = bufio.NewWriterSize(w.ovfF, 16<<10)
	w.lastSync = opt.Now()
	return w, nil
}

// Dir returns the directory of the streams.
func (w *RecordWriter) Dir() string { return w.dir }

// Add writes r's line to its stream. It does not retain r. Records added
// after Close are not written; LateRecords counts them.
func (w *RecordWriter) Add(r *Record) {
	e := newEntry(r)
	w.addEntry(&e)
}

func (w *RecordWriter) addEntry(e *entry) {
	bp := w.bufs.Get().(*[]byte)
	line := appendRecordLine((*bp)[:0], e.r, &e.v, w.opt.RecordProcessorID)
	now := e.now
	if now.IsZero() {
		now = w.opt.Now()
	}
	bw, name := w.recW, FileRecords
	if e.b == BucketOverflow {
		bw, name = w.ovfW, FileOverflow
	}
	w.mu.Lock()
	if w.closed {
		w.late.Add(1)
	} else {
		w.write(bw, line, name)
		w.flushDue(now)
	}
	w.mu.Unlock()
	*bp = line
	w.bufs.Put(bp)
}

// write appends line to bw, keeping the first error. w.mu held.
func (w *RecordWriter) write(bw *bufio.Writer, line []byte, name string) {
	if w.werr != nil {
		return
	}
	if _, err := bw.Write(line); err != nil {
		w.fail(w.writeErr(name, err))
	}
}

// writeErr names the stream file in a write error (an *fs.PathError of
// the file already does).
func (w *RecordWriter) writeErr(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return err
	}
	return fmt.Errorf("write %s: %w", filepath.Join(w.dir, name+partialSuffix), err)
}

// fail keeps the first write error. Nothing more is written to the
// streams: each is cut back to its last complete line (a record is never
// left half-written), and the reserve is given up so that what is written
// at the end still fits. w.mu held.
func (w *RecordWriter) fail(err error) {
	w.werr = err
	w.failed.Store(true)
	for _, f := range []*os.File{w.recF, w.ovfF} {
		if terr := cutToLastLine(f); terr != nil {
			w.werr = errors.Join(w.werr, terr)
		}
	}
	w.dropReserve()
}

// dropReserve removes the reserve file. w.mu held.
func (w *RecordWriter) dropReserve() {
	if w.reserve != "" {
		os.Remove(w.reserve)
		w.reserve = ""
	}
}

// flushDue flushes the streams when FlushInterval has passed. w.mu held.
func (w *RecordWriter) flushDue(now time.Time) {
	if now.Sub(w.lastSync) < w.opt.FlushInterval {
		return
	}
	w.lastSync = now
	w.flushLocked()
}

func (w *RecordWriter) flushLocked() {
	if w.werr != nil {
		return
	}
	if err := w.recW.Flush(); err != nil {
		w.fail(w.writeErr(FileRecords, err))
	} else if err := w.ovfW.Flush(); err != nil {
		w.fail(w.writeErr(FileOverflow, err))
	}
}

// FlushIfDue flushes the streams when FlushInterval has passed since the
// last flush: a caller that ticks (a live view) gets the lines of a quiet
// period on disk.
func (w *RecordWriter) FlushIfDue() {
	now := w.opt.Now()
	w.mu.Lock()
	if !w.closed {
		w.flushDue(now)
	}
	w.mu.Unlock()
}

// Flush writes buffered lines to the files and returns the first write
// error so far.
func (w *RecordWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.flushLocked()
	}
	return w.werr
}

// Err returns the first write error so far, if any. It is cheap (no lock
// until there is an error), for a caller that checks it after every
// record.
func (w *RecordWriter) Err() error {
	if !w.failed.Load() {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.werr
}

// LateRecords returns how many records were added after Close (and so
// are in neither stream).
func (w *RecordWriter) LateRecords() int { return int(w.late.Load()) }

// Close flushes the streams, gives up the reserve (its room is for what
// is written next), syncs and closes both files and, unless a write
// failed, renames them into place. It returns the write error, if any,
// and every failure to close or rename. Close may be called once.
func (w *RecordWriter) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errors.New("metrics: RecordWriter.Close called twice")
	}
	w.closed = true
	w.flushLocked()
	w.dropReserve()
	werr := w.werr
	w.mu.Unlock()

	var errs []error
	if werr != nil {
		errs = append(errs, werr)
	}
	for _, f := range []struct {
		file *os.File
		name string
	}{{w.recF, FileRecords}, {w.ovfF, FileOverflow}} {
		if err := closeAndRename(f.file, w.dir, f.name, werr == nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
