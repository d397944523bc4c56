package capacity

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentperf/agentperf/analysis/inferencex"
	"github.com/agentperf/agentperf/internal/atomicfile"
	"github.com/agentperf/agentperf/metrics"
)

// Files of a sweep folder, besides the points and the manifest.
const (
	SweepTableMD   = "sweep.md"
	SweepTableCSV  = "sweep.csv"
	SweepTableJSON = "sweep_table.json"
	SweepPareto    = "pareto.png"
	SweepHTML      = "sweep.html"
	// PointInferenceX is the InferenceX result JSON in each point folder.
	PointInferenceX = "inferencex.json"
)

// SweepLabels place the points in the table: TP (0 unknown: no Pareto
// point) and a configuration name.
type SweepLabels struct {
	TP     int
	Config string
}

// WriteSweepReport writes the sweep table (markdown, CSV, JSON), the
// Pareto plot and sweep.html of the points into dir, from the point
// folders alone: a resumed sweep writes what an uninterrupted one over
// the same folders writes. It returns warnings (a point not plotted).
func WriteSweepReport(dir string, pts []PointRecord, l SweepLabels) ([]string, error) {
	rows := make([]inferencex.Row, len(pts))
	for i, p := range pts {
		pd := filepath.Join(dir, p.Dir)
		lab := inferencex.Labels{TP: l.TP, Conc: p.Concurrency, Config: l.Config}
		row, err := pointRow(pd, lab)
		if err != nil {
			rows[i] = inferencex.FailedRow(pd, lab, err)
			continue
		}
		rows[i] = row
		// The row's folder is named relative to the sweep, so that the
		// table does not depend on where the sweep folder is.
		rows[i].Dir = p.Dir
	}
	t := inferencex.NewTable(rows)
	var warnings []string
	for _, w := range []struct {
		name  string
		write func(io.Writer) error
	}{{SweepTableMD, t.WriteMarkdown}, {SweepTableCSV, t.WriteCSV}, {SweepTableJSON, t.WriteJSON}} {
		if err := atomicfile.Write(filepath.Join(dir, w.name), w.write); err != nil {
			return warnings, fmt.Errorf("write %s: %w", w.name, err)
		}
	}
	skipped, err := inferencex.WritePareto(t, filepath.Join(dir, SweepPareto), inferencex.ParetoOptions{})
	warnings = append(warnings, skipped...)
	pareto := true
	if errors.Is(err, inferencex.ErrNothingToPlot) {
		warnings = append(warnings, fmt.Sprintf("%s not drawn: %v", SweepPareto, err))
		pareto = false
		os.Remove(filepath.Join(dir, SweepPareto))
	} else if err != nil {
		return warnings, fmt.Errorf("write %s: %w", SweepPareto, err)
	}
	return warnings, writeSweepHTML(dir, pts, pareto)
}

// pointRow is the table row of the point in pd: for a repeated point
// (metrics.IsRepeated), the pooled row of the runs its pooled summary
// lists (inferencex.PooledRow), else the row of its one run.
func pointRow(pd string, lab inferencex.Labels) (inferencex.Row, error) {
	if !metrics.IsRepeated(pd) {
		run, err := inferencex.Load(pd)
		if err != nil {
			return inferencex.Row{}, err
		}
		return inferencex.NewRow(run, lab), nil
	}
	sum, err := metrics.ReadPooledSummary(pd)
	if err != nil {
		return inferencex.Row{}, err
	}
	var runs []*inferencex.Run
	for _, r := range sum.Runs {
		run, err := inferencex.Load(filepath.Join(pd, r))
		if err != nil {
			return inferencex.Row{}, fmt.Errorf("%s: %w", r, err)
		}
		runs = append(runs, run)
	}
	return inferencex.PooledRow(runs, lab, sum), nil
}

// verdict is what the HTML shows of a point's judgement.
type verdict struct {
	Scenario string
	Valid    *bool
	Reasons  []string
}

func readVerdict(dir string) verdict {
	a, err := metrics.ReadAggregateFile(dir)
	if err != nil {
		return verdict{}
	}
	return verdict{a.Metadata.Scenario, a.Metadata.SubmissionValid, a.Metadata.SubmissionInvalidReasons}
}

// pointVerdict is the verdict of the point in dir: for a repeated point,
// its first run that is not a valid submission, else its last run's.
func pointVerdict(dir string) verdict {
	runs, err := metrics.RunFolders(dir)
	if err != nil || len(runs) == 0 {
		return verdict{}
	}
	var v verdict
	for i, rd := range runs {
		v = readVerdict(rd)
		if len(runs) > 1 && v.Valid != nil && !*v.Valid {
			for k, r := range v.Reasons {
				v.Reasons[k] = fmt.Sprintf("run %d: %s", i+1, r)
			}
			return v
		}
	}
	return v
}

