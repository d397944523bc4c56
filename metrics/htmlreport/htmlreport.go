package htmlreport

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentperf/agentperf/internal/atomicfile"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/plot"
	"github.com/agentperf/agentperf/server/gputelemetry"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// FileName is the report's name in an artifact folder.
const FileName = "report.html"

var (
	//go:embed template.html
	pageTemplate string
	//go:embed report.js
	appJS string
	//go:embed assets/uPlot.iife.min.js
	uplotJS string
	//go:embed assets/uPlot.min.css
	uplotCSS string
)

// Data is everything the page shows; it is embedded as JSON.
type Data struct {
	Title    string      `json:"title"`
	Subtitle string      `json:"subtitle"`
	Facts    [][2]string `json:"facts"`
	Validity *Validity   `json:"validity"`
	Warnings []string    `json:"warnings"`
	Metrics  []Metric    `json:"metrics"`
	Scalars  []Scalar    `json:"scalars"`
	Figure   figureJSON  `json:"figure"`
}

// Validity is the scenario verdict (nil without a scenario).
type Validity struct {
	Scenario string   `json:"scenario"`
	Valid    bool     `json:"valid"`
	Reasons  []string `json:"reasons"`
}

// Metric is one per-request metric's statistics.
type Metric struct {
	Tag   string              `json:"tag"`
	Name  string              `json:"name"`
	Unit  string              `json:"unit"`
	Stats map[string]*float64 `json:"stats"`
}

