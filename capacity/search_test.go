package capacity

import (
	"context"
	"fmt"
	"testing"
)

// fakeProbe meets the objective up to k; concurrencies in clientBound are
// client-bound on every attempt below failAfter attempts.
type fakeProbe struct {
	k           int
	clientBound map[int]int // concurrency → attempts that are client-bound
	calls       []int
}

func (f *fakeProbe) probe(_ context.Context, c, attempt int) (Probe, error) {
	f.calls = append(f.calls, c)
	if attempt <= f.clientBound[c] {
		return Probe{ClientBound: true, ClientReason: "cpu"}, nil
	}
	return Probe{Met: c <= f.k}, nil
}

func TestSearchFindsCapacity(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lo, hi, res, k int
	}{
		{1, 1024, 1, 12}, {1, 1024, 2, 12}, {1, 1024, 4, 100}, {1, 1000, 1, 999}, {4, 64, 1, 5},
		{1, 1024, 1, 1}, {1, 1024, 8, 512}, {3, 100, 2, 47}, {1, 2, 1, 1},
	} {
		t.Run(fmt.Sprintf("%d:%d/r%d/k%d", tc.lo, tc.hi, tc.res, tc.k), func(t *testing.T) {
			f := &fakeProbe{k: tc.k}
			r, err := Search(context.Background(), Config{Lo: tc.lo, Hi: tc.hi, Resolution: Resolution{Abs: tc.res}}, f.probe)
			if err != nil {
				t.Fatal(err)
			}
			if r.Best > tc.k || tc.k-r.Best >= tc.res {
				t.Errorf("Best = %d, want within %d below %d", r.Best, tc.res, tc.k)
			}
			if r.Above == nil || r.Above.Concurrency <= tc.k || r.Above.Concurrency-r.Best > tc.res {
				t.Errorf("Above = %+v, want the failing probe within %d over Best %d", r.Above, tc.res, r.Best)
			}
			if r.BestProbe == nil || r.BestProbe.Concurrency != r.Best {
				t.Errorf("BestProbe = %+v", r.BestProbe)
			}
			if want := PredictProbes(tc.lo, tc.hi, tc.res, tc.k); len(r.Probes) > want {
				t.Errorf("%d probes (%v), PredictProbes says at most %d", len(r.Probes), f.calls, want)
			}
			seen := map[int]bool{}
			for _, c := range f.calls {
				if seen[c] {
					t.Errorf("concurrency %d probed twice: %v", c, f.calls)
				}
				seen[c] = true
			}
		})
	}
}

func TestPredictProbesExact(t *testing.T) {
	t.Parallel()
	// Brackets of width r·2^j: the prediction is exact.
	for _, tc := range []struct{ lo, hi, r, k, want int }{
		{1, 1024, 2, 12, 7},    // 1 2 4 8 16, then 12 14
		{1, 1024, 1, 12, 8},    // 1 2 4 8 16, then 12 14 13
		{1, 1024, 1, 1, 2},     // 1 2 (width 1)
		{2, 1024, 4, 40, 9},    // 2 4 8 16 32 64, then 48 40 44
		{1, 1024, 64, 600, 14}, // 1 2 … 512 1024, then 768 640 576
	} {
		f := &fakeProbe{k: tc.k}
		r, err := Search(context.Background(), Config{Lo: tc.lo, Hi: tc.hi, Resolution: Resolution{Abs: tc.r}}, f.probe)
		if err != nil {
			t.Fatal(err)
		}
		if got := PredictProbes(tc.lo, tc.hi, tc.r, tc.k); got != tc.want || len(r.Probes) != tc.want {
			t.Errorf("%+v: PredictProbes %d, Search ran %d (%v); want %d", tc, got, len(r.Probes), f.calls, tc.want)
		}
	}
}

