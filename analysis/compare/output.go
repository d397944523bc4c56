package compare

import (
	"encoding/json"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/agentperf/agentperf/internal/atomicfile"
)

// Files Write writes into the output folder.
const (
	FileHTML = "compare.html"
	FilePNG  = "compare.png"
	FileJSON = "compare.json"
)

// Write writes compare.json, compare.html and compare.png into dir.
func (r *Result) Write(dir string) error {
	b, err := json.MarshalIndent(r.jsonSafe(), "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(filepath.Join(dir, FileJSON), append(b, '\n')); err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, FileHTML), r.WriteHTML); err != nil {
		return err
	}
	return r.WritePNG(filepath.Join(dir, FilePNG))
}

// jsonSafe is r with NaN written as null: JSON has no NaN.
func (r *Result) jsonSafe() any {
	out := map[string]any{"baseline": r.Baseline, "treatments": r.Treatments, "bootstrap_resamples": r.Resamples, "resampled_over": r.Over,
		"confidence_level": r.Level, "notes": r.Notes}
	rows := map[string][]map[string]any{}
	for t, rs := range r.Rows {
		for _, x := range rs {
			f := func(v float64) any {
				if math.IsNaN(v) {
					return nil
				}
				return v
			}
			rows[t] = append(rows[t], map[string]any{"metric": x.Metric, "unit": x.Unit, "baseline": f(x.Baseline), "value": f(x.Value),
				"ratio": f(x.Ratio), "ci_low": f(x.Low), "ci_high": f(x.High), "verdict": x.Verdict, "n_baseline": x.NA, "n": x.NB})
		}
	}
	out["rows"] = rows
	return out
}

var colors = []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255}}

// WritePNG draws the ratios and their intervals, one line per metric and
// treatment (a forest plot), with the line of no difference at 1.
func (r *Result) WritePNG(path string) error {
	p := gplot.New()
	p.Title.Text = "ratio to the baseline A, with 95% bootstrap intervals"
	p.X.Label.Text = "ratio (treatment / A); 1 = no difference"
	var names []string
	n := len(Metrics)
	lo, hi := math.Inf(1), math.Inf(-1)
	for ti, t := range r.Treatments {
		var pts plotter.XYs
		var errs plotter.XErrors
		for k, row := range r.Rows[t] {
			if math.IsNaN(row.Ratio) {
				continue
			}
			y := float64(n-k) - 0.15*float64(ti)
			pts = append(pts, plotter.XY{X: row.Ratio, Y: y})
			errs = append(errs, struct{ Low, High float64 }{row.Ratio - row.Low, row.High - row.Ratio})
			lo, hi = math.Min(lo, row.Low), math.Max(hi, row.High)
		}
		if len(pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.Color = colors[ti%len(colors)]
		sc.Radius = vg.Points(3)
		type xyxe struct {
			plotter.XYs
			plotter.XErrors
		}
		eb, err := plotter.NewXErrorBars(xyxe{pts, errs})
		if err != nil {
			return err
		}
		eb.Color = colors[ti%len(colors)]
		eb.Width = vg.Points(1.5)
		p.Add(eb, sc)
		p.Legend.Add(fmt.Sprintf("%c: %s", 'B'+ti, filepath.Base(t)), sc)
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0.9, 1.1
	}
	lo, hi = math.Min(lo, 1), math.Max(hi, 1)
	pad := (hi - lo) * 0.1
	p.X.Min, p.X.Max = lo-pad, hi+pad
	one, err := plotter.NewLine(plotter.XYs{{X: 1, Y: 0.3}, {X: 1, Y: float64(n) + 0.7}})
	if err != nil {
		return err
	}
	one.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one)
	for k := range Metrics {
		names = append(names, Metrics[k].Name)
	}
	ticks := make([]gplot.Tick, n)
	for k, nm := range names {
		ticks[k] = gplot.Tick{Value: float64(n - k), Label: nm}
	}
	p.Y.Tick.Marker = gplot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = 0.3, float64(n)+0.7
	p.Legend.Top = true
	return p.Save(9*vg.Inch, 6*vg.Inch, path)
}

var page = template.Must(template.New("compare").Funcs(template.FuncMap{
	"num":    num,
	"mul100": func(v float64) float64 { return 100 * v },
	"letter": func(i int) string { return string(rune('B' + i)) },
	"cls": func(v string) string {
		switch v {
		case Faster:
			return "faster"
		case Slower:
			return "slower"
		}
		return "same"
	},
	"bar": func(row Row, lo, hi float64) template.HTML {
		if math.IsNaN(row.Ratio) {
			return ""
		}
		x := func(v float64) float64 { return 10 + 280*(v-lo)/(hi-lo) }
		return template.HTML(fmt.Sprintf(`<svg width="300" height="16"><line x1="%.1f" y1="0" x2="%.1f" y2="16" stroke="#999" stroke-dasharray="3,2"/><line x1="%.1f" y1="8" x2="%.1f" y2="8" stroke="#333" stroke-width="2"/><circle cx="%.1f" cy="8" r="4" fill="#1f77b4"/></svg>`,
			x(1), x(1), x(row.Low), x(row.High), x(row.Ratio)))
	},
}).Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>agentperf compare</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin-bottom:2em}
td,th{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}
td:first-child,th:first-child{text-align:left}
.faster{color:#1a7f37;font-weight:600}.slower{color:#cf222e;font-weight:600}.same{color:#666}
code{background:#f4f4f4;padding:1px 4px}
</style></head><body>
<h1>agentperf compare</h1>
<p>Baseline A: <code>{{.R.Baseline}}</code>. Ratio = treatment / A for each statistic; the interval is a {{printf "%.0f" (mul100 .R.Level)}} % percentile bootstrap over the requests ({{.R.Resamples}} resamples, each folder resampled on its own). "faster" or "slower" when the interval excludes 1, else "no difference at 95%".</p>
{{range .R.Notes}}<p><b>note:</b> {{.}}</p>{{end}}
{{range $i, $t := .R.Treatments}}
<h2>{{letter $i}}: <code>{{$t}}</code></h2>
<p>Resampled over {{index $.R.Over $t}}.</p>
<table><tr><th>metric</th><th>A</th><th>{{letter $i}}</th><th>ratio</th><th>95% interval</th><th>verdict</th><th>interval, around 1 (dashed)</th><th>requests A / {{letter $i}}</th></tr>
{{range index $.R.Rows $t}}<tr><td>{{.Metric}} ({{.Unit}})</td><td>{{num .Baseline}}</td><td>{{num .Value}}</td><td>{{num .Ratio}}</td><td>[{{num .Low}}, {{num .High}}]</td><td class="{{cls .Verdict}}">{{.Verdict}}</td><td>{{bar . $.Lo $.Hi}}</td><td>{{.NA}} / {{.NB}}</td></tr>
{{end}}</table>
{{end}}
</body></html>
`))

// WriteHTML writes compare.html: self-contained (no script, no link).
func (r *Result) WriteHTML(w io.Writer) error {
	lo, hi := 1.0, 1.0
	for _, rows := range r.Rows {
		for _, x := range rows {
			if !math.IsNaN(x.Low) {
				lo, hi = math.Min(lo, x.Low), math.Max(hi, x.High)
			}
		}
	}
	pad := math.Max((hi-lo)*0.05, 0.01)
	var b strings.Builder
	err := page.Execute(&b, struct {
		R      *Result
		Lo, Hi float64
	}{r, lo - pad, hi + pad})
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, b.String())
	return err
}
