package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/agentperf/agentperf/internal/atomicfile"
	"github.com/agentperf/agentperf/servermetrics"
)

// FileName is the name of the figure in an artifact folder.
const FileName = "metrics_plots.png"

// Figure geometry, as InferenceX's plotter draws it: 14×24 in at 150 dpi.
const (
	WidthPx  = 2100
	HeightPx = 3600
	DPI      = 150
	Rows     = 6
	Cols     = 2
)

// DefaultTitle is the figure title when Input.Title is empty (InferenceX
// HEAD's title).
const DefaultTitle = "LLM Server Metrics During Benchmark"

// Input is what the figure is drawn from.
type Input struct {
	// Requests holds one entry per request (any phase, failed ones too);
	// the request panels use the successful ones with a start time.
	Requests []RequestPoint
	// Server is the server metrics export with timeslices (nil: the server
	// panels render empty, labelled "no data").
	Server *servermetrics.Export
	// Title is the figure title; empty means DefaultTitle.
	Title string
	// ProfilingStartNs is when profiling started (Unix ns), marked on every
	// panel; 0 means the earliest start of a profiling request.
	ProfilingStartNs int64
}

// RequestPoint is one request as the per-request panels need it. Absent
// values are NaN.
type RequestPoint struct {
	StartNs, EndNs int64   // Unix ns; 0 when unknown
	TTFTms         float64 // time to first token
	LatencyMs      float64 // request latency
	ITLms          float64 // inter-token latency
	OK             bool    // no error, not cancelled
	Phase          string  // "warmup" or "profiling"
}

// series is one drawn line or scatter of a panel.
type series struct {
	name    string
	pts     []point
	scatter bool
	ring    bool // hollow markers (partial slices)
	dashed  bool
	fill    bool
	col     color.Color
	width   vg.Length
	// parts, when set, are drawn as separate lines under one legend entry
	// (a line never joins warmup to profiling).
	parts [][]point
}

// panel is one of the 12 subplots.
type panel struct {
	title, ylabel string
	series        []series
	note          string // extra legend line (e.g. the emulated second axis)
	percent       bool   // a percentage: the axis ends at 100
}

func (p *panel) hasData() bool {
	for _, s := range p.series {
		if len(s.pts) > 0 || len(s.parts) > 0 {
			return true
		}
	}
	return false
}

// partialSeries marks the partial slices of a rate panel, if any.
func partialSeries(pts []point, col color.Color) series {
	return series{name: "partial slice (rate × its length / slice length)", pts: pts, scatter: true, ring: true, col: col}
}

var (
	colBlue   = color.RGBA{31, 119, 180, 255}
	colOrange = color.RGBA{255, 127, 14, 255}
	colGreen  = color.RGBA{44, 160, 44, 255}
	colRed    = color.RGBA{214, 39, 40, 255}
	colPurple = color.RGBA{148, 103, 189, 255}
	colGrey   = color.RGBA{150, 150, 150, 255}
	colBlack  = color.RGBA{0, 0, 0, 255}
	colMark   = color.RGBA{90, 90, 90, 255} // the profiling-start mark
)

// Metric names read by the server panels (export names; first present wins).
var (
	mKV          = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"}
	mCPUKV       = []string{"vllm:cpu_kv_cache_usage_perc", "vllm:cpu_cache_usage_perc"}
	mRunning     = []string{"vllm:num_requests_running", "sglang:num_running_reqs"}
	mWaiting     = []string{"vllm:num_requests_waiting", "sglang:num_queue_reqs"}
	mHits        = []string{"vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits"}
	mQueries     = []string{"vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries"}
	mExtHits     = []string{"vllm:external_prefix_cache_hits"}
	mExtQueries  = []string{"vllm:external_prefix_cache_queries"}
	mPrompt      = []string{"vllm:prompt_tokens", "sglang:prompt_tokens"}
	mGen         = []string{"vllm:generation_tokens", "sglang:generation_tokens"}
	mBySource    = []string{"vllm:prompt_tokens_by_source"}
	mPreempt     = []string{"vllm:num_preemptions", "sglang:num_retracted_reqs"}
	mOffloadG2C  = []string{"vllm:kv_offload_bytes_gpu_to_cpu"}
	mOffloadC2G  = []string{"vllm:kv_offload_bytes_cpu_to_gpu"}
	mOffloadBoth = []string{"vllm:kv_offload_total_bytes", "vllm:kv_offload_bytes"}
)