// Scalar is one run-level figure (throughput, counts, hit rates).
type Scalar struct {
	Tag   string  `json:"tag"`
	Name  string  `json:"name"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
}

// figureJSON is plot.FigureData with NaN as null.
type figureJSON struct {
	HasProfilingStart bool        `json:"has_profiling_start"`
	ProfilingStart    float64     `json:"profiling_start"`
	Panels            []panelJSON `json:"panels"`
}

type panelJSON struct {
	Title   string `json:"title"`
	YLabel  string `json:"ylabel"`
	Percent bool   `json:"percent"`
	Note    string `json:"note,omitempty"`
	// YMax, when positive, is the top of the y axis (set by the
	// profiling values); RightLabel names a second y axis.
	YMax       float64      `json:"ymax,omitempty"`
	RightLabel string       `json:"right_label,omitempty"`
	Series     []seriesJSON `json:"series"`
}

type seriesJSON struct {
	Name  string     `json:"name"`
	Style string     `json:"style"`
	Color string     `json:"color"`
	X     nullFloats `json:"x"`
	Y     nullFloats `json:"y"`
	Right bool       `json:"right,omitempty"` // read on the right axis
}

// nullFloats encodes NaN and ±Inf as null (JSON has no NaN).
type nullFloats []float64

func (f nullFloats) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 8*len(f)+2)
	b = append(b, '[')
	for i, v := range f {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b = append(b, "null"...)
			continue
		}
		b = appendFloat(b, v)
	}
	return append(b, ']'), nil
}

// appendFloat writes v with 6 significant digits (enough for a chart).
func appendFloat(b []byte, v float64) []byte { return strconv.AppendFloat(b, v, 'g', 6, 64) }

func figureData(fd plot.FigureData) figureJSON {
	out := figureJSON{HasProfilingStart: fd.HasProfilingStart, ProfilingStart: fd.ProfilingStart}
	for _, p := range fd.Panels {
		pj := panelJSON{Title: p.Title, YLabel: p.YLabel, Percent: p.Percent, Note: p.Note, YMax: p.YMax, RightLabel: p.RightLabel, Series: []seriesJSON{}}
		for _, s := range p.Series {
			pj.Series = append(pj.Series, seriesJSON{Name: s.Name, Style: s.Style, Color: s.Color, X: s.X, Y: s.Y, Right: s.Right})
		}
		out.Panels = append(out.Panels, pj)
	}
	return out
}

// statNames are the statistics shown per metric.
var statNames = []string{"avg", "p50", "p90", "p99", "min", "max", "count"}

// Read builds the report's data from an artifact folder: the aggregate
// JSON (summary), profile_export.jsonl (per-request panels) and
// server_metrics_export.json (server panels). A missing or unreadable file
// is a warning (its part of the page says "no data"); err is set only when
// the folder has none of them.
func Read(dir string) (*Data, []string, error) {
	d, warnings, found := readSummary(dir)
	for _, f := range []string{plot.RecordsFile, servermetrics.JSONFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			found = true
		}
	}
	if !found {
		return nil, warnings, fmt.Errorf("report.html: %s holds none of %s, %s, %s (is it an artifact folder?): %w",
			dir, metrics.FileAggregateJSON, plot.RecordsFile, servermetrics.JSONFile, fs.ErrNotExist)
	}
	in, w := plot.ReadDir(dir)
	fw := FigureWarnings(w)
	d.setFigure(in, append(warnings, fw...))
	warnings = append(warnings, d.addGPU(dir)...)
	return d, append(warnings, fw...), nil
}

// ReadWith builds the report's data from the aggregate JSON of dir and a
// figure input the caller has read already (plot.ReadFiles, as a run that
// also renders metrics_plots.png does), figureWarnings being that input's
// warnings as FigureWarnings words them. The page shows figureWarnings
// (once each, also when the aggregate's metadata.warnings hold them); the
// warnings returned are only those of reading the summary.
func ReadWith(dir string, in plot.Input, figureWarnings []string) (*Data, []string) {
	d, warnings, _ := readSummary(dir)
	d.setFigure(in, append(slices.Clone(warnings), figureWarnings...))
	return d, append(warnings, d.addGPU(dir)...)
}

// addGPU adds the GPU telemetry of dir (gputelemetry.FileName), when the
// run collected it: the energy facts and a per-GPU power panel.
func (d *Data) addGPU(dir string) []string {
	r, err := gputelemetry.ReadExport(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		w := fmt.Sprintf("report.html: GPU telemetry left out: %v", err)
		d.Warnings = append(d.Warnings, w)
		return []string{w}
	}
	fact := func(label, v string) { d.Facts = append(d.Facts, [2]string{label, v}) }
	win := fmt.Sprintf("profiling window, %.1f s", r.WindowSeconds)
	for _, g := range r.GPUs {
		label := fmt.Sprintf("GPU %s energy (%s, %s)", g.Index, win, g.EnergySource)
		if g.EnergyJ == nil {
			fact(fmt.Sprintf("GPU %s energy (%s)", g.Index, win), "n/a: "+g.Problem)
			continue
		}
		fact(label, fmt.Sprintf("%.0f J, average %.0f W", *g.EnergyJ, *g.AvgPowerW))
	}
	if r.TotalEnergyJ != nil {
		fact(fmt.Sprintf("GPU energy, %d GPUs (%s)", len(r.GPUs), win), fmt.Sprintf("%.0f J, average %.0f W", *r.TotalEnergyJ, *r.AvgTotalPowerW))
	}
	if e := r.Efficiency; e != nil {
		fact("output tokens per joule (successful profiling requests, all GPUs)", fmt.Sprintf("%.4g", e.OutputTokensPerJoule))
		fact("joules per request (successful profiling requests, all GPUs)", fmt.Sprintf("%.4g J", e.JoulesPerRequest))
		fact("joules per output token", fmt.Sprintf("%.4g J", e.JoulesPerOutputToken))
	}
	origin := 0.0
	if d.Figure.HasProfilingStart {
		origin = d.Figure.ProfilingStart
	}
	p := panelJSON{Title: "GPU power (W, per GPU; GPU exporters)", YLabel: "W", Series: []seriesJSON{}}
	colors := []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}
	for i, s := range r.Series {
		col := s.Fields["power_w"]
		if col == nil {
			continue
		}
		xs, ys := make(nullFloats, 0, len(col)), make(nullFloats, 0, len(col))
		for k, v := range col {
			if v != nil {
				xs, ys = append(xs, origin+s.T[k]), append(ys, *v)
			}
		}
		p.Series = append(p.Series, seriesJSON{Name: "GPU " + s.Index, Style: "line", Color: colors[i%len(colors)], X: xs, Y: ys})
	}
	d.Figure.Panels = append(d.Figure.Panels, p)
	return nil
}

// FigureWarnings words the warnings of reading a figure's input
// (plot.ReadDir, plot.ReadFiles) as the page's: what report.html could
// not show.
func FigureWarnings(plotWarnings []string) []string {
	out := make([]string, 0, len(plotWarnings))
	for _, s := range plotWarnings {
		out = append(out, "report.html: "+strings.TrimPrefix(s, "plot: "))
	}
	return out
}

// readSummary starts the page's data from the aggregate JSON of dir;
// found says whether the file exists.
func readSummary(dir string) (d *Data, warnings []string, found bool) {
	d = &Data{Title: "agentperf report", Facts: [][2]string{}, Warnings: []string{}, Metrics: []Metric{}, Scalars: []Scalar{}}
	aggPath := filepath.Join(dir, metrics.FileAggregateJSON)
	if b, err := os.ReadFile(aggPath); err == nil {
		found = true
		if err := d.fillSummary(b); err != nil {
			warnings = append(warnings, fmt.Sprintf("report.html: summary left out: %s: %v", aggPath, err))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		warnings = append(warnings, fmt.Sprintf("report.html: summary left out: %v", err))
	}
	return d, warnings, found
}

// setFigure sets the figure and adds the warnings the page shows, each
// once.
func (d *Data) setFigure(in plot.Input, warnings []string) {
	d.Figure = figureData(plot.Figure(in))
	for _, w := range warnings {
		if !slices.Contains(d.Warnings, w) {
			d.Warnings = append(d.Warnings, w)
		}
	}
}

// fillSummary reads the aggregate JSON (metrics.DecodeAggregateFile).
func (d *Data) fillSummary(b []byte) error {
	agg, err := metrics.DecodeAggregateFile(b)
	if err != nil {
		return err
	}
	d.fillFacts(agg)
	d.fillMetrics(agg.Stats)
	return nil
}

// fillFacts sets the title, the run's facts (settings, accounting, server
// figures), the validity and the warnings.
func (d *Data) fillFacts(agg *metrics.AggregateFile) {
	if agg.BenchmarkID != "" {
		d.Title = "agentperf report — benchmark " + agg.BenchmarkID
	}
	d.Subtitle = strings.TrimSpace(fmt.Sprintf("%s → %s  %s", agg.StartTime, agg.EndTime, agg.AiperfVersion))
	fact := func(label string, v any) {
		if v == nil || v == "" {
			return
		}
		d.Facts = append(d.Facts, [2]string{label, fmt.Sprint(v)})
	}
	ic := agg.InputConfig
	for _, k := range []struct{ label, key string }{
		{"model", "model_names"}, {"URL", "url"}, {"endpoint", "endpoint"}, {"concurrency", "concurrency"},
		{"benchmark duration set (s)", "benchmark_duration"}, {"streaming", "streaming"}, {"random seed", "random_seed"},
		{"tokenizer", "tokenizer"}, {"scenario", "scenario"},
	} {
		if ic != nil {
			if v, ok := ic[k.key]; ok {
				if l, isList := v.([]any); isList {
					parts := make([]string, len(l))
					for i := range l {
						parts[i] = fmt.Sprint(l[i])
					}
					v = strings.Join(parts, ", ")
				}
				fact(k.label, v)
			}
		}
	}
	if a := agg.Metadata.RequestAccounting; a != nil {
		fact("requests sent (whole run: warmup and profiling)", a.Sent)
		fact("profiling ok / failed", fmt.Sprintf("%v / %v", a.ProfilingOK, a.ProfilingErrors))
		fact("warmup ok / failed", fmt.Sprintf("%v / %v", a.WarmupOK, a.WarmupErrors))
		fact("context overflows (whole run: warmup and profiling)", a.Overflows)
		fact("cancelled (whole run: warmup and profiling)", a.Cancelled)
	}
	if agg.WasCancelled {
		fact("run", "cancelled")
	}
	ac, _ := agg.Metadata.Agentperf["achieved_concurrency"].(map[string]any)
	lanes, _ := metrics.JSONFloat(agg.Metadata.Agentperf["concurrency"])
	for _, ph := range []string{"profiling", "warmup"} {
		o, _ := ac[ph].(map[string]any)
		mean, ok1 := metrics.JSONFloat(o["mean_requests_in_flight"])
		most, ok2 := metrics.JSONFloat(o["max_requests_in_flight"])
		idle, ok3 := metrics.JSONFloat(o["idle_share"])
		win, ok4 := metrics.JSONFloat(o["window_s"])
		if !ok1 || !ok2 || !ok3 || !ok4 {
			continue
		}
		v := fmt.Sprintf("%.2f / %.0f", mean, most)
		if lanes > 0 {
			v += fmt.Sprintf(" (--concurrency %.0f lanes: trace trees at a time, not requests)", lanes)
		}
		fact(fmt.Sprintf("requests in flight, mean / max (%s window, %.1f s; this client)", ph, win), v)
		fact(fmt.Sprintf("time with no request in flight (%s window)", ph), fmt.Sprintf("%.1f %%", 100*idle))
	}
	sd, _ := agg.Metadata.Agentperf["server_derived"].(map[string]any)
	for _, k := range []struct{ label, key string }{
		{"GPU prefix-cache hit rate (server /metrics, profiling window)", "prefix_cache_hit_rate_gpu_local"},
		{"overall prefix-cache hit rate (server /metrics, profiling window)", "prefix_cache_hit_rate_overall"},
		{"GPU KV usage, mean while active (server, profiling window)", "gpu_kv_usage_mean_active"},
		{"GPU KV usage, peak (server, profiling window)", "gpu_kv_usage_peak"},
	} {
		if v, ok := metrics.JSONFloat(sd[k.key]); ok {
			fact(k.label, fmt.Sprintf("%.1f %%", 100*v))
		}
	}
	if agg.Metadata.Scenario != "" && agg.Metadata.SubmissionValid != nil {
		d.Validity = &Validity{Scenario: agg.Metadata.Scenario, Valid: *agg.Metadata.SubmissionValid, Reasons: agg.Metadata.SubmissionInvalidReasons}
	}
	d.Warnings = append(d.Warnings, agg.Metadata.Warnings...)
}

// fillMetrics adds a Metric for every stat object with percentiles and a
// Scalar for every other one with an average, in the file's order.
func (d *Data) fillMetrics(stats []metrics.NamedStat) {
	headers := map[string]metrics.Metric{}
	for _, m := range metrics.Metrics {
		headers[m.Tag] = m
	}
	for i := range stats {
		k, blk := stats[i].Tag, &stats[i].StatObject
		name := prettyName(k)
		if h, ok := headers[k]; ok {
			name = h.Header
		}
		if n, ok := htmlNames[k]; ok {
			name = n
		}
		if blk.P50.Set() {
			m := Metric{Tag: k, Name: name, Unit: blk.Unit, Stats: map[string]*float64{}}
			for _, s := range statNames {
				if f, ok := blk.Get(s).Float(); ok {
					m.Stats[s] = &f
				}
			}
			d.Metrics = append(d.Metrics, m)
			continue
		}
		if k == "min_request_timestamp" || k == "max_response_timestamp" {
			continue // Unix ns: the subtitle has the run's times
		}
		if f, ok := blk.Avg.Float(); ok {
			d.Scalars = append(d.Scalars, Scalar{Tag: k, Name: name, Unit: blk.Unit, Value: f})
		}
	}
}

// htmlNames are the report's names for figures whose aiperf header is
// ambiguous beside another figure of the page: each says what it covers.
var htmlNames = map[string]string{
	"benchmark_duration":                  "Benchmark duration measured (first request sent to last response)",
	"overall_usage_prompt_cache_read_pct": "Cached prompt tokens (the responses' usage, successful profiling requests)",
	"theoretical_prefix_cache_hit":        "Theoretical prefix-cache hit (an infinite cache, successful profiling requests)",
	// The counts beside the whole run's request accounting: each says
	// its phase.
	"context_overflow_count":         "Context overflow count (profiling)",
	"skipped_context_overflow_count": "Skipped context overflow count (profiling)",
	"request_count":                  "Request count (successful, profiling)",
	"error_request_count":            "Error request count (profiling)",
	"completed_request_count":        "Completed request count (successful and failed, profiling)",
	"cancelled_request_count":        "Cancelled request count (profiling)",
}

// prettyName turns a snake_case tag into words.
func prettyName(tag string) string {
	s := strings.ReplaceAll(tag, "_", " ")
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Write renders the page for d to w.
func Write(w io.Writer, d *Data) error {
	data, err := json.Marshal(d) // escapes <, > and &: safe inside <script>
	if err != nil {
		return fmt.Errorf("report.html: encode data: %w", err)
	}
	page := pageTemplate
	for _, r := range []struct{ marker, with string }{
		{"/*__UPLOT_CSS__*/", uplotCSS},
		{"/*__UPLOT_JS__*/", uplotJS},
		{"/*__APP_JS__*/", appJS},
		{"/*__DATA__*/", string(data)}, // last: nothing is replaced inside the data
	} {
		i := strings.Index(page, r.marker)
		if i < 0 {
			return fmt.Errorf("report.html: template lacks %s", r.marker)
		}
		page = page[:i] + r.with + page[i+len(r.marker):]
	}
	_, err = io.WriteString(w, page)
	return err
}

// WriteDir writes report.html into an artifact folder from its files (see
// Read), atomically. Warnings name what the page could not show.
func WriteDir(dir string) ([]string, error) {
	d, warnings, err := Read(dir)
	if err != nil {
		return warnings, err
	}
	return warnings, writeFile(dir, d)
}

// WriteDirWith writes report.html into an artifact folder, atomically,
// from its aggregate JSON and a figure input already read (see ReadWith).
// The warnings are those of reading the summary.
func WriteDirWith(dir string, in plot.Input, figureWarnings []string) ([]string, error) {
	d, warnings := ReadWith(dir, in, figureWarnings)
	return warnings, writeFile(dir, d)
}

func writeFile(dir string, d *Data) error {
	return atomicfile.Write(filepath.Join(dir, FileName), func(w io.Writer) error { return Write(w, d) })
}
