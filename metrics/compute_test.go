package metrics

import (
	"math"
	"strings"
	"testing"
)

// knownRecord is a successful streaming record with hand-checkable numbers:
// start at 1 s, first chunk +100 ms, second +110 ms, last content +1100 ms,
// response consumed +1120 ms, 101 output tokens of which 1 reasoning.
func knownRecord() *Record {
	const s = int64(1_000_000_000)
	return &Record{
		Phase:          PhaseProfiling,
		RequestStartNs: s,
		RequestAckNs:   s + 50_000_000,
		FirstChunkNs:   s + 100_000_000,
		SecondChunkNs:  s + 110_000_000,
		FirstOutputNs:  s + 120_000_000,
		LastChunkNs:    s + 1_100_000_000,
		RequestEndNs:   s + 1_120_000_000,
		ContentChunks:  101,
		MaxTokens:      100,
		Usage: &Usage{PromptTokens: 2000, CompletionTokens: 101, TotalTokens: 2101,
			ReasoningTokens: 1, HasReasoning: true, CachedTokens: 1536, HasCached: true},
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestComputeKnownRecord(t *testing.T) {
	t.Parallel()
	v := Compute(knownRecord())
	cases := []struct {
		name      string
		got, want float64
	}{
		{"ttft", v.TTFT, 100},
		{"ttst", v.TTST, 10},
		{"ttfo", v.TTFO, 120},
		{"latency", v.RequestLatency, 1100},
		{"decode", v.DecodeDuration, 1000},
		{"full decode", v.FullDecodeDuration, 1020},
		{"itl = (1100-100)/(101-1)", v.ITL, 10},
		{"full itl = 1020/100", v.FullResponseITL, 10.2},
		{"tps/user = 1000/10", v.OutputTPSPerUser, 100},
		{"full tps/user = 100/1.02", v.FullResponseTPSPerUser, 100 / 1.02},
		{"e2e = 101/1.1", v.E2EOutputTPS, 101 / 1.1},
		{"prefill = 2000/0.1", v.PrefillTPSPerUser, 20000},
		{"isl", v.ISL, 2000},
		{"osl", v.OSL, 101},
		{"output count", v.OutputTokenCount, 100},
		{"reasoning", v.ReasoningTokenCount, 1},
		{"cache read", v.UsageCacheReadTokens, 1536},
		{"osl mismatch", v.OSLMismatchPct, 1},
	}
	for _, c := range cases {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if Has(v.ErrorISL) {
		t.Errorf("successful record has error_isl %v", v.ErrorISL)
	}
}

func TestComputeAbsences(t *testing.T) {
	t.Parallel()
	t.Run("no usage", func(t *testing.T) {
		r := knownRecord()
		r.Usage = nil
		v := Compute(r)
		for _, x := range []float64{v.ISL, v.OSL, v.ITL, v.FullResponseITL, v.OutputTPSPerUser, v.PrefillTPSPerUser, v.E2EOutputTPS} {
			if Has(x) {
				t.Errorf("token-derived metric present without usage: %+v", v)
				break
			}
		}
		if !near(v.TTFT, 100) || !near(v.RequestLatency, 1100) {
			t.Errorf("timing metrics must not need usage: ttft %v latency %v", v.TTFT, v.RequestLatency)
		}
	})
	t.Run("osl 1 has no itl", func(t *testing.T) {
		r := knownRecord()
		r.Usage.CompletionTokens = 1
		r.Usage.ReasoningTokens = 0
		v := Compute(r)
		if Has(v.ITL) || Has(v.FullResponseITL) {
			t.Errorf("ITL with OSL 1: %v %v", v.ITL, v.FullResponseITL)
		}
	})
	t.Run("no reasoning or cache reported", func(t *testing.T) {
		r := knownRecord()
		r.Usage.HasReasoning, r.Usage.HasCached = false, false
		v := Compute(r)
		if Has(v.ReasoningTokenCount) || Has(v.UsageCacheReadTokens) || !near(v.OutputTokenCount, 101) {
			t.Errorf("reasoning %v cache %v output %v", v.ReasoningTokenCount, v.UsageCacheReadTokens, v.OutputTokenCount)
		}
	})
	t.Run("error carries only error_isl", func(t *testing.T) {
		r := knownRecord()
		r.Usage = nil
		r.RecordedIn = 777
		r.Error = &Error{Code: 503, Type: "Service Unavailable", Message: "x", Category: CategoryHTTP}
		v := Compute(r)
		if !near(v.ErrorISL, 777) || Has(v.TTFT) || Has(v.RequestLatency) {
			t.Errorf("error record values %+v", v)
		}
	})
}

// TestValuesArrayMatchesTable keeps Values.array in the order of Metrics.
func TestValuesArrayMatchesTable(t *testing.T) {
	t.Parallel()
	if len(Metrics) != numMetrics {
		t.Fatalf("len(Metrics) = %d, numMetrics = %d", len(Metrics), numMetrics)
	}
	var v Values
	for i := range Metrics {
		if Metrics[i].set != nil {
			Metrics[i].set(&v, float64(i+1))
		}
	}
	arr := v.array()
	for i := range Metrics {
		if got := Metrics[i].Get(&v); arr[i] != got {
			t.Errorf("array()[%d] = %v, Metrics[%d] (%s) reads %v", i, arr[i], i, Metrics[i].Tag, got)
		}
	}
}

// TestNonStreamingHasNoTTFTOrITL: a response read whole has a latency and
// token counts but no TTFT, ITL or anything derived from them, in the
// record values and in the aggregates and summary table.
func TestNonStreamingHasNoTTFTOrITL(t *testing.T) {
	t.Parallel()
	r := okRecord(0, 0, 100, 10, 1000, 11, 0, 0)
	r.FirstChunkNs, r.SecondChunkNs, r.FirstOutputNs, r.LastChunkNs = r.RequestEndNs, 0, r.RequestEndNs, r.RequestEndNs
	r.ContentChunks, r.NonStreaming = 1, true
	v := Compute(r)
	for name, x := range map[string]float64{"TTFT": v.TTFT, "TTST": v.TTST, "TTFO": v.TTFO, "ITL": v.ITL, "FullResponseITL": v.FullResponseITL,
		"OutputTPSPerUser": v.OutputTPSPerUser, "PrefillTPSPerUser": v.PrefillTPSPerUser, "DecodeDuration": v.DecodeDuration} {
		if Has(x) {
			t.Errorf("%s = %v for a non-streaming response, want absent", name, x)
		}
	}
	// StreamingOnly names exactly the metrics a streamed response has and
	// this one lacks.
	sr := okRecord(0, 0, 100, 10, 1000, 11, 0, 0)
	sv := Compute(sr)
	for i := range Metrics {
		m := &Metrics[i]
		lost := Has(m.Get(&sv)) && !Has(m.Get(&v))
		if lost != StreamingOnly(m.Tag) {
			t.Errorf("%s: absent without streaming %v, StreamingOnly says %v", m.Tag, lost, StreamingOnly(m.Tag))
		}
	}
	if !Has(v.RequestLatency) || v.OSL != 11 || v.ISL != 1000 {
		t.Errorf("latency %v, OSL %v, ISL %v: want them measured", v.RequestLatency, v.OSL, v.ISL)
	}
	c, err := NewCollector(t.TempDir(), CollectorOptions{Now: fixedClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	c.Add(r)
	s, err := c.Finish(RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := s.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if tab := b.String(); strings.Contains(tab, "Time to First Token") || strings.Contains(tab, "Inter Token Latency") || !strings.Contains(tab, "Request Latency") {
		t.Errorf("summary of a non-streaming run:\n%s", tab)
	}
}
