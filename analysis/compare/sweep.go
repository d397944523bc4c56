package compare

import (
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/agentperf/agentperf/capacity"
	"github.com/agentperf/agentperf/internal/atomicfile"
)

// Sweep is a sweep folder (agentperf sweep): its points by concurrency.
type Sweep struct {
	Dir    string
	Points map[int]*Folder
}

// IsSweep reports whether dir is a sweep folder (it holds
// capacity.ManifestFile).
func IsSweep(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, capacity.ManifestFile))
	return err == nil
}

// LoadSweep reads a sweep folder's finished points.
func LoadSweep(dir string) (*Sweep, error) {
	pts, err := capacity.ReadManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	s := &Sweep{Dir: dir, Points: map[int]*Folder{}}
	for _, p := range pts {
		if p.Status != capacity.PointOK {
			continue
		}
		f, err := Load(filepath.Join(dir, p.Dir))
		if err != nil {
			return nil, err
		}
		f.Dir = dir
		s.Points[p.Concurrency] = f
	}
	if len(s.Points) == 0 {
		return nil, fmt.Errorf("compare: %s has no finished sweep point", dir)
	}
	return s, nil
}

// SweepResult compares sweeps point by point: at each concurrency every
// sweep holds, a Result against the baseline sweep's point.
type SweepResult struct {
	Baseline    string
	Sweeps      []string
	Concurrency []int
	PerPoint    map[int]*Result
	// Curves are, per sweep and metric, the statistic at each
	// concurrency of Concurrency (NaN where absent), for the overlay.
	Curves map[string][][]float64
}

// CompareSweeps compares every other sweep to the first, at each
// concurrency they share.
func CompareSweeps(sweeps []*Sweep, o Options) (*SweepResult, error) {
	if len(sweeps) < 2 {
		return nil, fmt.Errorf("compare: give at least two sweep folders")
	}
	r := &SweepResult{Baseline: sweeps[0].Dir, PerPoint: map[int]*Result{}, Curves: map[string][][]float64{}}
	for c := range sweeps[0].Points {
		shared := true
		for _, s := range sweeps[1:] {
			_, ok := s.Points[c]
			shared = shared && ok
		}
		if shared {
			r.Concurrency = append(r.Concurrency, c)
		}
	}
	slices.Sort(r.Concurrency)
	if len(r.Concurrency) == 0 {
		return nil, fmt.Errorf("compare: the sweeps share no concurrency")
	}
	for _, c := range r.Concurrency {
		var fs []*Folder
		for _, s := range sweeps {
			fs = append(fs, s.Points[c])
		}
		res, err := Compare(fs, o)
		if err != nil {
			return nil, fmt.Errorf("concurrency %d: %w", c, err)
		}
		r.PerPoint[c] = res
	}
	for _, s := range sweeps {
		r.Sweeps = append(r.Sweeps, s.Dir)
		curves := make([][]float64, len(Metrics))
		for k, m := range Metrics {
			for _, c := range r.Concurrency {
				v := s.Points[c].values(k)
				q := math.NaN()
				if len(v) > 0 {
					q = quantile(sorted(v), m.Quantile)
				}
				curves[k] = append(curves[k], q)
			}
		}
		r.Curves[s.Dir] = curves
	}
	return r, nil
}

// WriteTable writes each concurrency's comparison.
func (r *SweepResult) WriteTable(w io.Writer) {
	for _, c := range r.Concurrency {
		fmt.Fprintf(w, "══ concurrency %d ══\n", c)
		r.PerPoint[c].WriteTable(w)
		fmt.Fprintln(w)
	}
}

// WritePNG overlays every sweep's curve of each metric against
// concurrency, one panel per metric.
func (r *SweepResult) WritePNG(path string) error {
	const cols = 2
	rows := (len(Metrics) + cols - 1) / cols
	plots := make([][]*gplot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*gplot.Plot, cols)
	}
	for k, m := range Metrics {
		p := gplot.New()
		p.Title.Text = m.Name + " (" + m.Unit + ")"
		p.X.Label.Text = "concurrency"
		for si, s := range r.Sweeps {
			var xy plotter.XYs
			for i, c := range r.Concurrency {
				if v := r.Curves[s][k][i]; !math.IsNaN(v) {
					xy = append(xy, plotter.XY{X: float64(c), Y: v})
				}
			}
			if len(xy) == 0 {
				continue
			}
			l, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				return err
			}
			l.Color, pts.Color = colors[si%len(colors)], colors[si%len(colors)]
			p.Add(l, pts)
			name := string(rune('A'+si)) + ": " + filepath.Base(s)
			p.Legend.Add(name, l, pts)
		}
		p.Legend.Top = true
		plots[k/cols][k%cols] = p
	}
	for i := range plots {
		for j := range plots[i] {
			if plots[i][j] == nil {
				plots[i][j] = gplot.New()
			}
		}
	}
	img := newCanvas(12*vg.Inch, vg.Length(rows)*3.2*vg.Inch)
	tiles := drawTiles(img, rows, cols)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(tiles[i][j])
		}
	}
	return savePNG(img, path)
}

var sweepPage = template.Must(template.New("sweep").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>agentperf compare (sweeps)</title>
<style>body{font-family:system-ui,sans-serif;margin:2em;color:#222}pre{background:#f7f7f7;padding:1em;overflow-x:auto}img{max-width:100%}</style>
</head><body><h1>agentperf compare: sweeps</h1>
<p>Baseline A: <code>{{.Baseline}}</code>; each curve is one sweep folder (a point of repeated runs: the statistic over its runs' requests pooled); below, each concurrency's ratios to A with 95% bootstrap intervals, over runs where both points hold repeated runs, else over requests (each table says which).</p>
<img alt="curves overlaid" src="data:image/png;base64,{{.PNG}}">
{{range .Points}}<h2>concurrency {{.C}}</h2><pre>{{.Table}}</pre>{{end}}
</body></html>
`))

// Write writes compare.html (the overlaid curves embedded, and each
// concurrency's table) and compare.png (the curves) into dir.
func (r *SweepResult) Write(dir string) error {
	png := filepath.Join(dir, FilePNG)
	if err := r.WritePNG(png); err != nil {
		return err
	}
	b, err := os.ReadFile(png)
	if err != nil {
		return err
	}
	type pt struct {
		C     int
		Table string
	}
	var pts []pt
	for _, c := range r.Concurrency {
		var sb strings.Builder
		r.PerPoint[c].WriteTable(&sb)
		pts = append(pts, pt{c, sb.String()})
	}
	return atomicfile.Write(filepath.Join(dir, FileHTML), func(w io.Writer) error {
		return sweepPage.Execute(w, struct {
			Baseline string
			PNG      string
			Points   []pt
		}{r.Baseline, base64.StdEncoding.EncodeToString(b), pts})
	})
}
