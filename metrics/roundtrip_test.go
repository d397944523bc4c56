package metrics

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// randomRecords builds n records with random but well-formed timings,
// usage, outcomes and phases from seed.
func randomRecords(seed uint64, n int) []*Record {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	recs := make([]*Record, n)
	for i := range recs {
		start := t0.UnixNano() + rng.Int64N(int64(5*time.Second))
		r := &Record{SessionNum: i, ConversationID: "t", TurnIndex: rng.IntN(40), Phase: PhaseProfiling,
			RequestStartNs: start, CreditIssuedNs: start - rng.Int64N(1e6), RequestAckNs: start + rng.Int64N(1e8)}
		if rng.IntN(5) == 0 {
			r.Phase = PhaseWarmup
		}
		first := start + 1 + rng.Int64N(int64(3*time.Second))
		osl := 1 + rng.IntN(2000)
		last := first + int64(osl-1)*rng.Int64N(int64(50*time.Millisecond)+1)
		r.FirstChunkNs, r.FirstOutputNs, r.LastChunkNs = first, first+rng.Int64N(1000), last
		if osl > 1 {
			r.SecondChunkNs = first + rng.Int64N(last-first+1)
		}
		r.RequestEndNs = last + rng.Int64N(1e7)
		r.MaxTokens = osl + rng.IntN(3) - 1
		isl := 1 + rng.IntN(200000)
		r.Usage = &Usage{PromptTokens: isl, CompletionTokens: osl, TotalTokens: isl + osl,
			CachedTokens: rng.IntN(isl + 1), HasCached: rng.IntN(2) == 0,
			ReasoningTokens: rng.IntN(osl + 1), HasReasoning: rng.IntN(3) == 0}
		r.TotalBlocks = rng.IntN(4000)
		if r.TotalBlocks > 0 {
			r.HitBlocks = rng.IntN(r.TotalBlocks + 1)
		}
		switch rng.IntN(10) {
		case 0:
			r.Usage, r.RecordedIn = nil, rng.IntN(1000)
			r.Error = &Error{Code: 500 + rng.IntN(5), Type: "Server Error", Message: "boom\n\"x\"", Category: CategoryHTTP}
		case 1:
			r.Cancelled, r.CancellationNs = true, r.RequestEndNs
		case 2:
			r.ContextOverflow = true
			r.Error = &Error{Code: 400, Message: "maximum context length", Category: CategoryHTTP}
		case 3:
			r.Usage = nil // no usage: timing only
		}
		recs[i] = r
	}
	return recs
}

// FuzzFinishReportRoundTrip: for any set of records, recomputing the
// aggregates from the written files (Report) reproduces the files Finish
// wrote byte for byte — the JSONL carries everything the aggregates need,
// and every number survives its text form.
func FuzzFinishReportRoundTrip(f *testing.F) {
	for _, s := range []uint64{1, 2, 42, 1 << 40} {
		f.Add(s, uint8(30))
	}
	f.Add(uint64(7), uint8(1))
	f.Fuzz(func(t *testing.T, seed uint64, n uint8) {
		dir := t.TempDir()
		c, err := NewCollector(dir, CollectorOptions{Now: fixedClock(t0), Location: time.UTC, SliceDuration: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range randomRecords(seed, int(n)) {
			c.Add(r)
		}
		info := fixtureInfo()
		info.InputConfig["loadgen"].(map[string]any)["ratio"] = 0.25
		// The coverage is run context Recompute keeps, in its place.
		info.Coverage = []PhaseCoverage{{PhaseName: "profiling", ExpectedDurationSeconds: 2.5, RequiredRatio: 0.98, TTFTRatio: 0.5, ITLRatio: 0.25}}
		if _, err := c.Finish(info); err != nil {
			t.Fatal(err)
		}
		want := readFile(t, dir, FileAggregateJSON)
		wantCSV := readFile(t, dir, FileAggregateCSV)
		if err := os.Remove(filepath.Join(dir, FileAggregateCSV)); err != nil {
			t.Fatal(err)
		}
		if _, err := RecomputeWith(dir, nil, RecomputeOptions{Location: time.UTC}); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, dir, FileAggregateJSON); !bytes.Equal(got, want) {
			t.Fatalf("Report JSON differs from Finish JSON (seed %d, n %d)", seed, n)
		}
		if got := readFile(t, dir, FileAggregateCSV); !bytes.Equal(got, wantCSV) {
			t.Fatalf("Report CSV differs from Finish CSV (seed %d, n %d)", seed, n)
		}
	})
}
