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
	"github.com/agentperf/agentperf/server/engines"
	"github.com/agentperf/agentperf/server/servermetrics"
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
	// right: the series is read on the panel's right axis (its points are
	// already multiplied by the axis factor).
	right bool
	// clampName, when set, is the legend name used when some of the
	// series' points lie above the panel's scale and are drawn on its top
	// edge.
	clampName string
}

// panel is one of the 12 subplots.
type panel struct {
	title, ylabel string
	series        []series
	note          string // extra legend line
	percent       bool   // a percentage: the axis ends at 100
	// scaleFrom, when set, are the values that set the y scale (the
	// profiling phase's); points above it are drawn on the top edge.
	scaleFrom []float64
	// right is the panel's second y axis, for a series of another unit or
	// magnitude (nil: none).
	right *rightAxis
}

// top is the top of the panel's y scale set by scaleFrom (5 % above its
// largest value), NaN when the scale is not set that way.
func (p *panel) top() float64 {
	if len(p.scaleFrom) == 0 {
		return math.NaN()
	}
	top := 0.0
	for _, v := range p.scaleFrom {
		top = math.Max(top, v)
	}
	if top <= 0 {
		top = 1
	}
	return top * 1.05
}

// clamped is s with every point above top drawn on it, named clampName
// when that moved a point.
func (s *series) clamped(top float64) series {
	moved := false
	clamp := func(ps []point) []point {
		out := make([]point, len(ps))
		for j, q := range ps {
			if q.y > top {
				q.y, moved = top, true
			}
			out[j] = q
		}
		return out
	}
	c := *s
	c.pts = clamp(s.pts)
	c.parts = nil
	for _, part := range s.parts {
		c.parts = append(c.parts, clamp(part))
	}
	if moved && s.clampName != "" {
		c.name = s.clampName
	}
	return c
}

