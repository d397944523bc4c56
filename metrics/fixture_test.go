package metrics

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// t0 is the fixture's profiling start: 2026-08-12T14:03:07.512034Z.
var t0 = time.Date(2026, 8, 12, 14, 3, 7, 512034000, time.UTC)

const ms = int64(time.Millisecond)

// okRecord builds a successful profiling record starting at t0+startMs with
// the given TTFT, a content stream of osl tokens at itl ms apart, and the
// theoretical cache blocks hit/total.
func okRecord(i int, startMs, ttftMs, itlMs int64, isl, osl, hit, total int) *Record {
	start := t0.UnixNano() + startMs*ms
	first := start + ttftMs*ms
	last := first + int64(osl-1)*itlMs*ms
	return &Record{
		SessionNum: i, XRequestID: "req-" + string(rune('a'+i)), XCorrelationID: "corr-" + string(rune('a'+i%3)),
		ConversationID: "trace-04" + string(rune('0'+i%3)), TurnIndex: i, SourceTraceID: "trace-04" + string(rune('0'+i%3)),
		SourceOuterIdx: i, SourceKind: "weka_main", RootCorrelationID: "corr-" + string(rune('a'+i%3)),
		Lane: i % 3, Phase: PhaseProfiling, Model: "m",
		CreditIssuedNs: start - ms, RequestStartNs: start, RequestAckNs: start + ms,
		FirstChunkNs: first, SecondChunkNs: first + itlMs*ms, FirstOutputNs: first, LastChunkNs: last,
		RequestEndNs: last + 2*ms, ContentChunks: osl, MaxTokens: osl,
		Usage: &Usage{PromptTokens: isl, CompletionTokens: osl, TotalTokens: isl + osl,
			CachedTokens: isl / 2, HasCached: true},
		RecordedIn: isl - 100, RecordedOut: osl, HitBlocks: hit, TotalBlocks: total,
	}
}

// fixtureRecords is the golden fixture: five successful profiling records
// (TTFT 100..500 ms, ITL 10 ms, OSL 11), one HTTP error, one cancelled
// request, one warmup success, one warmup error, and one context overflow.
func fixtureRecords() (recs []*Record, overflow *Record) {
	recs = []*Record{
		okRecord(0, 0, 100, 10, 1000, 11, 3, 4),
		okRecord(1, 200, 200, 10, 2000, 11, 0, 2),
		okRecord(2, 400, 300, 10, 3000, 11, 5, 5),
		okRecord(3, 1200, 400, 10, 4000, 11, 2, 4),
		okRecord(4, 1500, 500, 10, 5000, 11, 0, 5),
	}
	e := okRecord(5, 600, 0, 0, 0, 1, 0, 0)
	e.FirstChunkNs, e.SecondChunkNs, e.FirstOutputNs, e.LastChunkNs, e.Usage = 0, 0, 0, 0, nil
	e.RecordedIn, e.RequestEndNs = 9120, e.RequestStartNs+4*ms
	e.Error = &Error{Code: 503, Type: "Service Unavailable", Message: `{"error":"upstream overloaded"}`, Category: CategoryHTTP}
	e.AgentDepth, e.ParentCorrelationID = 1, "corr-a"
	c := okRecord(6, 1700, 100, 10, 1000, 11, 0, 0)
	c.Usage, c.LastChunkNs, c.RequestEndNs = nil, 0, c.RequestStartNs+300*ms
	c.Cancelled, c.CancellationNs = true, c.RequestEndNs
	w := okRecord(7, -2000, 50, 5, 800, 1, 0, 0)
	w.Phase = PhaseWarmup
	we := okRecord(8, -1900, 0, 0, 0, 1, 0, 0)
	we.Phase, we.Usage = PhaseWarmup, nil
	we.Error = &Error{Code: 0, Type: "ConnectionResetError", Message: "connection reset by peer\nline2", Category: CategoryTransport}
	overflow = okRecord(9, 800, 0, 0, 0, 1, 0, 0)
	overflow.Usage = nil
	overflow.ContextOverflow = true
	overflow.Error = &Error{Code: 400, Type: "Bad Request", Message: "This model's maximum context length is 131072 tokens", Category: CategoryHTTP}
	return append(recs, e, c, w, we), overflow
}

// fixtureInfo is the RunInfo of the golden fixture.
func fixtureInfo() RunInfo {
	info := RunInfo{
		BenchmarkID: "3c9d2f1a7b64", Scenario: "inferencex-agentx-mvp",
		StartTime: t0.Add(-3 * time.Second), EndTime: t0.Add(3 * time.Second),
		ProfilingStart: t0, ProfilingEnd: t0.Add(2500 * time.Millisecond),
		InputConfig: map[string]any{
			"endpoint":  map[string]any{"urls": []any{"http://localhost:8000"}, "api_key": "sk-secret", "streaming": true},
			"models":    map[string]any{"items": []any{map[string]any{"name": "m"}}},
			"tokenizer": map[string]any{"name": "deepseek-ai/DeepSeek-V3"},
			"headers":   map[string]any{"Authorization": "Bearer xyz"},
			"loadgen":   map[string]any{"concurrency": 3, "max_tokens": 11, "hf_token": "hf_abc"},
		},
		Dataset: map[string]any{"source_type": "public_dataset", "loader": "semianalysis_cc_traces_weka_062126",
			"hf_dataset_name": "semianalysisai/cc-traces-weka-062126", "hf_split": "train"},
		Concurrency: 3, SkippedSubagentRequests: 2,
		Extra: map[string]any{"corpus_sha256": "abc123"},
	}
	info.Validity.Valid = true
	return info
}

// fixedClock returns a clock that always reads t.
func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

// runFixture runs the golden fixture through a Collector in dir.
func runFixture(t testing.TB, dir string) *Summary {
	t.Helper()
	c, err := NewCollector(dir, CollectorOptions{SliceDuration: time.Second, Now: fixedClock(t0),
		Location: time.UTC, Version: "agentperf-test"})
	if err != nil {
		t.Fatal(err)
	}
	recs, ovf := fixtureRecords()
	for _, r := range recs {
		c.Add(r)
	}
	c.AddOverflow(ovf)
	s, err := c.Finish(fixtureInfo())
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return s
}

// checkGolden compares got with testdata/golden/name (rewritten with -update).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./metrics -run Golden -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (run with -update after checking the diff):\n--- got\n%s", name, got)
	}
}
