package plot

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/server/servermetrics"
)

var zeroNs int64 = 1_790_000_000_000_000_000

func f(x float64) *float64 { return &x }

// fixtureExport builds an export with n one-second slices for two vLLM
// engines and every metric the server panels read.
func fixtureExport(n int) *servermetrics.Export {
	ex := &servermetrics.Export{SchemaVersion: "1.0", Metrics: map[string]*servermetrics.Metric{},
		Summary: servermetrics.Summary{EndpointInfo: map[string]*servermetrics.EndpointInfo{
			"http://a/metrics": {FirstUpdateNs: zeroNs}, "http://b/metrics": {FirstUpdateNs: zeroNs + 5e8}}}}
	gauge := func(name string, labels map[string]string, v func(i int) float64) {
		m := ex.Metrics[name]
		if m == nil {
			m = &servermetrics.Metric{Type: "gauge"}
			ex.Metrics[name] = m
		}
		s := &servermetrics.Series{EndpointURL: "http://a/metrics", Labels: labels, Stats: &servermetrics.Stats{}}
		for i := range n {
			st := zeroNs + int64(i)*1e9
			s.Timeslices = append(s.Timeslices, servermetrics.Slice{StartNs: st, EndNs: st + 1e9, Avg: f(v(i)), Max: f(v(i))})
		}
		m.Series = append(m.Series, s)
	}
	counter := func(name string, labels map[string]string, v func(i int) float64) {
		m := ex.Metrics[name]
		if m == nil {
			m = &servermetrics.Metric{Type: "counter"}
			ex.Metrics[name] = m
		}
		s := &servermetrics.Series{EndpointURL: "http://a/metrics", Labels: labels, Stats: &servermetrics.Stats{}}
		for i := range n {
			st := zeroNs + int64(i)*1e9
			s.Timeslices = append(s.Timeslices, servermetrics.Slice{StartNs: st, EndNs: st + 1e9, Total: f(v(i)), Rate: f(v(i))})
		}
		m.Series = append(m.Series, s)
	}
	for e := range 2 {
		l := map[string]string{"engine": fmt.Sprint(e)}
		gauge("vllm:kv_cache_usage_perc", l, func(i int) float64 { return 0.3 + 0.2*float64(e) + 0.1*math.Sin(float64(i)/5) })
		gauge("vllm:cpu_kv_cache_usage_perc", l, func(i int) float64 { return 0.1 })
		gauge("vllm:num_requests_running", l, func(i int) float64 { return 4 })
		gauge("vllm:num_requests_waiting", l, func(i int) float64 { return float64(i % 3) })
		counter("vllm:prefix_cache_queries", l, func(i int) float64 { return 1000 })
		counter("vllm:prefix_cache_hits", l, func(i int) float64 { return 400 + 10*float64(i%7) })
		counter("vllm:external_prefix_cache_queries", l, func(i int) float64 { return 600 })
		counter("vllm:external_prefix_cache_hits", l, func(i int) float64 { return 450 })
		counter("vllm:prompt_tokens", l, func(i int) float64 { return 5000 })
		counter("vllm:generation_tokens", l, func(i int) float64 { return 300 + float64(i) })
		counter("vllm:num_preemptions", l, func(i int) float64 { return float64(i % 2) })
		for _, src := range []string{"local_compute", "local_cache_hit", "external_kv_transfer"} {
			counter("vllm:prompt_tokens_by_source", map[string]string{"engine": fmt.Sprint(e), "source": src}, func(i int) float64 { return 1000 })
		}
		for _, tt := range []string{"GPU_to_CPU", "CPU_to_GPU"} {
			counter("vllm:kv_offload_total_bytes", map[string]string{"engine": fmt.Sprint(e), "transfer_type": tt}, func(i int) float64 { return 2e8 })
		}
	}
	return ex
}

func fixtureRequests(n int) []RequestPoint {
	rs := make([]RequestPoint, 0, n)
	for i := range n {
		phase := "profiling"
		if i < n/10 {
			phase = "warmup"
		}
		st := zeroNs + int64(i)*2e8
		rs = append(rs, RequestPoint{StartNs: st, EndNs: st + 3e9, TTFTms: 200 + float64(i%50), LatencyMs: 3000 + float64(i%70),
			ITLms: 20 + float64(i%9), OK: i%17 != 0, Phase: phase})
	}
	// A failed request without timings and a request with no start time:
	// neither may break the other panels (the points are one list of
	// structs, never parallel lists filtered differently).
	rs = append(rs, RequestPoint{TTFTms: math.NaN(), LatencyMs: math.NaN(), ITLms: math.NaN(), OK: false},
		RequestPoint{TTFTms: 5, LatencyMs: 6, ITLms: 1, OK: true, Phase: "profiling"})
	return rs
}

