package replay

import (
	"testing"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/scenario"
)

// discardSink drops every record.
type discardSink struct{}

func (discardSink) Add(*metrics.Record) {}

// benchEngine is an engine with what the per-record path reads: the
// config's defaults, a failed-request threshold and the sink made by
// sink, given the run's tally as package run gives it.
func benchEngine(b *testing.B, sink func(*testing.B, *metrics.Tally) metrics.Sink) *engine {
	b.Helper()
	c := DefaultConfig()
	c.Progress = new(Progress)
	c.Sink = sink(b, &c.Progress.Tally)
	c.Threshold = scenario.NewThreshold(0.1, &c.Progress.Tally)
	cfg := c.normalize()
	e := &engine{c: cfg, tally: &cfg.Progress.Tally}
	if fs, ok := cfg.Sink.(FallibleSink); ok {
		e.sinkErr = fs
	}
	return e
}

// BenchmarkRecordAccounting measures what the engine does for one request
// besides the exchange: the send-side counters and the threshold's
// sequence number (sending, returned), then emit (the classified record
// counted, judged by the threshold and given to the sink). With a discard
// sink it is the engine's own bookkeeping; with a metrics.Collector the
// whole per-record path of a run. The _parallel variants run 8 goroutines
// per core, as lanes do.
func BenchmarkRecordAccounting(b *testing.B) {
	sinks := []struct {
		name string
		sink func(*testing.B, *metrics.Tally) metrics.Sink
	}{
		{"discard", func(*testing.B, *metrics.Tally) metrics.Sink { return discardSink{} }},
		{"collector", func(b *testing.B, tl *metrics.Tally) metrics.Sink {
			c, err := metrics.NewCollector(b.TempDir(), metrics.CollectorOptions{Tally: tl})
			if err != nil {
				b.Fatal(err)
			}
			return c
		}},
	}
	one := func(e *engine, rec *metrics.Record) {
		seq := e.sending(rec.Phase)
		e.returned()
		e.emit(rec, seq)
	}
	for _, s := range sinks {
		b.Run(s.name, func(b *testing.B) {
			e := benchEngine(b, s.sink)
			rec := benchRecord()
			b.ReportAllocs()
			for b.Loop() {
				one(e, rec)
			}
		})
		b.Run(s.name+"_parallel", func(b *testing.B) {
			e := benchEngine(b, s.sink)
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				rec := benchRecord()
				for pb.Next() {
					one(e, rec)
				}
			})
		})
	}
}

// benchRecord is a successful streamed profiling request, classified.
func benchRecord() *metrics.Record {
	const ms = int64(1e6)
	r := &metrics.Record{Phase: metrics.PhaseProfiling, WorkerID: "lane_0001", XRequestID: "0d9c2b7e-3f4a-4c1e-9a77-5b2f0e6d8c11",
		XCorrelationID: "6a1f0c3d-8e2b-4d5a-b7c9-0e4f1a2b3c4d", ConversationID: "trace-1", Model: "m", MaxTokens: 300,
		CreditIssuedNs: 1_000 * ms, RequestStartNs: 1_000 * ms, RequestAckNs: 1_050 * ms, FirstChunkNs: 1_120 * ms,
		SecondChunkNs: 1_128 * ms, FirstOutputNs: 1_120 * ms, LastChunkNs: 1_700 * ms, RequestEndNs: 1_701 * ms, ContentChunks: 80,
		Usage: &metrics.Usage{PromptTokens: 48211, CompletionTokens: 311, TotalTokens: 48522}, RecordedIn: 48211, RecordedOut: 311,
		HitBlocks: 700, TotalBlocks: 753}
	r.Bucket = metrics.BucketOf(r)
	return r
}
