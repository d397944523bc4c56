package capacity

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/agentperf/agentperf/analysis/slo"
	"github.com/agentperf/agentperf/internal/atomicfile"
)

// Files of a search folder, besides the probes (probe-NN-cC).
const (
	SearchResultJSON = "search_result.json"
	SearchPlot       = "search_slo.png"
)

// ProbeDir is the folder name of the n-th probe (from 1) at concurrency c.
func ProbeDir(n, c int) string { return fmt.Sprintf("probe-%02d-c%d", n, c) }

// TermJSON is one objective term of a probe in search_result.json.
type TermJSON struct {
	Name      string   `json:"name"`
	Op        string   `json:"op"`
	Threshold float64  `json:"threshold"`
	Unit      string   `json:"unit"`
	Observed  *float64 `json:"observed"` // null when the run had no value, or the failed requests decided it
	// DecidedByFailures: the failed requests, counted as values worse
	// than any threshold, set the figure (observed is null).
	DecidedByFailures bool `json:"decided_by_failed_requests,omitempty"`
	// Samples is the values judged (successful requests with the metric
	// plus failed requests, FailedRequests of them); MinSamples what the
	// statistic needs; Judged whether the verdict stands (docs/capacity.md).
	Samples        int  `json:"samples"`
	FailedRequests int  `json:"failed_requests"`
	MinSamples     int  `json:"min_samples"`
	Judged         bool `json:"judged"`
	Met            bool `json:"met"`
}

// ProbeJSON is one probe in search_result.json.
type ProbeJSON struct {
	Concurrency  int        `json:"concurrency"`
	Attempt      int        `json:"attempt"`
	Met          bool       `json:"met"`
	ClientBound  bool       `json:"client_bound"`
	ClientReason string     `json:"client_reason,omitempty"`
	Inconclusive bool       `json:"inconclusive,omitempty"`
	Why          string     `json:"why,omitempty"`
	Detail       string     `json:"detail,omitempty"`
	Dirs         []string   `json:"dirs,omitempty"`
	Requests     int        `json:"requests"`
	Errors       int        `json:"errors"`
	Goodput      float64    `json:"goodput_requests_per_sec"`
	Throughput   float64    `json:"throughput_requests_per_sec"`
	Terms        []TermJSON `json:"terms,omitempty"`
}

// SearchJSON is search_result.json.
type SearchJSON struct {
	// Status is "complete" (the search ran to its answer), "inconclusive"
	// (a probe measured nothing to judge and the search stopped there),
	// "interrupted" (stopped by a signal; the same command resumes it),
	// "error" (an error stopped it: the note says which) or "running"
	// (written after every probe: a search killed outright leaves this).
	Status        string     `json:"status"`
	SLO           string     `json:"slo"`
	Lo            int        `json:"concurrency_lo"`
	Hi            int        `json:"concurrency_hi"`
	Resolution    string     `json:"resolution"`
	Best          int        `json:"best_concurrency"`
	BestProbe     *ProbeJSON `json:"best,omitempty"`
	Below         *ProbeJSON `json:"below,omitempty"`
	Above         *ProbeJSON `json:"above,omitempty"`
	ClientBoundAt int        `json:"client_bound_at,omitempty"`
	// Inconclusive is the probe that stopped the search; Pending the
	// concurrency whose probe an interruption cut short.
	Inconclusive *ProbeJSON `json:"inconclusive,omitempty"`
	Pending      int        `json:"pending_concurrency,omitempty"`
	Note         string     `json:"note"`
	// Repeats are the runs per probe; Settings what every probe was run
	// with (SearchConfig.Settings): a search resumes only over probes
	// made with the same.
	Repeats  int               `json:"repeats"`
	Settings map[string]string `json:"settings,omitempty"`
	Probes   []ProbeJSON       `json:"probes"`
}

// ProbeData is what a search's probe function attaches to Probe.Data:
// the objective judged on the probe's (pooled) runs, and their folders.
type ProbeData struct {
	Result slo.Result
	Dirs   []string
}

func probeJSON(p *Probe) *ProbeJSON {
	if p == nil {
		return nil
	}
	j := &ProbeJSON{Concurrency: p.Concurrency, Attempt: p.Attempt, Met: p.Met && !p.ClientBound && !p.Inconclusive, ClientBound: p.ClientBound,
		ClientReason: p.ClientReason, Inconclusive: p.Inconclusive, Why: p.Why, Detail: p.Detail}
	if d, ok := p.Data.(*ProbeData); ok {
		j.Dirs = d.Dirs
		r := &d.Result
		j.Requests, j.Errors, j.Goodput, j.Throughput = r.Requests, r.Errors, r.Goodput, r.Throughput
		for _, t := range r.Terms {
			tj := TermJSON{Name: t.Name(), Op: t.Op.String(), Threshold: t.Threshold, Unit: t.Unit, Met: t.Met,
				Samples: t.Samples, FailedRequests: t.Failed, MinSamples: t.MinSamples, Judged: t.Judged,
				DecidedByFailures: math.IsInf(t.Observed, 0)}
			if !t.Missing && !math.IsInf(t.Observed, 0) {
				v := t.Observed
				tj.Observed = &v
			}
			j.Terms = append(j.Terms, tj)
		}
	}
	return j
}

