package metrics

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// overflowRecord is a context overflow of phase ph.
func overflowRecord(i int, ph Phase) *Record {
	r := okRecord(i, 0, 10, 1, 10, 3, 0, 0)
	r.Phase, r.Usage, r.ContextOverflow = ph, nil, true
	r.Error = &Error{Code: 400, Message: "prompt is too long", Category: CategoryHTTP}
	return r
}

// TestOverflowsCountedPerPhase: context_overflow_count (the aggregate, its
// metadata copy and the summary's profiling figure) counts profiling
// overflows only, as aiperf's metric does; warmup overflows are counted
// apart; the accounting counts both. Recompute recomputes the same split
// from context_overflow_export.jsonl.
func TestOverflowsCountedPerPhase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c, err := NewCollector(dir, CollectorOptions{Now: fixedClock(t0)})
	if err != nil {
		t.Fatal(err)
	}
	c.Add(overflowRecord(0, PhaseWarmup))
	c.Add(overflowRecord(1, PhaseWarmup))
	c.Add(overflowRecord(2, PhaseProfiling))
	c.Add(okRecord(3, 0, 10, 1, 10, 3, 0, 0))
	check := func(how string, s *Summary) {
		t.Helper()
		if s.ContextOverflowCount != 1 || s.WarmupOverflowCount != 2 || s.Info.Accounting.Overflows != 3 {
			t.Errorf("%s: overflows profiling %d, warmup %d, accounting %d; want 1, 2, 3", how, s.ContextOverflowCount, s.WarmupOverflowCount, s.Info.Accounting.Overflows)
		}
		var agg struct {
			Count struct {
				Avg float64 `json:"avg"`
			} `json:"context_overflow_count"`
			Metadata struct {
				Count  int `json:"context_overflow_count"`
				Warmup int `json:"warmup_context_overflow_count"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(readFile(t, dir, FileAggregateJSON), &agg); err != nil {
			t.Fatal(err)
		}
		if agg.Count.Avg != 1 || agg.Metadata.Count != 1 || agg.Metadata.Warmup != 2 {
			t.Errorf("%s: aggregate JSON %+v", how, agg)
		}
		var b strings.Builder
		s.WriteTable(&b)
		if !strings.Contains(b.String(), "0 cancelled, 1 context overflows; warmup: 0 ok, 0 errors, 0 cancelled, 2 context overflows") {
			t.Errorf("%s: summary line:\n%s", how, b.String())
		}
	}
	s, err := c.Finish(RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	check("Finish", s)
	s, err = RecomputeWith(dir, nil, RecomputeOptions{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	check("Report", s)
}

// TestErrorRateWarning: above 5 % failed profiling requests the summary
// starts with the error rate and metadata.warnings carries it (once, also
// after Recompute recomputes it); at or below 5 % neither does.
func TestErrorRateWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ok, failed int
		want       string
	}{
		{19, 1, ""}, // exactly 5 %
		{9, 1, "error rate 10.00 %: 1 of the 10 profiling requests that completed failed"},
		{37, 63, "error rate 63.00 %: 63 of the 100 profiling requests that completed failed"},
	} {
		dir := t.TempDir()
		c, err := NewCollector(dir, CollectorOptions{Now: fixedClock(t0)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range tc.ok + tc.failed {
			r := okRecord(i, 0, 10, 1, 10, 3, 0, 0)
			if i >= tc.ok {
				r.Usage, r.Error = nil, &Error{Code: 500, Type: "Internal Server Error", Message: "boom", Category: CategoryHTTP}
			}
			c.Add(r)
		}
		s, err := c.Finish(RunInfo{Warnings: []string{"an earlier warning"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, how := range []string{"Finish", "Report"} {
			if how == "Report" {
				if s, err = RecomputeWith(dir, nil, RecomputeOptions{Location: time.UTC}); err != nil {
					t.Fatal(err)
				}
			}
			var b strings.Builder
			s.WriteTable(&b)
			first, _, _ := strings.Cut(b.String(), "\n")
			var agg struct {
				Metadata struct {
					Warnings []string `json:"warnings"`
				} `json:"metadata"`
			}
			json.Unmarshal(readFile(t, dir, FileAggregateJSON), &agg)
			n := 0
			for _, w := range agg.Metadata.Warnings {
				if strings.HasPrefix(w, "error rate") {
					n++
				}
			}
			switch {
			case tc.want == "" && (strings.Contains(b.String(), "error rate") || n != 0):
				t.Errorf("%s, %d of %d failed: warned:\n%s\n%v", how, tc.failed, tc.ok+tc.failed, b.String(), agg.Metadata.Warnings)
			case tc.want != "" && (!strings.Contains(first, tc.want) || n != 1 || strings.Count(b.String(), "error rate") != 1):
				t.Errorf("%s, %d of %d failed: first line %q, %d error-rate warnings in the metadata %v", how, tc.failed, tc.ok+tc.failed, first, n, agg.Metadata.Warnings)
			}
			if len(agg.Metadata.Warnings) == 0 || agg.Metadata.Warnings[0] != "an earlier warning" {
				t.Errorf("%s: the run's warnings are lost: %v", how, agg.Metadata.Warnings)
			}
		}
	}
}