// rightAxis is a second y axis on a panel's right edge: a value v of its
// series is drawn at v × factor on the left axis, and its ticks are
// labelled in the series' own unit.
type rightAxis struct {
	label  string
	factor float64
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

// Metric names read by the server panels (export names; first present
// wins), merged from every engine of the engines table.
var (
	mKV          = names(func(e *engines.Engine) []string { return e.KVUsage })
	mCPUKV       = names(func(e *engines.Engine) []string { return e.CPUKVUsage })
	mRunning     = names(func(e *engines.Engine) []string { return e.Running })
	mWaiting     = names(func(e *engines.Engine) []string { return e.Waiting })
	mHits        = names(func(e *engines.Engine) []string { return e.PrefixHits })
	mQueries     = names(func(e *engines.Engine) []string { return e.PrefixQueries })
	mExtHits     = names(func(e *engines.Engine) []string { return e.ExternalHits })
	mExtQueries  = names(func(e *engines.Engine) []string { return e.ExternalQueries })
	mPrompt      = names(func(e *engines.Engine) []string { return e.PromptTokens })
	mGen         = names(func(e *engines.Engine) []string { return e.GenerationTokens })
	mBySource    = names(func(e *engines.Engine) []string { return e.PromptBySource })
	mPreempt     = names(func(e *engines.Engine) []string { return e.Preemptions })
	mOffloadG2C  = names(func(e *engines.Engine) []string { return e.OffloadBytesG2C })
	mOffloadC2G  = names(func(e *engines.Engine) []string { return e.OffloadBytesC2G })
	mOffloadBoth = names(func(e *engines.Engine) []string { return e.OffloadBytes })
)

var names = engines.Names

// cachedHitRate is the hit-rate series of an engine that counts cached
// prompt tokens rather than hits and queries (engines.Engine.CachedTokens;
// llama.cpp, whose prompt counter leaves the cached tokens out, and
// SGLang's device tier): cached / prompt tokens per interval, in percent.
func cachedHitRate(ex *servermetrics.Export, zero int64) []point {
	det := servermetrics.DetectEngine(ex)
	e := det.Engine
	if e == nil || len(e.CachedTokens) == 0 {
		return nil
	}
	var keep func(*servermetrics.Series) bool
	if e.CacheSourceLabel != "" {
		keep = func(s *servermetrics.Series) bool {
			v, ok := s.Labels[e.CacheSourceLabel]
			return !ok || v == "device"
		}
	}
	cached := collect(ex, e.CachedTokens, keep, totalValue, aggSum)
	prompt := collect(ex, e.PromptTokens, nil, totalValue, aggSum)
	if e.PromptExcludesCached {
		prompt = sumOf(prompt, collect(ex, e.CachedTokens, nil, totalValue, aggSum))
	}
	return ratioOf(cached, prompt, zero, 100)
}

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
	gpu, gpuName := ratioOf(hits, q, zero, 100), "GPU (hits / queries)"
	if len(gpu) == 0 {
		if c := cachedHitRate(ex, zero); len(c) > 0 {
			gpu, gpuName = c, "GPU (cached / prompt tokens)"
		}
	}
	ps = append(ps, panel{title: "Prefix-cache hit rate per interval", ylabel: "hit rate (%)", percent: true, series: []series{
		{name: gpuName, pts: gpu, col: colBlue},
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

	// (5,1) Preemptions, with the cumulative count on a right axis.
	ps = append(ps, preemptions(ex, zero))
	return ps
}

// throughput is the token throughput panel. The decode series is often a
// few per cent of the total: it is read on a right axis of its own, so
// that its shape stays readable and its values are read directly.
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
	p := panel{title: "Token throughput", ylabel: "tokens/s (total)"}
	decName, right := "decode (generation)", false
	if factor := decodeFactor(maxDec, maxTotal); factor > 1 {
		// The right axis spans the decode series as the left one spans
		// the total.
		factor = maxTotal / maxDec
		p.right = &rightAxis{label: "decode tokens/s (right axis)", factor: factor}
		decName, right = "decode (generation), right axis", true
		for i := range dec {
			dec[i].y *= factor
		}
		for i := range decPart {
			decPart[i].y *= factor
		}
	}
	p.series = []series{
		{name: "total (prompt + generation)", pts: total, col: colBlue},
		{name: decName, pts: dec, col: colOrange, right: right},
		{name: "total, running average", pts: runningMean(total), col: colBlack, dashed: true},
	}
	if len(part) > 0 {
		p.series = append(p.series, partialSeries(part, colBlack))
	}
	if len(decPart) > 0 {
		ps := partialSeries(decPart, colOrange)
		ps.name, ps.right = "partial slice, decode", right
		p.series = append(p.series, ps)
	}
	return p
}

// decodeFactor is greater than 1 when the decode series needs an axis of
// its own: the round factor (1, 2 or 5 × 10^k) that brings its peak to at
// most half the total's, or 1 when it is already at least a fifth of it.
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
	// The cumulative count is another unit: it is read on the right axis.
	var maxRate, maxCum float64
	for _, q := range rate {
		maxRate = math.Max(maxRate, q.y)
	}
	if len(cum) > 0 {
		maxCum = cum[len(cum)-1].y
	}
	factor := 1.0
	if maxCum > 0 && maxRate > 0 {
		factor = maxRate / maxCum
	}
	scaled := make([]point, len(cum))
	for i, q := range cum {
		scaled[i] = point{q.x, q.y * factor}
	}
	p.series = []series{{name: "per second (left axis)", pts: rate, col: colRed}}
	if len(cum) > 0 {
		p.right = &rightAxis{label: "preemptions, cumulative", factor: factor}
		p.series = append(p.series, series{name: fmt.Sprintf("cumulative, right axis (total %.0f)", maxCum), pts: scaled, col: colBlack, dashed: true, right: true})
	}
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
	var scale []float64 // the profiling values and their means set the scale
	for _, q := range prof {
		scale = append(scale, q.y)
	}
	off := 0
	for _, seg := range segments(pts, phases) {
		m := rollingMean(seg, w)
		parts = append(parts, m)
		if len(seg) > 0 && phases[off] != "warmup" {
			for _, q := range m {
				scale = append(scale, q.y)
			}
		}
		off += len(seg)
	}
	if len(prof) == 0 {
		scale = nil // only warmup: it sets the scale
	}
	return panel{title: title, ylabel: ylabel, scaleFrom: scale, series: []series{
		// The mean first, so that the points are drawn over it.
		{name: fmt.Sprintf("rolling mean (%d requests, per phase)", w), parts: parts, col: colRed, width: vg.Points(1.5)},
		{name: "profiling", pts: prof, scatter: true, col: colBlue},
		{name: "warmup", pts: warm, scatter: true, col: colGrey, clampName: "warmup (above the profiling scale: on the top edge)"},
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
	// On a white box, so that no data line runs through the text.
	at := vg.Point{X: x + vg.Points(3), Y: c.Max.Y - vg.Points(2)}
	box := sty.Rectangle(markLabel).Add(at)
	c.SetColor(color.White)
	c.Fill(box.Path())
	c.FillText(sty, at, markLabel)
}

// markLabel is the text beside the profiling-start mark.
const markLabel = "profiling →"

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
	} else if det := servermetrics.DetectEngine(in.Server); det.Unknown() {
		warnings = append(warnings, "plot: "+det.UnknownText(8)+"; the server panels are empty")
	} else if e := det.Engine; e != nil && e.Missing != "" {
		warnings = append(warnings, fmt.Sprintf("plot: %s: %s; those panels say no data", e.Title, e.Missing))
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
	canvases := panelCanvases(plots, dc)
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

// panelCanvases lays the panels out on the figure's canvas dc, under the
// title. Legends go in a strip under each panel (in the padding between
// the rows), never over its data; the padding between the columns leaves
// room for a right axis.
func panelCanvases(plots [][]*gplot.Plot, dc draw.Canvas) [][]draw.Canvas {
	body := draw.Crop(dc, 0, 0, 0, -vg.Points(40))
	tiles := draw.Tiles{Rows: Rows, Cols: Cols, PadTop: vg.Points(4), PadBottom: legendStrip + vg.Points(8), PadLeft: vg.Points(8),
		PadRight: rightAxisWidth + vg.Points(8), PadX: rightAxisWidth + vg.Points(16), PadY: legendStrip + vg.Points(14)}
	return gplot.Align(plots, tiles, body)
}

// Legend strip geometry: two columns of at most legendRows entries, one
// entry per row of legendRowH.
const legendRows = 3

var (
	legendFont   = vg.Points(9)
	legendRowH   = vg.Points(12)
	legendStrip  = vg.Length(legendRows) * legendRowH
	legendThumbW = vg.Points(18)
	legendGap    = vg.Points(4) // between the thumbnail and the text
)

// legendItem is one legend entry.
type legendItem struct {
	text   string
	thumbs []gplot.Thumbnailer
}

// legendBox is where one entry is drawn: its row, and the box its
// thumbnail and text cover.
type legendBox struct {
	row vg.Rectangle // the entry's row (thumbnail, gap, then text)
	box vg.Rectangle // what the thumbnail and text cover
}

// legendLayout places the entries in the strip under c: two columns (the
// first half of the entries in the left one) of one entry per row, or one
// column when an entry of the left one would reach into the right one.
// Each box is the entry's thumbnail and text; no two intersect.
func legendLayout(c draw.Canvas, entries []legendItem) []legendBox {
	sty := gplot.NewLegend().TextStyle
	sty.Font.Size = legendFont
	width := func(e legendItem) vg.Length { return legendThumbW + legendGap + sty.Width(e.text) }
	top := c.Min.Y - vg.Points(2)
	colW := (c.Max.X - c.Min.X) / 2
	perCol := (len(entries) + 1) / 2
	for _, e := range entries[:perCol] {
		if width(e) > colW-vg.Points(6) {
			perCol = len(entries) // one column
			break
		}
	}
	out := make([]legendBox, len(entries))
	for i, e := range entries {
		col, row := i/perCol, i%perCol
		x0 := c.Min.X + vg.Length(col)*colW
		y1 := top - vg.Length(row)*legendRowH
		r := vg.Rectangle{Min: vg.Point{X: x0, Y: y1 - legendRowH}, Max: vg.Point{X: x0 + width(e), Y: y1}}
		h := sty.Height(e.text)
		out[i] = legendBox{row: r, box: vg.Rectangle{Min: vg.Point{X: x0, Y: y1 - (legendRowH+h)/2}, Max: vg.Point{X: r.Max.X, Y: y1 - (legendRowH-h)/2}}}
	}
	return out
}

// drawLegend draws the entries in the strip under c (legendLayout).
func drawLegend(c draw.Canvas, entries []legendItem) {
	for i, lb := range legendLayout(c, entries) {
		sub := gplot.NewLegend()
		sub.TextStyle.Font.Size = legendFont
		sub.Top, sub.Left = true, true
		sub.ThumbnailWidth = legendThumbW
		sub.Padding = legendGap
		sub.Add(entries[i].text, entries[i].thumbs...)
		sub.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: lb.row})
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
	top := pn.top()
	for i := range pn.series {
		s := &pn.series[i]
		if len(s.pts) == 0 && len(s.parts) == 0 {
			continue
		}
		if !math.IsNaN(top) {
			c := s.clamped(top)
			s = &c
		}
		if s.scatter {
			sc, err := plotter.NewScatter(xys(s.pts))
			if err != nil {
				return nil, legend, err
			}
			sc.GlyphStyle.Color = s.col
			sc.GlyphStyle.Radius = vg.Points(1.8)
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
	switch {
	case pn.percent:
		pl.Y.Min, pl.Y.Max = 0, math.Max(100, math.Ceil(pl.Y.Max))
	case !math.IsNaN(top):
		pl.Y.Min, pl.Y.Max = 0, top
	default:
		// A little room above the highest point.
		pl.Y.Max += (pl.Y.Max - pl.Y.Min) * 0.05
	}
	if pn.right != nil {
		pl.Add(*pn.right)
	}
	return pl, legend, nil
}

// Plot draws the right axis: its line, ticks in its own unit at the
// heights of the left axis they stand for, and its label.
func (a rightAxis) Plot(c draw.Canvas, plt *gplot.Plot) {
	if a.factor <= 0 || math.IsNaN(a.factor) || math.IsInf(a.factor, 0) {
		return
	}
	_, trY := plt.Transforms(&c)
	x := c.Max.X
	ls := draw.LineStyle{Color: color.Black, Width: vg.Points(0.5)}
	c.StrokeLine2(ls, x, c.Min.Y, x, c.Max.Y)
	sty := plt.Y.Tick.Label
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	for _, t := range (compactTicks{}).Ticks(plt.Y.Min/a.factor, plt.Y.Max/a.factor) {
		y := trY(t.Value * a.factor)
		if y < c.Min.Y-0.5 || y > c.Max.Y+0.5 {
			continue
		}
		l := vg.Points(2)
		if t.Label != "" {
			l = vg.Points(4)
			c.FillText(sty, vg.Point{X: x + vg.Points(6), Y: y}, t.Label)
		}
		c.StrokeLine2(ls, x, y, x+l, y)
	}
	lab := plt.Y.Label.TextStyle
	lab.Rotation = -math.Pi / 2
	lab.XAlign, lab.YAlign = draw.XCenter, draw.YTop
	c.FillText(lab, vg.Point{X: x + rightAxisWidth, Y: (c.Min.Y + c.Max.Y) / 2}, a.label)
}

// rightAxisWidth is the room a right axis takes beside the data: its tick
// labels and its label.
var rightAxisWidth = vg.Points(40)

func writePNG(path string, img *vgimg.Canvas) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	})
}