// offload returns the GPU→CPU or CPU→GPU byte counter timeline: the
// dedicated counters InferenceX reads, else kv_offload_total_bytes with a
// transfer_type label (the name vLLM's native offload uses).
func offload(ex *servermetrics.Export, g2c bool, val sliceValue) *timeline {
	names, tt := mOffloadC2G, "CPU_to_GPU"
	if g2c {
		names, tt = mOffloadG2C, "GPU_to_CPU"
	}
	if t := collect(ex, names, nil, val, aggSum); !t.empty() {
		return t
	}
	return collect(ex, mOffloadBoth, labelIs("transfer_type", tt), val, aggSum)
}

// buildPanels computes the 12 panels, row-major.
func buildPanels(in *Input, zero int64) []panel {
	ex := in.Server
	ps := make([]panel, 0, Rows*Cols)

	// (0,0) KV cache utilisation.
	kvMean := collect(ex, mKV, nil, gaugeValue, aggMean).points(zero, 100)
	kvMax := collect(ex, mKV, nil, gaugeValue, aggMax).points(zero, 100)
	p := panel{title: "KV cache utilisation", ylabel: "usage (%)", percent: true}
	p.series = append(p.series,
		series{name: "GPU (mean of engines)", pts: kvMean, col: colBlue},
		series{name: "GPU (max engine)", pts: kvMax, col: colBlue, dashed: true, width: vg.Points(0.8)},
		series{name: "GPU (mean), rolling mean over 30 slices", pts: rollingMean(kvMean, 30), col: colBlack},
		series{name: "External / CPU", pts: collect(ex, mCPUKV, nil, gaugeValue, aggMean).points(zero, 100), col: colOrange})
	ps = append(ps, p)

	// (0,1) Queue depth.
	run := collect(ex, mRunning, nil, gaugeValue, aggSum)
	wait := collect(ex, mWaiting, nil, gaugeValue, aggSum)
	ps = append(ps, panel{title: "Request queue depth", ylabel: "requests", series: []series{
		{name: "running", pts: run.points(zero, 1), col: colGreen},
		{name: "waiting", pts: wait.points(zero, 1), col: colRed},
		{name: "total", pts: sumOf(run, wait).points(zero, 1), col: colBlack, dashed: true},
	}})

	// (1,0) Prefix-cache hit rate per interval.
	hits := collect(ex, mHits, nil, totalValue, aggSum)
	q := collect(ex, mQueries, nil, totalValue, aggSum)
	eh := collect(ex, mExtHits, nil, totalValue, aggSum)
	eq := collect(ex, mExtQueries, nil, totalValue, aggSum)
	var overall []point
	if !eh.empty() {
		overall = ratioOf(sumOf(hits, eh), q, zero, 100)
	}
	ps = append(ps, panel{title: "Prefix-cache hit rate per interval", ylabel: "hit rate (%)", percent: true, series: []series{
		{name: "GPU (hits / queries)", pts: ratioOf(hits, q, zero, 100), col: colBlue},
		{name: "External (ext hits / ext queries)", pts: ratioOf(eh, eq, zero, 100), col: colOrange},
		{name: "Overall ((hits + ext hits) / queries)", pts: overall, col: colGreen, dashed: true},
	}})

	// (1,1) Throughput.
	ps = append(ps, throughput(ex, zero))

	// (2,0) KV offload transfer rate.
	g2c, g2cPart := offload(ex, true, rateValue).ratePoints(zero, 1e-6)
	c2g, c2gPart := offload(ex, false, rateValue).ratePoints(zero, 1e-6)
	off := panel{title: "KV offload transfer rate", ylabel: "MB/s", series: []series{
		{name: "GPU→CPU", pts: g2c, col: colPurple},
		{name: "CPU→GPU", pts: c2g, col: colGreen},
	}}
	if part := append(g2cPart, c2gPart...); len(part) > 0 {
		off.series = append(off.series, partialSeries(part, colBlack))
	}
	ps = append(ps, off)

	// (2,1) Cumulative prefill-token source, stacked.
	ps = append(ps, stackedSources(ex, zero))

	// (3,0), (3,1) cumulative offload volume.
	ps = append(ps,
		panel{title: "KV offload GPU→CPU, cumulative", ylabel: "GB", series: []series{
			{name: "GPU→CPU", pts: cumulative(offload(ex, true, totalValue).points(zero, 1e-9)), col: colPurple, fill: true}}},
		panel{title: "KV offload CPU→GPU, cumulative", ylabel: "GB", series: []series{
			{name: "CPU→GPU", pts: cumulative(offload(ex, false, totalValue).points(zero, 1e-9)), col: colGreen, fill: true}}})

	// (4,0) TTFT, (4,1) latency, (5,0) decode speed.
	ps = append(ps,
		requestPanel(in.Requests, zero, "TTFT per request", "TTFT (ms)", func(r *RequestPoint) float64 { return r.TTFTms }),
		requestPanel(in.Requests, zero, "Request latency per request", "latency (ms)", func(r *RequestPoint) float64 { return r.LatencyMs }),
		requestPanel(in.Requests, zero, "Decode speed per request (1000 / ITL)", "tokens/s", func(r *RequestPoint) float64 {
			if r.ITLms > 0 {
				return 1000 / r.ITLms
			}
			return math.NaN()
		}))

	// (5,1) Preemptions, with the cumulative count on an emulated second axis.
	ps = append(ps, preemptions(ex, zero))
	return ps
}

