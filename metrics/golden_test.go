package metrics

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func readFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestGoldenExports(t *testing.T) {
	dir := t.TempDir()
	s := runFixture(t, dir)
	for _, name := range []string{FileRecords, FileOverflow, FileAggregateJSON, FileAggregateCSV, FileTimeslicesJSON, FileTimeslicesCSV} {
		checkGolden(t, name, readFile(t, dir, name))
	}
	// No temporary or partial files are left behind.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".partial") || strings.Contains(e.Name(), ".tmp") {
			t.Errorf("leftover temporary file %s", e.Name())
		}
	}

	// Hand-checked numbers.
	ttft, ok := s.Metric("time_to_first_token")
	if !ok {
		t.Fatal("no time_to_first_token")
	}
	// TTFTs 100,200,300,400,500: numpy p50 = 300, p90 = 400 + 0.6·100 = 460,
	// p1 = 100 + 0.04·100 = 104, mean 300, population std = sqrt(20000).
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"ttft p50", ttft.P50, 300}, {"ttft p90", ttft.P90, 460}, {"ttft p1", ttft.P1, 104},
		{"ttft avg", ttft.Avg, 300}, {"ttft std", ttft.Std, math.Sqrt(20000)}, {"ttft sum", ttft.Sum, 1500},
		// ITL of every record: (latency − TTFT)/(OSL − 1) = (10·10)/10 = 10 ms.
		{"itl avg", mustStat(t, s, "inter_token_latency").Avg, 10},
		// Theoretical hit: (3+0+5+2+0)/(4+2+5+4+5) = 10/20 = 50 %.
		{"theoretical %", s.TheoreticalHitPct, 50},
		// Duration: first start t0, last response = t0+1500 ms + 500 ms TTFT + 100 ms decode = 2.1 s.
		{"duration", s.BenchmarkDuration, 2.1},
		{"request throughput 5/2.1", s.RequestThroughput, 5 / 2.1},
		{"output tok/s 55/2.1", s.OutputTokenThroughput, 55 / 2.1},
		{"total tok/s (15000+55)/2.1", s.TotalTokenThroughput, 15055 / 2.1},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.RequestCount != 5 || s.ErrorRequestCount != 1 || s.CompletedRequestCount != 6 || s.CancelledRequestCount != 1 ||
		s.ContextOverflowCount != 1 || s.WarmupRequestCount != 1 || s.WarmupErrorCount != 1 {
		t.Errorf("counts: %+v", s)
	}
	if s.TheoreticalHitBlocks != 10 || s.TheoreticalTotalBlocks != 20 {
		t.Errorf("theoretical blocks %d/%d, want 10/20", s.TheoreticalHitBlocks, s.TheoreticalTotalBlocks)
	}
	a := s.Info.Accounting
	if a != (Accounting{Sent: 10, ProfilingOK: 5, ProfilingErrors: 1, WarmupOK: 1, WarmupErrors: 1, Overflows: 1, Cancelled: 1}) {
		t.Errorf("accounting %+v", a)
	}

	// The aggregate JSON has the hand-checked values too.
	var agg map[string]any
	if err := json.Unmarshal(readFile(t, dir, FileAggregateJSON), &agg); err != nil {
		t.Fatal(err)
	}
	tp := agg["theoretical_prefix_cache_hit"].(map[string]any)
	if tp["avg"] != 50.0 || tp["sum"] != 10.0 || tp["count"] != 20.0 || tp["unit"] != "%" {
		t.Errorf("theoretical_prefix_cache_hit = %v", tp)
	}
	if got := agg["time_to_first_token"].(map[string]any)["p90"]; got != 460.0 {
		t.Errorf("json ttft p90 = %v", got)
	}
	cfg := agg["input_config"].(map[string]any)
	if got := cfg["endpoint"].(map[string]any)["api_key"]; got != redactedPlaceholder {
		t.Errorf("api_key not redacted: %v", got)
	}
	if got := cfg["headers"].(map[string]any)["Authorization"]; got != redactedPlaceholder {
		t.Errorf("Authorization not redacted: %v", got)
	}
	lg := cfg["loadgen"].(map[string]any)
	if lg["hf_token"] != redactedPlaceholder || lg["max_tokens"] != 11.0 {
		t.Errorf("loadgen redaction wrong: %v", lg)
	}
	if got := cfg["tokenizer"].(map[string]any)["name"]; got != "deepseek-ai/DeepSeek-V3" {
		t.Errorf("tokenizer wrongly redacted: %v", got)
	}
	csv := string(readFile(t, dir, FileAggregateCSV))
	for _, want := range []string{"Time to First Token (ms),300.00,100.00,500.00,1500.00,104.00,", "\r\nRequest Count,5.00\r\n", "Theoretical Prefix Cache Hit (%),50.00\r\n"} {
		if !strings.Contains(csv, want) {
			t.Errorf("CSV lacks %q", want)
		}
	}
}

func mustStat(t *testing.T, s *Summary, tag string) Stat {
	t.Helper()
	st, ok := s.Metric(tag)
	if !ok {
		t.Fatalf("no %s", tag)
	}
	return st
}

// TestReportReproducesFinish: recomputing from the folder gives the same
// aggregate files byte for byte.
func TestReportReproducesFinish(t *testing.T) {
	dir := t.TempDir()
	runFixture(t, dir)
	wantJSON := readFile(t, dir, FileAggregateJSON)
	wantCSV := readFile(t, dir, FileAggregateCSV)
	os.Remove(filepath.Join(dir, FileAggregateCSV))
	var out strings.Builder
	s, err := RecomputeWith(dir, &out, RecomputeOptions{Location: time.UTC})
	if err != nil {
		t.Fatalf("Recompute: %v", err)
	}
	if got := readFile(t, dir, FileAggregateJSON); string(got) != string(wantJSON) {
		t.Errorf("Recompute changed the aggregate JSON:\n%s", got)
	}
	if got := readFile(t, dir, FileAggregateCSV); string(got) != string(wantCSV) {
		t.Errorf("Recompute changed the aggregate CSV:\n%s", got)
	}
	if s.RequestCount != 5 || !strings.Contains(out.String(), "Time to First Token (ms)") {
		t.Errorf("report table:\n%s", out.String())
	}
	checkGolden(t, "summary_table.txt", []byte(out.String()))
}