var sweepTmpl = template.Must(template.New("sweep").Funcs(template.FuncMap{"deref": func(b *bool) bool { return *b }}).Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>agentperf sweep</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}img{max-width:100%}.bad{color:#b00}</style>
</head><body>
<h1>agentperf sweep</h1>
<p>Table: <a href="{{.MD}}">{{.MD}}</a> · <a href="{{.CSV}}">{{.CSV}}</a> · <a href="{{.JSON}}">{{.JSON}}</a></p>
{{if .Repeated}}<p>Points with more than one profile run: the table's figures are means over the point's runs with their confidence intervals; each run has its own report, aggregates and InferenceX result, and the pooled summary lists the runs.</p>{{end}}
<table><tr><th>concurrency</th><th>status</th>{{if .Repeated}}<th>runs</th>{{end}}<th>submission</th><th>report</th><th>aggregates</th><th>InferenceX result</th></tr>
{{range .Points}}<tr><td>{{.Concurrency}}</td><td{{if ne .Status "ok"}} class="bad"{{end}}>{{.Status}}{{if .Message}}: {{.Message}}{{end}}</td>
{{if $.Repeated}}<td>{{len .Runs}}</td>{{end}}<td>{{if .Verdict.Scenario}}{{.Verdict.Scenario}}: {{if .Verdict.Valid}}{{if deref .Verdict.Valid}}valid{{else}}<span class="bad">invalid</span> ({{range $i, $r := .Verdict.Reasons}}{{if $i}}; {{end}}{{$r}}{{end}}){{end}}{{end}}{{else}}—{{end}}</td>
<td>{{range $i, $r := .Runs}}{{if $i}}<br>{{end}}{{if .HTML}}<a href="{{.Dir}}/report.html">{{.Dir}}/report.html</a>{{else}}—{{end}}{{end}}</td>
<td>{{if .Pooled}}<a href="{{.Dir}}/{{.Pooled}}">{{.Dir}}/{{.Pooled}}</a> (pooled){{range .Runs}}<br><a href="{{.Dir}}/profile_export_aiperf.json">{{.Dir}}/profile_export_aiperf.json</a>{{end}}{{else}}<a href="{{.Dir}}/profile_export_aiperf.json">{{.Dir}}/profile_export_aiperf.json</a>{{end}}</td>
<td>{{range $i, $r := .Runs}}{{if $i}}<br>{{end}}{{if .IX}}<a href="{{.Dir}}/{{$.IXName}}">{{.Dir}}/{{$.IXName}}</a>{{else}}—{{end}}{{end}}</td></tr>
{{end}}</table>
{{if .Pareto}}<h2>Pareto</h2><p><img src="{{.ParetoPNG}}" alt="throughput per GPU against interactivity"></p>{{else}}<p>No Pareto plot: no point has a known TP (pass --tp), successful requests and an inter-token latency.</p>{{end}}
</body></html>
`))

type htmlPoint struct {
	PointRecord
	Verdict verdict
	// Runs are the point's run folders (one for a point run once);
	// Pooled the pooled summary of a repeated point.
	Runs   []htmlRun
	Pooled string
}

type htmlRun struct {
	Dir      string // relative to the sweep folder
	HTML, IX bool
}

func writeSweepHTML(dir string, pts []PointRecord, pareto bool) error {
	var hp []htmlPoint
	repeated := false
	for _, p := range pts {
		pd := filepath.Join(dir, p.Dir)
		h := htmlPoint{PointRecord: p, Verdict: pointVerdict(pd)}
		if metrics.IsRepeated(pd) {
			repeated = true
			h.Pooled = filepath.ToSlash(filepath.Join(metrics.DirPooled, metrics.FilePooledSummary))
		}
		runs, _ := metrics.RunFolders(pd)
		for _, rd := range runs {
			_, errH := os.Stat(filepath.Join(rd, "report.html"))
			_, errI := os.Stat(filepath.Join(rd, PointInferenceX))
			rel, err := filepath.Rel(dir, rd)
			if err != nil {
				rel = rd
			}
			h.Runs = append(h.Runs, htmlRun{Dir: filepath.ToSlash(rel), HTML: errH == nil, IX: errI == nil})
		}
		hp = append(hp, h)
	}
	data := map[string]any{"Points": hp, "Pareto": pareto, "ParetoPNG": SweepPareto, "MD": SweepTableMD, "CSV": SweepTableCSV, "JSON": SweepTableJSON,
		"Repeated": repeated, "IXName": PointInferenceX}
	return atomicfile.Write(filepath.Join(dir, SweepHTML), func(w io.Writer) error { return sweepTmpl.Execute(w, data) })
}

// WritePointInferenceX writes the InferenceX result JSON of the point in
// dir (PointInferenceX), with InferenceX's variables read through look.
// A repeated point has one in each run's folder: InferenceX's result is
// one run's, and a mean over runs is not one (docs/capacity.md).
func WritePointInferenceX(dir string, look inferencex.Lookup) ([]string, error) {
	runs, err := metrics.RunFolders(dir)
	if err != nil {
		return nil, err
	}
	var warnings []string
	for _, rd := range runs {
		w, err := writeRunInferenceX(rd, look)
		warnings = append(warnings, w...)
		if err != nil {
			return warnings, err
		}
	}
	slices.Sort(warnings)
	return slices.Compact(warnings), nil
}

func writeRunInferenceX(dir string, look inferencex.Lookup) ([]string, error) {
	env, err := inferencex.LoadEnv(look)
	if err != nil {
		return nil, err
	}
	run, err := inferencex.Load(dir)
	if err != nil {
		return nil, err
	}
	res, err := run.InferenceX(inferencex.Options{Env: env})
	if err != nil {
		return nil, err
	}
	return res.Warnings, atomicfile.Write(filepath.Join(dir, PointInferenceX), res.WriteJSON)
}
