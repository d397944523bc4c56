package plot

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/server/servermetrics"
)

// TestPartialLastSliceIsNoSpike: a final slice of 0.03 s after 1 s slices
// is weighted by its length (no rate spike) and reported as partial.
func TestPartialLastSliceIsNoSpike(t *testing.T) {
	t.Parallel()
	tl := &timeline{ends: map[int64]int64{}, vals: map[int64]float64{}}
	for i := range 5 {
		k := zeroNs + int64(i)*1e9
		tl.starts = append(tl.starts, k)
		tl.ends[k], tl.vals[k] = k+1e9, 250_000
	}
	k := zeroNs + 5e9
	tl.starts = append(tl.starts, k)
	tl.ends[k], tl.vals[k] = k+3e7, 3_400_000 // 0.03 s
	pts, partial := tl.ratePoints(zeroNs, 1)
	if len(pts) != 6 || len(partial) != 1 {
		t.Fatalf("%d points, %d partial; want 6 and 1", len(pts), len(partial))
	}
	if got := pts[5].y; math.Abs(got-102_000) > 1 {
		t.Errorf("partial slice drawn at %v tok/s, want 3.4M × 0.03 s / 1 s = 102k", got)
	}
	for _, p := range pts[:5] {
		if p.y != 250_000 {
			t.Errorf("a full slice changed: %v", p)
		}
	}
}

// TestRollingMeanDoesNotCrossThePhaseGap: the per-request rolling mean is
// drawn per phase; no line joins warmup to profiling.
func TestRollingMeanDoesNotCrossThePhaseGap(t *testing.T) {
	t.Parallel()
	var rs []RequestPoint
	for i := range 10 {
		rs = append(rs, RequestPoint{StartNs: zeroNs + int64(i)*1e8, TTFTms: 900, OK: true, Phase: "warmup"})
	}
	for i := range 20 {
		rs = append(rs, RequestPoint{StartNs: zeroNs + 300e9 + int64(i)*1e9, TTFTms: 100, OK: true, Phase: "profiling"})
	}
	p := requestPanel(rs, zeroNs, "TTFT", "ms", func(r *RequestPoint) float64 { return r.TTFTms })
	mean := p.series[0]
	if len(mean.parts) != 2 {
		t.Fatalf("rolling mean in %d parts, want one per phase", len(mean.parts))
	}
	if last := mean.parts[0][len(mean.parts[0])-1]; last.x > 1 || last.y != 900 {
		t.Errorf("warmup part ends at %v, want inside warmup with the warmup mean", last)
	}
	if first := mean.parts[1][0]; first.x < 300 || first.y != 100 {
		t.Errorf("profiling part starts at %v: it must not mix in warmup requests", first)
	}
}

func TestPercentAxesEndAt100(t *testing.T) {
	t.Parallel()
	ps := buildPanels(&Input{Server: fixtureExport(30)}, zeroNs)
	for _, i := range []int{0, 2} { // KV usage, hit rate
		pl, _, err := newPlot(&ps[i], 30)
		if err != nil {
			t.Fatal(err)
		}
		if !ps[i].percent || pl.Y.Min != 0 || pl.Y.Max != 100 {
			t.Errorf("%s: y axis %v..%v, want 0..100", ps[i].title, pl.Y.Min, pl.Y.Max)
		}
	}
}

func TestDecodeFactor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ dec, total, want float64 }{
		{300, 250_000, 200}, // 300×200 = 60k ≤ 125k
		{60_000, 250_000, 1},
		{0, 250_000, 1},
		{1, 100, 50},
	} {
		if got := decodeFactor(c.dec, c.total); got != c.want {
			t.Errorf("decodeFactor(%v, %v) = %v, want %v", c.dec, c.total, got, c.want)
		}
	}
	// A decode series that small is read on a right axis spanning it, not
	// multiplied by a factor on the total's axis.
	ps := buildPanels(&Input{Server: fixtureExport(30)}, zeroNs)
	p := ps[3]
	if name := p.series[1].name; name != "decode (generation), right axis" || !p.series[1].right || p.right == nil {
		t.Errorf("throughput panel decode series %q (right %v), axis %+v", name, p.series[1].right, p.right)
	}
	var maxDec, maxTotal float64
	for _, q := range p.series[1].pts {
		maxDec = math.Max(maxDec, q.y)
	}
	for _, q := range p.series[0].pts {
		maxTotal = math.Max(maxTotal, q.y)
	}
	if math.Abs(maxDec-maxTotal) > 1e-6*maxTotal {
		t.Errorf("the decode series' peak is drawn at %v, want the total's %v (the right axis spans it)", maxDec, maxTotal)
	}
	for _, s := range p.series {
		if strings.Contains(s.name, "×") {
			t.Errorf("a series is still named with a factor: %q", s.name)
		}
	}
}

// TestProfilingStartFromTheArtifacts: RenderDir marks profiling where the
// aggregate JSON says it started, else at the first profiling request.
func TestProfilingStartFromTheArtifacts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if ProfilingStartNs(dir) != 0 {
		t.Error("no aggregate JSON: want 0")
	}
	if err := os.WriteFile(filepath.Join(dir, "profile_export_aiperf.json"), []byte(`{"metadata":{"agentperf":{"profiling_start_ns":1790000012000000000}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ProfilingStartNs(dir); got != 1790000012000000000 {
		t.Errorf("ProfilingStartNs = %d", got)
	}
	in := &Input{Requests: fixtureRequests(50), Server: &servermetrics.Export{}}
	if x, ok := profilingStart(in, zeroNs); !ok || x != 1 { // request 5 of 50 (the first profiling one) starts at 5×0.2 s
		t.Errorf("from the requests: %v %v, want 1 s", x, ok)
	}
	in.ProfilingStartNs = zeroNs + 12e9
	if x, _ := profilingStart(in, zeroNs); x != 12 {
		t.Errorf("given: %v, want 12 s", x)
	}
}
