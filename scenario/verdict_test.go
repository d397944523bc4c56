package scenario

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	t.Parallel()
	// A clean one-hour run: 10 000 responses, coverage to the end.
	clean := JudgeInput{Responses: 10000, Completed: 9990, PhaseDuration: time.Hour, TTFTCoverage: 0.999, ITLCoverage: 1}
	for _, c := range []struct {
		name   string
		mutate func(*JudgeInput)
		want   []string
	}{
		{"clean", func(*JudgeInput) {}, nil},
		{"unsafe override", func(in *JudgeInput) { in.StaticReasons = []string{ReasonUnsafeOverride} }, []string{ReasonUnsafeOverride}},
		{"overflow rate exactly 1%", func(in *JudgeInput) { in.Overflows = 100 }, nil},
		{"overflow rate above 1%", func(in *JudgeInput) { in.Overflows = 101 }, []string{ReasonOverflowRateExceeded}},
		// aiperf's regression: 101 of 10 101 responses is below 1 %.
		{"overflows inside the denominator", func(in *JudgeInput) { in.Overflows, in.Responses = 101, 10101 }, nil},
		{"custom limit at", func(in *JudgeInput) { in.Overflows, in.OverflowRateLimit = 500, Some(0.05) }, nil},
		{"custom limit above", func(in *JudgeInput) { in.Overflows, in.OverflowRateLimit = 501, Some(0.05) }, []string{ReasonOverflowRateExceeded}},
		{"zero tolerance", func(in *JudgeInput) { in.Overflows, in.OverflowRateLimit = 1, Some(0.0) }, []string{ReasonOverflowRateExceeded}},
		{"no responses: rate 0", func(in *JudgeInput) { in.Responses, in.Overflows, in.Completed = 0, 0, 1 }, nil},
		{"cancelled", func(in *JudgeInput) { in.Cancelled = true }, []string{ReasonRunCancelled}},
		{"coverage: TTFT alone enough", func(in *JudgeInput) { in.TTFTCoverage, in.ITLCoverage = 0.98, 0.5 }, nil},
		{"coverage: ITL alone enough", func(in *JudgeInput) { in.TTFTCoverage, in.ITLCoverage = 0.2, 0.98 }, nil},
		{"coverage: both short", func(in *JudgeInput) { in.TTFTCoverage, in.ITLCoverage = 0.97, 0.979 }, []string{ReasonInsufficientCoverage}},
		{"coverage: 900 s phase counts", func(in *JudgeInput) { in.PhaseDuration, in.TTFTCoverage, in.ITLCoverage = 900*time.Second, 0.5, 0.5 }, []string{ReasonInsufficientCoverage}},
		{"coverage: short phase exempt", func(in *JudgeInput) { in.PhaseDuration, in.TTFTCoverage, in.ITLCoverage = 899*time.Second, 0, 0 }, nil},
		{"nothing completed", func(in *JudgeInput) { in.Completed = 0 }, []string{ReasonZeroCompleted}},
		{"all at once, aiperf's order", func(in *JudgeInput) {
			in.StaticReasons = []string{ReasonUnsafeOverride}
			in.Cancelled = true
			in.Overflows = 500
			in.TTFTCoverage, in.ITLCoverage = 0.5, 0.5
			in.Completed = 0
		}, []string{ReasonUnsafeOverride, ReasonOverflowRateExceeded, ReasonRunCancelled, ReasonInsufficientCoverage, ReasonZeroCompleted}},
		{"duplicate static reasons once", func(in *JudgeInput) { in.StaticReasons = []string{ReasonUnsafeOverride, ReasonUnsafeOverride} }, []string{ReasonUnsafeOverride}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := clean
			c.mutate(&in)
			v := Judge(in)
			if v.Valid != (len(c.want) == 0) || !slices.Equal(v.Reasons, c.want) || len(v.Messages) != len(v.Reasons) {
				t.Fatalf("Judge = %+v, want reasons %v", v, c.want)
			}
		})
	}
}

