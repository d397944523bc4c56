package metrics

import (
	"testing"
	"time"
)

// BenchmarkCollectorAdd measures the hot path: Compute, the JSONL line and
// the bookkeeping for one record. The row columns allocate one chunk per
// columnChunkRows records; the line buffer comes from a pool.
func BenchmarkCollectorAdd(b *testing.B) {
	c, err := NewCollector(b.TempDir(), CollectorOptions{Now: fixedClock(t0)})
	if err != nil {
		b.Fatal(err)
	}
	r := okRecord(1, 0, 120, 8, 48211, 311, 700, 753)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c.Add(r)
	}
	b.StopTimer()
	if err := c.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCollectorAddParallel is the hot path as a run drives it: many
// lanes adding records at once, with the real clock (the periodic flush
// and the live window read it per record).
func BenchmarkCollectorAddParallel(b *testing.B) {
	c, err := NewCollector(b.TempDir(), CollectorOptions{})
	if err != nil {
		b.Fatal(err)
	}
	r := okRecord(1, 0, 120, 8, 48211, 311, 700, 753)
	b.ReportAllocs()
	b.SetParallelism(8) // 8 goroutines per core: more lanes than cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Add(r)
		}
	})
	b.StopTimer()
	if err := c.Flush(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRecordLine measures the JSONL encoding alone.
func BenchmarkRecordLine(b *testing.B) {
	r := okRecord(1, 0, 120, 8, 48211, 311, 700, 753)
	v := Compute(r)
	buf := appendRecordLine(nil, r, &v, "p")
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for range b.N {
		buf = appendRecordLine(buf[:0], r, &v, "p")
	}
}

// BenchmarkFinish100k measures Finish (aggregates, exact percentiles,
// timeslices, four files) over 100k records.
func BenchmarkFinish100k(b *testing.B) {
	const n = 100_000
	recs := make([]*Record, 64)
	for i := range recs {
		recs[i] = okRecord(i, int64(i*37%1000), int64(50+i%200), int64(5+i%7), 1000+i*100, 10+i%300, i%5, 5)
	}
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		c, err := NewCollector(b.TempDir(), CollectorOptions{Now: fixedClock(t0), SliceDuration: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		for i := range n {
			r := *recs[i%len(recs)]
			r.RequestStartNs += int64(i) * int64(time.Millisecond) * 18 // ~30 min run
			c.Add(&r)
		}
		b.StartTimer()
		if _, err := c.Finish(RunInfo{BenchmarkID: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeRecordLine measures the record decoder on the line
// BenchmarkRecordLine writes (every reader of the record files, and a
// merge, decodes each line once).
func BenchmarkDecodeRecordLine(b *testing.B) {
	r := okRecord(1, 0, 120, 8, 48211, 311, 700, 753)
	v := Compute(r)
	line := appendRecordLine(nil, r, &v, "p")
	line = line[:len(line)-1]
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	var l RecordLine
	for range b.N {
		if err := DecodeRecordLine(line, &l); err != nil {
			b.Fatal(err)
		}
	}
}