// coloured counts saturated pixels (data lines and markers; axes, grid,
// text and "no data" are black, grey or white) in each of the 6×2 cells.
func coloured(t *testing.T, path string) [Rows][Cols]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s is not a valid PNG: %v", path, err)
	}
	if got := img.Bounds().Size(); got != (image.Point{WidthPx, HeightPx}) {
		t.Fatalf("size %v, want %dx%d", got, WidthPx, HeightPx)
	}
	var out [Rows][Cols]int
	top := 84 // the title band (40 pt at 150 dpi)
	cellH := (HeightPx - top) / Rows
	cellW := WidthPx / Cols
	for r := range Rows {
		for c := range Cols {
			for y := top + r*cellH + 10; y < top+(r+1)*cellH-10; y++ {
				for x := c*cellW + 10; x < (c+1)*cellW-10; x++ {
					cr, cg, cb := rgbAt(img, x, y)
					if max(cr, cg, cb)-min(cr, cg, cb) > 60 {
						out[r][c]++
					}
				}
			}
		}
	}
	return out
}

func TestRenderAllPanelsWithData(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), FileName)
	warn, err := Render(Input{Requests: fixtureRequests(400), Server: fixtureExport(90)}, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(warn) != 1 || !strings.Contains(warn[0], "without a start time") {
		t.Errorf("warnings %q, want one about the request without a start time", warn)
	}
	px := coloured(t, path)
	for r := range Rows {
		for c := range Cols {
			if px[r][c] < 200 {
				t.Errorf("panel (%d,%d) has %d coloured pixels, want data drawn", r, c, px[r][c])
			}
		}
	}
}

func TestRenderRequestsOnlyLabelsServerPanelsNoData(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), FileName)
	warn, err := Render(Input{Requests: fixtureRequests(200), Title: "custom"}, path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(warn, "|"), "no server metrics") {
		t.Errorf("warnings %q lack the missing-server-metrics warning", warn)
	}
	px := coloured(t, path)
	for r := range Rows {
		for c := range Cols {
			i := r*Cols + c
			withData := i >= 8 && i <= 10 // TTFT, latency, decode speed
			if withData != (px[r][c] > 200) {
				t.Errorf("panel (%d,%d): %d coloured pixels, data expected %v", r, c, px[r][c], withData)
			}
		}
	}
}

func TestRenderEmptyInputStillDrawsEveryPanel(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), FileName)
	if _, err := Render(Input{}, path); err != nil {
		t.Fatal(err)
	}
	px := coloured(t, path)
	img := decode(t, path)
	for r := range Rows {
		for c := range Cols {
			if px[r][c] != 0 {
				t.Errorf("panel (%d,%d) drew data from nothing", r, c)
			}
			// The panel is still there: axes, grid and the grey "no data".
			if n := nonWhite(img, c*WidthPx/Cols, 84+r*(HeightPx-84)/Rows, (c+1)*WidthPx/Cols, 84+(r+1)*(HeightPx-84)/Rows); n < 2000 {
				t.Errorf("panel (%d,%d) nearly blank (%d non-white pixels)", r, c, n)
			}
		}
	}
}

func decode(t *testing.T, path string) image.Image {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func nonWhite(img image.Image, x0, y0, x1, y1 int) int {
	n := 0
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			r, g, b := rgbAt(img, x, y)
			if r < 245 || g < 245 || b < 245 {
				n++
			}
		}
	}
	return n
}

func TestRenderDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var jl strings.Builder
	for i := range 120 {
		st := zeroNs + int64(i)*5e8
		phase := "profiling"
		if i < 10 {
			phase = "warmup"
		}
		// Alternate {value, unit} objects and bare numbers.
		if i%2 == 0 {
			fmt.Fprintf(&jl, `{"metadata":{"request_start_ns":%d,"request_end_ns":%d,"benchmark_phase":%q},"metrics":{"time_to_first_token":{"value":%d,"unit":"ms"},"request_latency":{"value":%d,"unit":"ms"},"inter_token_latency":{"value":12.5,"unit":"ms"}},"error":null}`+"\n", st, st+2e9, phase, 100+i, 2000+i)
		} else {
			fmt.Fprintf(&jl, `{"metadata":{"request_start_ns":%d,"request_end_ns":%d},"metrics":{"time_to_first_token":%d,"request_latency":%d,"inter_token_latency":10}}`+"\n", st, st+2e9, 100+i, 2000+i)
		}
	}
	jl.WriteString(`{"metadata":{"request_start_ns":1},"metrics":{"error_isl":{"value":5,"unit":"tokens"}},"error":{"code":503,"type":"x","message":"m"}}` + "\n")
	jl.WriteString("not json\n")
	if err := os.WriteFile(filepath.Join(dir, RecordsFile), []byte(jl.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := servermetrics.WriteFiles(dir, fixtureExport(60)); err != nil {
		t.Fatal(err)
	}
	warn, err := RenderDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(warn) != 1 || !strings.Contains(warn[0], "1 line(s) could not be decoded (first at line 122)") {
		t.Errorf("warnings %q, want exactly the bad-line warning", warn)
	}
	if fi, err := os.Stat(filepath.Join(dir, FileName)); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("figure mode %v (%v), want 0644", fi, err)
	}
	px := coloured(t, filepath.Join(dir, FileName))
	for r := range Rows {
		for c := range Cols {
			if px[r][c] < 200 {
				t.Errorf("panel (%d,%d) empty after RenderDir", r, c)
			}
		}
	}
}

func TestRenderDirEmptyFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	warn, err := RenderDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if j := strings.Join(warn, "|"); !strings.Contains(j, "profile_export.jsonl does not exist") || !strings.Contains(j, "no server metrics") {
		t.Errorf("warnings %q", warn)
	}
	decode(t, filepath.Join(dir, FileName))
}

func TestRenderUnwritablePathIsAnError(t *testing.T) {
	t.Parallel()
	_, err := Render(Input{}, filepath.Join(t.TempDir(), "missing-dir", FileName))
	if err == nil || !strings.Contains(err.Error(), FileName) {
		t.Errorf("err = %v, want a write error naming the file", err)
	}
}

func TestRollingAndRatioHelpers(t *testing.T) {
	t.Parallel()
	ps := []point{{0, 1}, {1, 3}, {2, 5}, {3, 7}}
	got := rollingMean(ps, 2)
	if got[0].y != 1 || got[1].y != 2 || got[3].y != 6 {
		t.Errorf("rollingMean %v", got)
	}
	num := &timeline{starts: []int64{0, 1e9}, ends: map[int64]int64{0: 1e9, 1e9: 2e9}, vals: map[int64]float64{0: 1, 1e9: 3}}
	den := &timeline{starts: []int64{0, 1e9}, ends: map[int64]int64{0: 1e9, 1e9: 2e9}, vals: map[int64]float64{0: 4, 1e9: 0}}
	r := ratioOf(num, den, 0, 100)
	if len(r) != 1 || r[0].y != 25 || r[0].x != 0.5 {
		t.Errorf("ratioOf %v, want one point 25%% at 0.5 s (zero denominators skipped)", r)
	}
}

// rgbAt reads 8-bit colour components, directly from the pixel buffer for
// the types png.Decode returns (per-pixel interface calls are slow under
// -race on a 7.5-megapixel image).
func rgbAt(img image.Image, x, y int) (r, g, b int) {
	switch m := img.(type) {
	case *image.NRGBA:
		i := m.PixOffset(x, y)
		return int(m.Pix[i]), int(m.Pix[i+1]), int(m.Pix[i+2])
	case *image.RGBA:
		i := m.PixOffset(x, y)
		return int(m.Pix[i]), int(m.Pix[i+1]), int(m.Pix[i+2])
	}
	cr, cg, cb, _ := img.At(x, y).RGBA()
	return int(cr >> 8), int(cg >> 8), int(cb >> 8)
}

func TestCollectMergesWarmupSlices(t *testing.T) {
	t.Parallel()
	mk := func(start int64, v float64) map[string]*servermetrics.Metric {
		return map[string]*servermetrics.Metric{"vllm:num_requests_running": {Type: "gauge", Series: []*servermetrics.Series{{
			EndpointURL: "http://a/metrics", Timeslices: []servermetrics.Slice{{StartNs: start, EndNs: start + 1e9, Avg: f(v)}}}}}}
	}
	ex := &servermetrics.Export{WarmupMetrics: mk(0, 2), Metrics: mk(1e9, 5)}
	got := collect(ex, mRunning, nil, gaugeValue, aggSum).points(0, 1)
	if len(got) != 2 || got[0] != (point{0.5, 2}) || got[1] != (point{1.5, 5}) {
		t.Errorf("points %v, want the warmup slice then the profiling slice", got)
	}
}

func TestCompactTickLabels(t *testing.T) {
	t.Parallel()
	for v, want := range map[float64]string{1.2e6: "1.2M", 250000: "250k", 0.5: "0.5", 40: "40", 0: "0", 3.5e9: "3.5G", -2000: "-2k"} {
		if got := compact(v); got != want {
			t.Errorf("compact(%v) = %q, want %q", v, got, want)
		}
	}
}