func TestJudgeMessages(t *testing.T) {
	t.Parallel()
	v := Judge(JudgeInput{Overflows: 3, Responses: 100, Completed: 97, PhaseDuration: time.Hour, TTFTCoverage: 0.5, ITLCoverage: 0.25})
	if len(v.Messages) != 2 || !strings.Contains(v.Messages[0], "3 of 100") || !strings.Contains(v.Messages[0], "3.00%") ||
		!strings.Contains(v.Messages[1], "50.0%") || !strings.Contains(v.Messages[1], "25.0%") || !strings.Contains(v.Messages[1], "server logs") {
		t.Errorf("messages %q", v.Messages)
	}
}

func TestCoverageRatio(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		last time.Time
		d    time.Duration
		want float64
	}{
		{start.Add(1764 * time.Second), 1800 * time.Second, 0.98},
		{start.Add(1800 * time.Second), 1800 * time.Second, 1},
		{start.Add(1830 * time.Second), 1800 * time.Second, 1830.0 / 1800}, // in grace
		{time.Time{}, time.Hour, 0},
		{start.Add(-time.Second), time.Hour, 0},
		{start.Add(time.Second), 0, 0},
	} {
		if got := CoverageRatio(start, c.last, c.d); got != c.want {
			t.Errorf("CoverageRatio(+%v, %v) = %v, want %v", c.last.Sub(start), c.d, got, c.want)
		}
	}
	if OverflowRate(1, 0) != 0 || OverflowRate(1, 4) != 0.25 {
		t.Error("OverflowRate")
	}
}

// TestJudgeZeroLimitAllowsNoOverflow: a limit set to 0 demands zero
// overflows (a clean run stays valid), while an unset limit is the 1 %
// default.
func TestJudgeZeroLimitAllowsNoOverflow(t *testing.T) {
	if v := Judge(JudgeInput{Overflows: 0, Responses: 10, Completed: 10, OverflowRateLimit: Some(0.0)}); !v.Valid {
		t.Fatalf("clean run invalid: %v", v.Reasons)
	}
	if v := Judge(JudgeInput{Overflows: 1, Responses: 10, Completed: 9, OverflowRateLimit: Some(0.0)}); v.Valid {
		t.Fatal("an overflow passed a zero limit")
	} else if !strings.Contains(v.Messages[0], "above the 0.00% limit") {
		t.Errorf("message does not name the zero limit: %s", v.Messages[0])
	}
	if v := Judge(JudgeInput{Overflows: 1, Responses: 100, Completed: 99}); !v.Valid {
		t.Fatalf("an unset limit is not the 1 %% default: %v", v.Reasons)
	}
	if v := Judge(JudgeInput{Overflows: 2, Responses: 100, Completed: 98}); v.Valid {
		t.Fatal("an unset limit let 2 % overflows pass")
	}
}

// TestJudgeNamesTheCause: coverage that falls short because the run was
// cut short says who cut it; a run the user stopped (a signal) never
// blames the server, and run_cancelled names the cause.
func TestJudgeNamesTheCause(t *testing.T) {
	t.Parallel()
	base := JudgeInput{PhaseDuration: time.Hour, TTFTCoverage: 0.4, ITLCoverage: 0.4, Completed: 10, Responses: 10}
	for _, tc := range []struct {
		name          string
		in            func(*JudgeInput)
		want, notWant string
	}{
		{"server stopped", func(*JudgeInput) {}, "check the inference server logs", "interrupted"},
		{"interrupted", func(in *JudgeInput) { in.Cancelled, in.Interrupted = true, true }, "interrupted by a signal", "server logs"},
		{"aborted", func(in *JudgeInput) { in.Cancelled, in.Aborted = true, "failed_request_threshold" }, "aborted (failed_request_threshold)", "server stopped answering"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			tc.in(&in)
			v := Judge(in)
			var cov string
			for i, r := range v.Reasons {
				if r == ReasonInsufficientCoverage {
					cov = v.Messages[i]
				}
			}
			if !strings.Contains(cov, tc.want) || strings.Contains(cov, tc.notWant) {
				t.Errorf("coverage message %q: want %q, not %q", cov, tc.want, tc.notWant)
			}
			if in.Cancelled && !strings.Contains(strings.Join(v.Messages, "\n"), "before the end of the profiling phase: ") {
				t.Errorf("run_cancelled does not name the cause: %q", v.Messages)
			}
		})
	}
}