// NewSearchJSON is the result file's content for res of the search sc.
func NewSearchJSON(sc SearchConfig, res *Result) SearchJSON {
	o, cfg := sc.SLO, sc.Search
	j := SearchJSON{Repeats: max(sc.Repeats, 1), Settings: sc.Settings, Status: res.status(), SLO: o.String(), Lo: cfg.Lo, Hi: cfg.Hi, Resolution: cfg.Resolution.String(), Best: res.Best,
		BestProbe: probeJSON(res.BestProbe), Below: probeJSON(res.Below), Above: probeJSON(res.Above), ClientBoundAt: res.ClientBoundAt,
		Inconclusive: probeJSON(res.Inconclusive), Pending: res.Pending}
	for i := range res.Probes {
		j.Probes = append(j.Probes, *probeJSON(&res.Probes[i]))
	}
	j.Note = Summary(cfg, res)
	return j
}

// Search statuses (SearchJSON.Status).
const (
	StatusComplete     = "complete"
	StatusInconclusive = "inconclusive"
	StatusInterrupted  = "interrupted"
	StatusRunning      = "running"
	StatusError        = "error"
)

func (r *Result) status() string {
	switch {
	case r.Inconclusive != nil:
		return StatusInconclusive
	case r.Interrupted:
		return StatusInterrupted
	case r.Running:
		return StatusRunning
	case r.Error != "":
		return StatusError
	}
	return StatusComplete
}

// Summary is the search's answer in one sentence. A search that did not
// run to its answer says why, and what its finished probes showed.
func Summary(cfg Config, res *Result) string {
	if !res.Complete() {
		return partialSummary(cfg, res)
	}
	var s string
	switch {
	case res.Best == 0 && res.ClientBoundAt == cfg.Lo:
		s = fmt.Sprintf("no answer: the client could not drive even concurrency %d (client-bound)", cfg.Lo)
	case res.Best == 0:
		s = fmt.Sprintf("not even concurrency %d meets the objective", cfg.Lo)
	case res.Best == cfg.Hi:
		s = fmt.Sprintf("every concurrency up to the range's top, %d, meets the objective: the capacity is %d or more", cfg.Hi, cfg.Hi)
	case res.Above != nil:
		s = fmt.Sprintf("capacity %d: the highest concurrency that met every objective; %d did not", res.Best, res.Above.Concurrency)
	default:
		s = fmt.Sprintf("capacity %d", res.Best)
	}
	if res.ClientBoundAt > 0 && res.Best > 0 {
		s += fmt.Sprintf("; from concurrency %d the client, not the server, was the limit (client-bound probes are invalid, not failures): the server may hold more", res.ClientBoundAt)
	}
	return s
}

func partialSummary(cfg Config, res *Result) string {
	var s string
	switch {
	case res.Inconclusive != nil:
		s = fmt.Sprintf("inconclusive: the probe at concurrency %d %s; the search stopped there (fix the cause and run the same command again: the probes before it are kept)", res.Inconclusive.Concurrency, res.Inconclusive.Why)
	case res.Interrupted && res.Pending > 0:
		s = fmt.Sprintf("interrupted while probing concurrency %d (that probe is not counted); run the same command again to resume from it", res.Pending)
	case res.Interrupted:
		s = "interrupted; run the same command again to resume"
	case res.Error != "" && res.Pending > 0:
		s = fmt.Sprintf("stopped by an error while probing concurrency %d (%s)", res.Pending, res.Error)
	case res.Error != "":
		s = fmt.Sprintf("stopped by an error (%s)", res.Error)
	default:
		s = "search in progress (if no search runs in this folder, it was killed: run the same command again to resume)"
	}
	var shown []string
	if res.Best > 0 {
		shown = append(shown, fmt.Sprintf("concurrency %d met every objective, so the capacity is at least %d", res.Best, res.Best))
	}
	if res.Above != nil {
		what := "did not meet it"
		if res.Above.ClientBound {
			what = "was client-bound"
		}
		shown = append(shown, fmt.Sprintf("concurrency %d %s", res.Above.Concurrency, what))
	}
	if len(shown) == 0 {
		return s + ". No finished probe tells anything yet"
	}
	return s + ". The finished probes show: " + strings.Join(shown, "; ")
}

