package gputelemetry

import (
	"math"
	"testing"
)

func s(pairs ...float64) []Sample {
	var out []Sample
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Sample{int64(pairs[i] * 1e9), pairs[i+1]})
	}
	return out
}

func TestIntegrate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		s    []Sample
		a, b float64
		want float64
		ok   bool
	}{
		{"constant", s(0, 100, 10, 100), 2, 5, 300, true},
		{"ramp interpolated at both bounds", s(0, 0, 10, 100), 2, 4, 60, true},
		{"samples inside", s(0, 100, 1, 200, 2, 100), 0, 2, 300, true},
		{"not bracketed at the start", s(1, 100, 10, 100), 0, 5, 0, false},
		{"not bracketed at the end", s(0, 100, 4, 100), 0, 5, 0, false},
	} {
		got, ok := Integrate(tc.s, int64(tc.a*1e9), int64(tc.b*1e9))
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: Integrate = %v, %v; want %v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestIncreaseCountsResets(t *testing.T) {
	t.Parallel()
	// 1000 J at 0 s, 1500 at 5, reset to 100 at 6, 400 at 10.
	c := s(0, 1000, 5, 1500, 6, 100, 10, 400)
	got, ok := Increase(c, 0, 10e9)
	if !ok || got != 500+100+300 {
		t.Fatalf("Increase = %v, %v; want 900", got, ok)
	}
	got, ok = Increase(c, 1e9, 4e9) // interpolated: 1100 → 1400
	if !ok || math.Abs(got-300) > 1e-9 {
		t.Fatalf("Increase(1,4) = %v, %v; want 300", got, ok)
	}
}

func TestQuantileTimeWeighted(t *testing.T) {
	t.Parallel()
	// Two GPUs: 100 W for the first 9 s and 300 W for the last 1 s (a
	// step drawn as a 1 ns ramp), each; the sum is 200 W 90 % of the time.
	g := s(0, 100, 9, 100, 9.000000001, 300, 10, 300)
	q, ok := Quantile([][]Sample{g, g}, 0, 10e9, 0.75)
	if !ok || math.Abs(q-200) > 1e-6 {
		t.Fatalf("p75 = %v, %v; want 200", q, ok)
	}
	q, _ = Quantile([][]Sample{g, g}, 0, 10e9, 0.95)
	if math.Abs(q-600) > 1e-3 {
		t.Fatalf("p95 = %v; want 600", q)
	}
}