// throughput is the token throughput panel. The decode series is often a
// few per cent of the total: it is drawn scaled up by a round factor, named
// in its legend entry, so that its shape stays readable on the same axis.
func throughput(ex *servermetrics.Export, zero int64) panel {
	prompt := collect(ex, mPrompt, nil, rateValue, aggSum)
	gen := collect(ex, mGen, nil, rateValue, aggSum)
	var total, part []point
	if !prompt.empty() || !gen.empty() {
		total, part = sumRatePoints(zero, 1, prompt, gen)
	}
	dec, decPart := gen.ratePoints(zero, 1)
	var maxTotal, maxDec float64
	for _, q := range total {
		maxTotal = math.Max(maxTotal, q.y)
	}
	for _, q := range dec {
		maxDec = math.Max(maxDec, q.y)
	}
	factor := decodeFactor(maxDec, maxTotal)
	decName := "decode (generation)"
	if factor > 1 {
		decName = fmt.Sprintf("decode (generation) ×%g on this axis", factor)
		for i := range dec {
			dec[i].y *= factor
		}
		for i := range decPart {
			decPart[i].y *= factor
		}
	}
	p := panel{title: "Token throughput", ylabel: "tokens/s", series: []series{
		{name: "total (prompt + generation)", pts: total, col: colBlue},
		{name: decName, pts: dec, col: colOrange},
		{name: "total, running average", pts: runningMean(total), col: colBlack, dashed: true},
	}}
	if all := append(part, decPart...); len(all) > 0 {
		p.series = append(p.series, partialSeries(all, colBlack))
	}
	return p
}

// decodeFactor is the round factor (1, 2 or 5 × 10^k) that brings the
// decode series' peak to at most half the total's, or 1 when the decode
// series is already at least a fifth of it.
func decodeFactor(maxDec, maxTotal float64) float64 {
	if maxDec <= 0 || maxTotal <= 0 || maxDec >= maxTotal/5 {
		return 1
	}
	want := maxTotal / 2 / maxDec
	f := 1.0
	for _, p := range []float64{1, 10, 100, 1e3, 1e4, 1e5, 1e6} {
		for _, m := range []float64{1, 2, 5} {
			if m*p <= want {
				f = m * p
			}
		}
	}
	return f
}

func stackedSources(ex *servermetrics.Export, zero int64) panel {
	p := panel{title: "Prefill-token source, cumulative (stacked)", ylabel: "tokens"}
	srcs := []struct {
		label, name string
		col         color.Color
	}{{"local_compute", "computed", colRed}, {"local_cache_hit", "GPU cache hit", colBlue}, {"external_kv_transfer", "external KV transfer", colOrange}}
	tls := make([]*timeline, len(srcs))
	for i, s := range srcs {
		tls[i] = collect(ex, mBySource, labelIs("source", s.label), totalValue, aggSum)
	}
	all := sumOf(tls...)
	if all.empty() {
		for _, s := range srcs {
			p.series = append(p.series, series{name: s.name, col: s.col})
		}
		return p
	}
	// Cumulate each source on the common grid, then stack.
	cum := make([]float64, len(srcs))
	stack := make([][]point, len(srcs))
	for _, k := range all.starts {
		x := float64(k+(all.ends[k]-k)/2-zero) / 1e9
		var base float64
		for i := range srcs {
			if !tls[i].empty() {
				cum[i] += tls[i].vals[k]
			}
			base += cum[i]
			stack[i] = append(stack[i], point{x, base})
		}
	}
	// Draw the top layer first so that each lower fill covers its part.
	for i := len(srcs) - 1; i >= 0; i-- {
		p.series = append(p.series, series{name: srcs[i].name, pts: stack[i], col: srcs[i].col, fill: true})
	}
	return p
}