func TestSearchEdges(t *testing.T) {
	t.Parallel()
	t.Run("nothing-meets", func(t *testing.T) {
		f := &fakeProbe{k: 0}
		r, err := Search(context.Background(), Config{Lo: 1, Hi: 64}, f.probe)
		if err != nil || r.Best != 0 || len(r.Probes) != 1 || r.Above == nil || r.Above.Concurrency != 1 {
			t.Errorf("Best %d, %d probes, Above %+v, err %v; want 0 after one probe", r.Best, len(r.Probes), r.Above, err)
		}
	})
	t.Run("everything-meets", func(t *testing.T) {
		f := &fakeProbe{k: 1 << 30}
		r, err := Search(context.Background(), Config{Lo: 1, Hi: 100}, f.probe)
		if err != nil || r.Best != 100 || r.Above != nil || r.Below == nil || r.Below.Concurrency != 64 {
			t.Errorf("Best %d, Above %+v, Below %+v, err %v; want 100, none, 64", r.Best, r.Above, r.Below, err)
		}
	})
	t.Run("bad-range", func(t *testing.T) {
		if _, err := Search(context.Background(), Config{Lo: 5, Hi: 2}, (&fakeProbe{}).probe); err == nil {
			t.Error("no error for 5:2")
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := Search(ctx, Config{Lo: 1, Hi: 8}, (&fakeProbe{k: 4}).probe); err == nil {
			t.Error("no error after cancel")
		}
	})
}

// TestSearchClientBound: a client-bound probe is retried; one that stays
// client-bound bounds the search without counting as a failure of the
// server, and the result says so.
func TestSearchClientBound(t *testing.T) {
	t.Parallel()
	t.Run("retry-clears", func(t *testing.T) {
		f := &fakeProbe{k: 12, clientBound: map[int]int{8: 1}}
		r, err := Search(context.Background(), Config{Lo: 1, Hi: 1024, Resolution: Resolution{Abs: 2}, Retries: 1}, f.probe)
		if err != nil {
			t.Fatal(err)
		}
		if r.Best != 12 || r.ClientBoundAt != 0 || len(r.Probes) != 8 {
			t.Errorf("Best %d, ClientBoundAt %d, %d probes (%v); want 12, 0, 7+1 retry", r.Best, r.ClientBoundAt, len(r.Probes), f.calls)
		}
		if !r.Probes[3].ClientBound || r.Probes[4].Attempt != 2 {
			t.Errorf("probes %+v: want the first run at 8 client-bound and its retry as attempt 2", r.Probes[3:5])
		}
	})
	t.Run("stays-client-bound", func(t *testing.T) {
		// The server holds 100, but the client cannot drive 32 or more.
		cb := map[int]int{}
		for c := 32; c <= 1024; c++ {
			cb[c] = 1 << 30
		}
		f := &fakeProbe{k: 100, clientBound: cb}
		r, err := Search(context.Background(), Config{Lo: 1, Hi: 1024, Resolution: Resolution{Abs: 1}, Retries: 2}, f.probe)
		if err != nil {
			t.Fatal(err)
		}
		if r.Best != 31 || r.ClientBoundAt != 32 {
			t.Errorf("Best %d, ClientBoundAt %d; want 31 (the highest measurable) and 32", r.Best, r.ClientBoundAt)
		}
		if r.Above == nil || !r.Above.ClientBound {
			t.Errorf("Above = %+v, want the client-bound probe", r.Above)
		}
		for _, p := range r.Probes {
			if p.ClientBound && p.Met {
				t.Errorf("probe %+v counted as met", p)
			}
		}
	})
}

func TestParseResolutionAndRange(t *testing.T) {
	t.Parallel()
	if r, err := ParseResolution("5%"); err != nil || r.Rel != 0.05 || r.width(100) != 5 || r.width(10) != 1 {
		t.Errorf("5%%: %+v %v", r, err)
	}
	if r, err := ParseResolution("4"); err != nil || r.width(1000) != 4 {
		t.Errorf("4: %+v %v", r, err)
	}
	for _, bad := range []string{"0", "-1", "x", "0%", "100%", ""} {
		if _, err := ParseResolution(bad); err == nil {
			t.Errorf("ParseResolution(%q): no error", bad)
		}
	}
	if lo, hi, err := ParseRange("1:1024"); err != nil || lo != 1 || hi != 1024 {
		t.Errorf("1:1024: %d %d %v", lo, hi, err)
	}
	for _, bad := range []string{"0:4", "4:2", "4", "a:b", ""} {
		if _, _, err := ParseRange(bad); err == nil {
			t.Errorf("ParseRange(%q): no error", bad)
		}
	}
}
