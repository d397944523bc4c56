package dataset

// HitCount is a theoretical prefix-cache hit count for one request.
type HitCount struct{ Hit, Total int }

// PrefixHits returns definition-C hit counts for t's parent requests.
func PrefixHits(t *Trace) (parent []HitCount) { return nil }

// CorpusStats summarises a corpus.
type CorpusStats struct {
	Traces int
}

// ComputeStats computes statistics over traces.
func ComputeStats(traces []Trace) CorpusStats { return CorpusStats{Traces: len(traces)} }
