package metrics

import (
	"errors"
	"time"
)

// entry is one record as the sinks of this package take it: classified
// (Record.Bucket, or BucketOf) and computed once, however many sinks get
// it. now is the time the record arrived, zero when each sink reads its
// own clock.
type entry struct {
	r   *Record
	b   Bucket
	v   Values
	now time.Time
}

// newEntry classifies and computes r.
func newEntry(r *Record) entry {
	return entry{r: r, b: r.bucket(), v: Compute(r)}
}

// entrySink is a sink of this package: it takes a record already
// classified and computed, so that a Tee of several computes it once.
type entrySink interface {
	addEntry(e *entry)
}

// Tee returns a Sink that gives every record to each of sinks, in order.
// The sinks of this package (RecordWriter, Aggregator, LiveWindow) share
// one classification and one Compute per record. The Tee is safe for
// concurrent use when each sink is; it has Err (replay's FallibleSink),
// which returns the first write error of the sinks that have one.
//
// A Tee has no end of its own: whoever made the sinks closes them
// (RecordWriter.Close, Aggregator.Finish) once the last record was added.
// Collector is the Tee of the three with that end built in.
func Tee(sinks ...Sink) Sink {
	t := &tee{sinks: sinks, fast: make([]entrySink, len(sinks))}
	for i, s := range sinks {
		if es, ok := s.(entrySink); ok {
			t.fast[i], t.anyFast = es, true
		}
		if f, ok := s.(interface{ Err() error }); ok {
			t.fallible = append(t.fallible, f)
		}
	}
	return t
}

type tee struct {
	sinks    []Sink
	fast     []entrySink // fast[i] is sinks[i] when it is a sink of this package
	anyFast  bool
	fallible []interface{ Err() error }
}

func (t *tee) Add(r *Record) {
	var e entry
	if t.anyFast {
		e = newEntry(r)
	}
	for i, s := range t.sinks {
		if f := t.fast[i]; f != nil {
			f.addEntry(&e)
		} else {
			s.Add(r)
		}
	}
}

// Err returns the write errors of the sinks so far (nil when none).
func (t *tee) Err() error {
	var errs []error
	for _, f := range t.fallible {
		if err := f.Err(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
