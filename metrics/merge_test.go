package metrics

import (
	"testing"

	"github.com/agentperf/agentperf/internal/mergetest"
)

// Every field of the accounting and of the tally's counts is a count: a
// field added without being summed by Add fails these.

func TestAccountingAddSumsEveryField(t *testing.T) {
	t.Parallel()
	mergetest.Check(t, func(a, b *Accounting) { a.Add(*b) }, nil)
}

func TestCountsAddSumsEveryField(t *testing.T) {
	t.Parallel()
	mergetest.Check(t, func(a, b *Counts) { a.Add(*b) }, nil)
}

func TestPhaseCountsAddSumsEveryField(t *testing.T) {
	t.Parallel()
	mergetest.Check(t, func(a, b *PhaseCounts) { a.Add(*b) }, nil)
}

// TestCountsAddKeepsAccounting: the accounting of two tallies' counts
// added is the sum of their accountings.
func TestCountsAddKeepsAccounting(t *testing.T) {
	t.Parallel()
	a := Counts{Sent: 7, InFlight: 1, Profiling: PhaseCounts{OK: 3, Errors: 1, Overflows: 1}, Warmup: PhaseCounts{OK: 1}}
	b := Counts{Sent: 5, Profiling: PhaseCounts{OK: 2, Cancelled: 1}, Warmup: PhaseCounts{Errors: 2, Retried: 1, Overflows: 1}}
	want := a.Accounting()
	want.Add(b.Accounting())
	a.Add(b)
	if got := a.Accounting(); got != want {
		t.Fatalf("Accounting of the added counts = %+v, want %+v", got, want)
	}
}
