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
	clean := JudgeInput{Responses: 10000, Completed: 9990, Coverage: Coverage{Required: 0.95, MinPhase: 900 * time.Second, Phase: time.Hour, TTFT: 0.999, ITL: 1}}
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
		{"coverage: TTFT alone enough", func(in *JudgeInput) { in.Coverage.TTFT, in.Coverage.ITL = 0.95, 0.5 }, nil},
		{"coverage: ITL alone enough", func(in *JudgeInput) { in.Coverage.TTFT, in.Coverage.ITL = 0.2, 0.95 }, nil},
		{"coverage: content alone enough", func(in *JudgeInput) { in.Coverage.TTFT, in.Coverage.ITL, in.Coverage.Content = 0.2, 0.3, 0.96 }, nil},
		{"coverage: all short", func(in *JudgeInput) { in.Coverage.TTFT, in.Coverage.ITL, in.Coverage.Content = 0.94, 0.949, 0.9 }, []string{ReasonInsufficientCoverage}},
		{"coverage: 900 s phase counts", func(in *JudgeInput) { in.Coverage.Phase, in.Coverage.TTFT, in.Coverage.ITL = 900*time.Second, 0.5, 0.5 }, []string{ReasonInsufficientCoverage}},
		{"coverage: short phase exempt", func(in *JudgeInput) { in.Coverage.Phase, in.Coverage.TTFT, in.Coverage.ITL = 899*time.Second, 0, 0 }, nil},
		{"coverage: no rule without a ratio", func(in *JudgeInput) { in.Coverage.Required, in.Coverage.TTFT, in.Coverage.ITL = 0, 0, 0 }, nil},
		{"coverage: not judged for a cancelled run", func(in *JudgeInput) { in.Cancelled, in.Coverage.TTFT, in.Coverage.ITL = true, 0.1, 0.1 }, []string{ReasonRunCancelled}},
		{"nothing completed", func(in *JudgeInput) { in.Completed = 0 }, []string{ReasonZeroCompleted}},
		{"all at once, aiperf's order", func(in *JudgeInput) {
			in.StaticReasons = []string{ReasonUnsafeOverride}
			in.Cancelled = true
			in.Overflows = 500
			in.Completed = 0
		}, []string{ReasonUnsafeOverride, ReasonOverflowRateExceeded, ReasonRunCancelled, ReasonZeroCompleted}},
		{"coverage after the overflow rate", func(in *JudgeInput) {
			in.StaticReasons = []string{ReasonUnsafeOverride}
			in.Overflows = 500
			in.Coverage.TTFT, in.Coverage.ITL = 0.5, 0.5
		}, []string{ReasonUnsafeOverride, ReasonOverflowRateExceeded, ReasonInsufficientCoverage}},
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
	v := Judge(JudgeInput{Overflows: 3, Responses: 100, Completed: 97, Coverage: Coverage{Required: 0.95, MinPhase: 900 * time.Second, Phase: time.Hour, TTFT: 0.5, ITL: 0.25, Content: 0.125}})
	if len(v.Messages) != 2 || !strings.Contains(v.Messages[0], "3 of 100") || !strings.Contains(v.Messages[0], "3.00%") ||
		!strings.Contains(v.Messages[1], "95.0%") || !strings.Contains(v.Messages[1], "TTFT 50.0%") || !strings.Contains(v.Messages[1], "inter-token latency 25.0%") ||
		!strings.Contains(v.Messages[1], "streaming content 12.5%") || !strings.Contains(v.Messages[1], "last 3m0s") || !strings.Contains(v.Messages[1], "server logs") {
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
		{start.Add(1830 * time.Second), 1800 * time.Second, 1}, // in the grace period: clamped
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

// TestJudgeNamesTheCause: run_cancelled names who cut the run short; a
// run the user stopped (a signal) never blames the server.
func TestJudgeNamesTheCause(t *testing.T) {
	t.Parallel()
	base := JudgeInput{Completed: 10, Responses: 10, Cancelled: true}
	for _, tc := range []struct {
		name          string
		in            func(*JudgeInput)
		want, notWant string
	}{
		{"interrupted", func(in *JudgeInput) { in.Interrupted = true }, "interrupted by a signal", "server"},
		{"aborted", func(in *JudgeInput) { in.Aborted = "failed_request_threshold" }, "aborted (failed_request_threshold)", "signal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			tc.in(&in)
			v := Judge(in)
			if !slices.Equal(v.Reasons, []string{ReasonRunCancelled}) {
				t.Fatalf("reasons %v", v.Reasons)
			}
			if m := v.Messages[0]; !strings.Contains(m, "before the end of the profiling phase: ") || !strings.Contains(m, tc.want) || strings.Contains(m, tc.notWant) {
				t.Errorf("run_cancelled message %q: want %q, not %q", m, tc.want, tc.notWant)
			}
		})
	}
}

// TestCoverageGateAtTheHarnessBoundaries: the harness's own cases, a
// 1800 s phase whose only evidence is streamed content (TTFT and ITL
// short): content to 1790 s and to exactly 1710 s (95 %) passes, 1709 s
// fails, content in the grace period (1830 s) counts as the whole phase,
// content before the phase or none at all as nothing.
func TestCoverageGateAtTheHarnessBoundaries(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const phase = 1800 * time.Second
	for _, c := range []struct {
		name      string
		last      time.Time
		wantRatio float64
		pass      bool
	}{
		{"1790 s", start.Add(1790 * time.Second), 1790.0 / 1800, true},
		{"1710 s, exactly 95 %", start.Add(1710 * time.Second), 0.95, true},
		{"1709 s", start.Add(1709 * time.Second), 1709.0 / 1800, false},
		{"1830 s, in the grace period", start.Add(1830 * time.Second), 1, true},
		{"before the phase", start.Add(-10 * time.Second), 0, false},
		{"no content at all", time.Time{}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cv := Coverage{Required: RequiredCoverage, MinPhase: 900 * time.Second, Phase: phase, TTFT: 0.8, ITL: 0.9,
				Content: CoverageRatio(start, c.last, phase)}
			if cv.Content != c.wantRatio {
				t.Errorf("content ratio %v, want %v", cv.Content, c.wantRatio)
			}
			if cv.Passed() != c.pass {
				t.Errorf("Passed = %v, want %v", cv.Passed(), c.pass)
			}
			v := Judge(JudgeInput{Completed: 10, Responses: 10, Coverage: cv})
			if want := !c.pass; slices.Contains(v.Reasons, ReasonInsufficientCoverage) != want {
				t.Errorf("reasons %v, want insufficient coverage: %v", v.Reasons, want)
			}
		})
	}
}