func preemptions(ex *servermetrics.Export, zero int64) panel {
	p := panel{title: "Preemptions", ylabel: "preemptions/s"}
	rate, part := collect(ex, mPreempt, nil, rateValue, aggSum).ratePoints(zero, 1)
	cum := cumulative(collect(ex, mPreempt, nil, totalValue, aggSum).points(zero, 1))
	// gonum/plot has no twin axes: the cumulative count is drawn scaled onto
	// the rate axis, and the legend states the factor and the final count.
	var maxRate, maxCum float64
	for _, q := range rate {
		maxRate = math.Max(maxRate, q.y)
	}
	if len(cum) > 0 {
		maxCum = cum[len(cum)-1].y
	}
	scale := 1.0
	if maxCum > 0 && maxRate > 0 {
		scale = maxRate / maxCum
	}
	scaled := make([]point, len(cum))
	for i, q := range cum {
		scaled[i] = point{q.x, q.y * scale}
	}
	p.series = []series{{name: "per second", pts: rate, col: colRed}}
	cname := "cumulative (second axis emulated)"
	if len(cum) > 0 {
		cname = fmt.Sprintf("cumulative ×%.3g on this axis (total %.0f)", scale, maxCum)
	}
	p.series = append(p.series, series{name: cname, pts: scaled, col: colBlack, dashed: true})
	if len(part) > 0 {
		p.series = append(p.series, partialSeries(part, colBlack))
	}
	return p
}

// requestPanel scatters one per-request value against the request start,
// profiling and warmup in different colours, with a rolling mean over the
// successful requests in start order.
func requestPanel(rs []RequestPoint, zero int64, title, ylabel string, val func(*RequestPoint) float64) panel {
	var prof, warm []point
	type phased struct {
		p     point
		phase string
	}
	var all []phased
	for i := range rs {
		r := &rs[i]
		if !r.OK || r.StartNs <= 0 {
			continue
		}
		v := val(r)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		pt := point{float64(r.StartNs-zero) / 1e9, v}
		all = append(all, phased{pt, r.Phase})
		if r.Phase == "warmup" {
			warm = append(warm, pt)
		} else {
			prof = append(prof, pt)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].p.x < all[j].p.x })
	w := max(5, len(all)/100)
	pts := make([]point, len(all))
	phases := make([]string, len(all))
	for i, a := range all {
		pts[i], phases[i] = a.p, a.phase
	}
	// One rolling mean per phase run: no line across the warmup/profiling
	// gap, and no warmup request in a profiling mean.
	var parts [][]point
	for _, seg := range segments(pts, phases) {
		parts = append(parts, rollingMean(seg, w))
	}
	return panel{title: title, ylabel: ylabel, series: []series{
		{name: "profiling", pts: prof, scatter: true, col: colBlue},
		{name: "warmup", pts: warm, scatter: true, col: colGrey},
		{name: fmt.Sprintf("rolling mean (%d requests, per phase)", w), parts: parts, col: colRed, width: vg.Points(1.5)},
	}}
}

// profilingStart is the x (seconds since zero) where profiling starts, and
// whether it is known.
func profilingStart(in *Input, zero int64) (float64, bool) {
	ns := in.ProfilingStartNs
	if ns == 0 {
		for i := range in.Requests {
			r := &in.Requests[i]
			if r.Phase != "warmup" && r.StartNs > 0 && (ns == 0 || r.StartNs < ns) {
				ns = r.StartNs
			}
		}
	}
	if ns == 0 {
		return 0, false
	}
	return float64(ns-zero) / 1e9, true
}

// startMark draws the dashed vertical line where profiling starts.
type startMark struct{ x float64 }