// WriteSearchReport writes search_result.json and the plot of every
// term against concurrency into sc.Dir.
func WriteSearchReport(sc SearchConfig, res *Result) error {
	dir, o := sc.Dir, sc.SLO
	j := NewSearchJSON(sc, res)
	if err := atomicfile.Write(filepath.Join(dir, SearchResultJSON), func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(j)
	}); err != nil {
		return fmt.Errorf("write %s: %w", SearchResultJSON, err)
	}
	if err := writeSearchPlot(filepath.Join(dir, SearchPlot), o, res); err != nil {
		return fmt.Errorf("write %s: %w", SearchPlot, err)
	}
	return nil
}

var (
	colMet    = color.RGBA{44, 160, 44, 255}
	colFailed = color.RGBA{214, 39, 40, 255}
	colClient = color.RGBA{127, 127, 127, 255}
)

// writeSearchPlot draws one panel per term: the probes' figure against
// concurrency (log scale), green where the probe met every objective,
// red where it failed, grey crosses where it was client-bound, and the
// threshold as a dashed line.
func writeSearchPlot(path string, o slo.SLO, res *Result) error {
	n := len(o.Terms)
	const w, h, dpi = 1500, 420, 150
	img := vgimg.NewWith(vgimg.UseWH(w*vg.Inch/dpi, vg.Length(h*max(n, 1))*vg.Inch/dpi), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: max(n, 1), Cols: 1, PadX: vg.Points(8), PadY: vg.Points(8), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(12)}
	probes := slices.Clone(res.Probes)
	slices.SortStableFunc(probes, func(a, b Probe) int { return a.Concurrency - b.Concurrency })
	for i, t := range o.Terms {
		pl, err := termPanel(i, t, probes, res)
		if err != nil {
			return err
		}
		pl.Draw(tiles.At(dc, 0, i))
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	})
}

// termPanel is the panel of the objective's i-th term t: the probes'
// figures (probes sorted by concurrency) against the threshold, and the
// capacity found.
func termPanel(i int, t slo.Term, probes []Probe, res *Result) (*gplot.Plot, error) {
	pl := gplot.New()
	pl.Title.Text = fmt.Sprintf("%s %s %s", t.Name(), t.Op, fmtThreshold(t.Threshold, t.Unit))
	pl.X.Label.Text = "concurrency"
	pl.Y.Label.Text = t.Unit
	pl.X.Scale = gplot.LogScale{}
	pl.X.Tick.Marker = concTicks(res.Probes)
	pl.Add(plotter.NewGrid())
	pp := termPoints(i, t, probes)
	if len(pp.line) > 1 {
		l, err := plotter.NewLine(pp.line)
		if err != nil {
			return nil, err
		}
		l.Color = color.RGBA{120, 120, 120, 255}
		l.Width = vg.Points(0.8)
		pl.Add(l)
	}
	th, err := plotter.NewLine(plotter.XYs{{X: pp.xmin, Y: t.Threshold}, {X: pp.xmax, Y: t.Threshold}})
	if err != nil {
		return nil, err
	}
	th.Color = colFailed
	th.Width = vg.Points(1.5)
	th.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	pl.Add(th)
	pl.Legend.Add("threshold "+fmtThreshold(t.Threshold, t.Unit), th)
	if err := addProbeMarks(pl, pp.groups); err != nil {
		return nil, err
	}
	if res.Best > 0 {
		b, err := plotter.NewLine(plotter.XYs{{X: float64(res.Best), Y: 0}, {X: float64(res.Best), Y: pp.ymax * 1.6}})
		if err == nil {
			b.Color = colMet
			b.Dashes = []vg.Length{vg.Points(2), vg.Points(3)}
			pl.Add(b)
			pl.Legend.Add(fmt.Sprintf("capacity %d", res.Best), b)
		}
	}
	pl.Legend.Top, pl.Legend.Left = true, true
	pl.Legend.TextStyle.Font.Size = vg.Points(8)
	pl.X.Min, pl.X.Max = pp.xmin/1.3, pp.xmax*1.3
	// Head room above the data and the threshold for the legend.
	pl.Y.Min, pl.Y.Max = 0, pp.ymax*1.6
	if pl.Y.Max <= 0 {
		pl.Y.Max = 1
	}
	return pl, nil
}

