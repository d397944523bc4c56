package metrics

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestPercentileNumpy checks Percentile against numpy.percentile's default
// ("linear") method on known inputs.
func TestPercentileNumpy(t *testing.T) {
	t.Parallel()
	oneToTen := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	cases := []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		// np.percentile(np.arange(1, 11), [1,5,10,25,50,75,90,95,99])
		{"1..10 p1", oneToTen, 1, 1.09},
		{"1..10 p5", oneToTen, 5, 1.45},
		{"1..10 p10", oneToTen, 10, 1.9},
		{"1..10 p25", oneToTen, 25, 3.25},
		{"1..10 p50", oneToTen, 50, 5.5},
		{"1..10 p75", oneToTen, 75, 7.75},
		{"1..10 p90", oneToTen, 90, 9.1},
		{"1..10 p95", oneToTen, 95, 9.55},
		{"1..10 p99", oneToTen, 99, 9.91},
		// numpy docs: np.percentile([[10, 7, 4], [3, 2, 1]], 50) == 3.5
		{"docs median", []float64{1, 2, 3, 4, 7, 10}, 50, 3.5},
		// np.percentile([15, 20, 35, 40, 50], 40) == 29.0
		{"wikipedia 40th", []float64{15, 20, 35, 40, 50}, 40, 29},
		{"single", []float64{3.5}, 99, 3.5},
		{"p0 is min", oneToTen, 0, 1},
		{"p100 is max", oneToTen, 100, 10},
		{"equal neighbours", []float64{2, 2, 2}, 37, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Percentile(c.sorted, c.p); math.Abs(got-c.want) > 1e-12 {
				t.Errorf("Percentile(%v, %v) = %v, want %v", c.sorted, c.p, got, c.want)
			}
		})
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("Percentile of empty slice is not NaN")
	}
}

func TestNewStat(t *testing.T) {
	t.Parallel()
	s := NewStat("ms", []float64{5, 1, 4, 2, 3})
	if s.Count != 5 || s.Min != 1 || s.Max != 5 || s.Sum != 15 || s.Avg != 3 || s.P50 != 3 || s.P25 != 2 {
		t.Errorf("stat %+v", s)
	}
	// population std of 1..5 = sqrt(2)
	if math.Abs(s.Std-math.Sqrt2) > 1e-12 {
		t.Errorf("std %v, want sqrt(2)", s.Std)
	}
	if one := NewStat("ms", []float64{7}); one.Std != 0 || one.P99 != 7 {
		t.Errorf("single-value stat %+v", one)
	}
	if e := NewStat("ms", nil); e.Count != 0 || !math.IsNaN(e.Avg) {
		t.Errorf("empty stat %+v", e)
	}
	if got := s.Percentile(90); got != s.P90 {
		t.Errorf("Stat.Percentile(90) = %v, want %v", got, s.P90)
	}
}

func TestAccountingCheck(t *testing.T) {
	t.Parallel()
	good := Accounting{Sent: 21, ProfilingOK: 10, ProfilingErrors: 2, WarmupOK: 4, WarmupErrors: 1, Overflows: 3, Cancelled: 1}
	cases := []struct {
		name    string
		a       Accounting
		wantErr string // substring; "" means valid
	}{
		{"adds up", good, ""},
		{"empty run", Accounting{}, ""},
		{"missing records", func() Accounting { a := good; a.Sent = 23; return a }(), "2 requests are missing"},
		{"too many records", func() Accounting { a := good; a.Sent = 20; return a }(), "1 more requests were recorded than sent"},
		{"negative bucket", func() Accounting { a := good; a.Overflows = -1; return a }(), "context_overflows is negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.a.Check()
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrAccounting) || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("Check() = %v, want ErrAccounting mentioning %q", err, c.wantErr)
			}
		})
	}
}

// TestAccountingEquation: the accounting as its sum, every bucket named.
func TestAccountingEquation(t *testing.T) {
	t.Parallel()
	a := Accounting{Sent: 28, ProfilingOK: 1, ProfilingErrors: 2, WarmupOK: 3, WarmupErrors: 4, Overflows: 5, Cancelled: 6}
	if got := a.Equation(); got != "sent 28 = profiling 1 ok + 2 failed, warmup 3 ok + 4 failed, 5 context overflows, 6 cancelled" {
		t.Errorf("Equation = %q", got)
	}
}