func (m startMark) Plot(c draw.Canvas, plt *gplot.Plot) {
	trX, _ := plt.Transforms(&c)
	x := trX(m.x)
	if x < c.Min.X || x > c.Max.X {
		return
	}
	ls := draw.LineStyle{Color: colMark, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}
	c.StrokeLine2(ls, x, c.Min.Y, x, c.Max.Y)
	sty := plt.Legend.TextStyle
	sty.Color = colMark
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
	c.FillText(sty, vg.Point{X: x + vg.Points(3), Y: c.Max.Y - vg.Points(2)}, "profiling →")
}

func xys(ps []point) plotter.XYs {
	out := make(plotter.XYs, len(ps))
	for i, p := range ps {
		out[i].X, out[i].Y = p.x, p.y
	}
	return out
}

// Render draws the figure and writes it as a PNG to path (a temporary file
// renamed into place). Warnings name what could not be shown; err is set
// only when no figure was written.
func Render(in Input, path string) (warnings []string, err error) {
	zero := zeroOf(&in)
	if in.Server == nil {
		warnings = append(warnings, "plot: no server metrics export: the server panels are empty")
	}
	var noStart int
	for i := range in.Requests {
		if in.Requests[i].OK && in.Requests[i].StartNs <= 0 {
			noStart++
		}
	}
	if noStart > 0 {
		warnings = append(warnings, fmt.Sprintf("plot: %d successful request(s) without a start time were left out of the request panels", noStart))
	}
	panels := buildPanels(&in, zero)

	// A common x range for every panel.
	xmax := 0.0
	for i := range panels {
		for _, s := range panels[i].series {
			for _, q := range s.pts {
				xmax = math.Max(xmax, q.x)
			}
			for _, part := range s.parts {
				for _, q := range part {
					xmax = math.Max(xmax, q.x)
				}
			}
		}
	}
	if xmax <= 0 {
		xmax = 1
	}
	markX, marked := profilingStart(&in, zero)

	plots := make([][]*gplot.Plot, Rows)
	legends := make([][][]legendItem, Rows)
	for r := range Rows {
		plots[r] = make([]*gplot.Plot, Cols)
		legends[r] = make([][]legendItem, Cols)
		for c := range Cols {
			pl, entries, err := newPlot(&panels[r*Cols+c], xmax)
			if err != nil {
				return warnings, fmt.Errorf("plot panel %q: %w", panels[r*Cols+c].title, err)
			}
			if marked && panels[r*Cols+c].hasData() {
				pl.Add(startMark{markX})
			}
			plots[r][c] = pl
			legends[r][c] = entries
		}
	}

	img := vgimg.NewWith(vgimg.UseWH(WidthPx*vg.Inch/DPI, HeightPx*vg.Inch/DPI), vgimg.UseDPI(DPI),
		vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	title := in.Title
	if title == "" {
		title = DefaultTitle
	}
	sty := plots[0][0].Title.TextStyle
	sty.Font.Size = vg.Points(20)
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	dc.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - vg.Points(8)}, title)
	body := draw.Crop(dc, 0, 0, 0, -vg.Points(40))
	// Legends go in a strip under each panel (in the padding between the
	// rows), never over its data.
	tiles := draw.Tiles{Rows: Rows, Cols: Cols, PadTop: vg.Points(4), PadBottom: legendStrip + vg.Points(8), PadLeft: vg.Points(8),
		PadRight: vg.Points(16), PadX: vg.Points(24), PadY: legendStrip + vg.Points(14)}
	canvases := gplot.Align(plots, tiles, body)
	for r := range Rows {
		for c := range Cols {
			pl := plots[r][c]
			pl.Draw(canvases[r][c])
			drawLegend(canvases[r][c], legends[r][c])
			if !panels[r*Cols+c].hasData() {
				da := pl.DataCanvas(canvases[r][c])
				ns := pl.Title.TextStyle
				ns.Font.Size = vg.Points(18)
				ns.Color = colGrey
				ns.XAlign, ns.YAlign = draw.XCenter, draw.YCenter
				da.FillText(ns, vg.Point{X: (da.Min.X + da.Max.X) / 2, Y: (da.Min.Y + da.Max.Y) / 2}, "no data")
			}
		}
	}
	if err := writePNG(path, img); err != nil {
		return warnings, err
	}
	return warnings, nil
}