// panelPoints are what a term's panel draws of the probes.
type panelPoints struct {
	// groups are the probes' marks by kind: "met", "failed", "failures"
	// (decided by failed requests, drawn at the edge) and "client".
	groups map[string]plotter.XYs
	// line joins the probes that are not client-bound.
	line plotter.XYs
	// The panel's extent: the probed concurrencies, and the highest
	// finite figure or the threshold.
	xmin, xmax, ymax float64
}

// termPoints places the probes' figures of the i-th term t (probes sorted
// by concurrency).
func termPoints(i int, t slo.Term, probes []Probe) panelPoints {
	pp := panelPoints{groups: map[string]plotter.XYs{}, ymax: t.Threshold, xmin: math.Inf(1), xmax: math.Inf(-1)}
	// Figures the failed requests decided (infinite) are drawn on the
	// panel's edge, once the finite ones set the scale.
	var edge []Probe
	for _, p := range probes {
		d, ok := p.Data.(*ProbeData)
		if !ok || i >= len(d.Result.Terms) || d.Result.Terms[i].Missing {
			continue
		}
		v := d.Result.Terms[i].Observed
		x := float64(p.Concurrency)
		if math.IsInf(v, 0) {
			edge = append(edge, p)
			pp.xmin, pp.xmax = min(pp.xmin, x), max(pp.xmax, x)
			continue
		}
		pp.xmin, pp.xmax, pp.ymax = min(pp.xmin, x), max(pp.xmax, x), max(pp.ymax, v)
		k := "met"
		switch {
		case p.ClientBound:
			k = "client"
		case !p.Met:
			k = "failed"
		}
		pp.groups[k] = append(pp.groups[k], plotter.XY{X: x, Y: v})
		if !p.ClientBound {
			pp.line = append(pp.line, plotter.XY{X: x, Y: v})
		}
	}
	for _, p := range edge {
		y := pp.ymax * 1.5
		if math.IsInf(p.Data.(*ProbeData).Result.Terms[i].Observed, -1) {
			y = 0
		}
		pp.groups["failures"] = append(pp.groups["failures"], plotter.XY{X: float64(p.Concurrency), Y: y})
	}
	if math.IsInf(pp.xmin, 1) {
		pp.xmin, pp.xmax = 1, 2
	}
	if pp.xmax == pp.xmin {
		pp.xmax = pp.xmin * 2
	}
	return pp
}

// addProbeMarks adds the probes' marks to the panel, one scatter and
// legend entry per kind, in the legend's order.
func addProbeMarks(pl *gplot.Plot, groups map[string]plotter.XYs) error {
	for _, k := range []string{"met", "failed", "failures", "client"} {
		pts := groups[k]
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Radius = vg.Points(4)
		switch k {
		case "met":
			sc.GlyphStyle.Color, sc.GlyphStyle.Shape = colMet, draw.CircleGlyph{}
			pl.Legend.Add("probe met every objective", sc)
		case "failed":
			sc.GlyphStyle.Color, sc.GlyphStyle.Shape = colFailed, draw.CircleGlyph{}
			pl.Legend.Add("probe failed", sc)
		case "failures":
			sc.GlyphStyle.Color, sc.GlyphStyle.Shape = colFailed, draw.PyramidGlyph{}
			pl.Legend.Add("failed: decided by failed requests (drawn at the edge)", sc)
		default:
			sc.GlyphStyle.Color, sc.GlyphStyle.Shape = colClient, draw.CrossGlyph{}
			pl.Legend.Add("client-bound (invalid)", sc)
		}
		pl.Add(sc)
	}
	return nil
}

// concTicks labels the probed concurrencies and the powers of two
// between them on a log axis, leaving out a label that would crowd one
// already placed (closer than a sixth of an octave).
type concTicks []Probe

// Ticks implements plot.Ticker.
func (ps concTicks) Ticks(lo, hi float64) []gplot.Tick {
	var vs []float64
	for _, p := range ps {
		vs = append(vs, float64(p.Concurrency))
	}
	for v := 1.0; v <= hi; v *= 2 {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	vs = slices.Compact(vs)
	var ts []gplot.Tick
	last := math.Inf(-1)
	for _, v := range vs {
		if v < lo || v > hi {
			continue
		}
		t := gplot.Tick{Value: v}
		if math.Log2(v)-last >= 1.0/6 {
			t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			last = math.Log2(v)
		}
		ts = append(ts, t)
	}
	return ts
}

func fmtThreshold(v float64, unit string) string {
	switch unit {
	case "ms":
		if v >= 1000 {
			return fmt.Sprintf("%gs", v/1000)
		}
		return fmt.Sprintf("%gms", v)
	case "%":
		return fmt.Sprintf("%g%%", v)
	}
	return fmt.Sprintf("%g %s", v, unit)
}