// Legend strip geometry: two columns of at most legendRows entries.
const legendRows = 2

var (
	legendFont  = vg.Points(9)
	legendStrip = vg.Length(legendRows) * vg.Points(13)
)

// legendItem is one legend entry.
type legendItem struct {
	text   string
	thumbs []gplot.Thumbnailer
}

// drawLegend draws the entries in two columns in the strip under c.
func drawLegend(c draw.Canvas, entries []legendItem) {
	if len(entries) == 0 {
		return
	}
	top := c.Min.Y - vg.Points(2)
	half := (len(entries) + 1) / 2
	colW := (c.Max.X - c.Min.X) / 2
	for col := range 2 {
		lo, hi := col*half, min(len(entries), (col+1)*half)
		if lo >= hi {
			continue
		}
		sub := gplot.NewLegend()
		sub.TextStyle.Font.Size = legendFont
		sub.Top, sub.Left = true, true
		sub.ThumbnailWidth = vg.Points(18)
		for _, e := range entries[lo:hi] {
			sub.Add(e.text, e.thumbs...)
		}
		x0 := c.Min.X + vg.Length(col)*colW
		sub.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x0, Y: top - legendStrip}, Max: vg.Point{X: x0 + colW, Y: top}}})
	}
}

// newPlot builds one panel's plot and its legend (drawn apart, under it).
func newPlot(pn *panel, xmax float64) (*gplot.Plot, []legendItem, error) {
	pl := gplot.New()
	var legend []legendItem
	pl.Title.Text = pn.title
	pl.Title.TextStyle.Font.Size = vg.Points(13)
	pl.X.Label.Text = "time (s)"
	pl.Y.Label.Text = pn.ylabel
	pl.X.Min, pl.X.Max = 0, xmax
	pl.X.Tick.Marker = compactTicks{}
	pl.Y.Tick.Marker = compactTicks{}
	pl.Legend.TextStyle.Font.Size = legendFont
	pl.Add(plotter.NewGrid())
	if !pn.hasData() {
		pl.Y.Min, pl.Y.Max = 0, 1
		return pl, legend, nil
	}
	lineStyle := func(s *series, ln *plotter.Line) {
		ln.Color = s.col
		ln.Width = vg.Points(1.2)
		if s.width > 0 {
			ln.Width = s.width
		}
		if s.dashed {
			ln.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		if s.fill {
			r, g, b, _ := s.col.RGBA()
			ln.FillColor = color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), 255}
		}
	}
	for i := range pn.series {
		s := &pn.series[i]
		if len(s.pts) == 0 && len(s.parts) == 0 {
			continue
		}
		if s.scatter {
			sc, err := plotter.NewScatter(xys(s.pts))
			if err != nil {
				return nil, legend, err
			}
			sc.GlyphStyle.Color = s.col
			sc.GlyphStyle.Radius = vg.Points(1.2)
			if s.ring {
				sc.GlyphStyle.Shape = draw.RingGlyph{}
				sc.GlyphStyle.Radius = vg.Points(3)
			}
			pl.Add(sc)
			legend = append(legend, legendItem{s.name, []gplot.Thumbnailer{sc}})
			continue
		}
		parts := s.parts
		if parts == nil {
			parts = [][]point{s.pts}
		}
		var first *plotter.Line
		for _, part := range parts {
			if len(part) == 0 {
				continue
			}
			ln, err := plotter.NewLine(xys(part))
			if err != nil {
				return nil, legend, err
			}
			lineStyle(s, ln)
			pl.Add(ln)
			if first == nil {
				first = ln
			}
		}
		if first != nil {
			legend = append(legend, legendItem{s.name, []gplot.Thumbnailer{first}})
		}
	}
	if pl.Y.Min > 0 {
		pl.Y.Min = 0
	}
	if pl.Y.Max <= pl.Y.Min {
		pl.Y.Max = pl.Y.Min + 1
	}
	if pn.percent {
		pl.Y.Min, pl.Y.Max = 0, math.Max(100, math.Ceil(pl.Y.Max))
	} else {
		// A little room above the highest point.
		pl.Y.Max += (pl.Y.Max - pl.Y.Min) * 0.05
	}
	return pl, legend, nil
}

func writePNG(path string, img *vgimg.Canvas) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	})
}
