package inferencex

import (
	"cmp"
	"errors"
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

	"github.com/agentperf/agentperf/internal/atomicfile"
)

// ErrNothingToPlot is returned when no run can be placed on the Pareto
// plot.
var ErrNothingToPlot = errors.New("no run to plot")

// ParetoY selects the throughput of the Pareto plot's y axis.
type ParetoY string

const (
	// ParetoTotal is (input + output) tokens/s per GPU, InferenceX's
	// tput_per_gpu (the default).
	ParetoTotal ParetoY = "total"
	// ParetoOutput is output tokens/s per GPU.
	ParetoOutput ParetoY = "output"
)

// ParetoOptions configure WritePareto.
type ParetoOptions struct {
	Y     ParetoY // default ParetoTotal
	Title string  // default "Throughput per GPU vs interactivity"
}

// Pareto figure geometry: 12×7.5 in at 150 dpi.
const (
	paretoW, paretoH = 1800, 1125
	paretoDPI        = 150
)

var paretoColors = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
}

var paretoShapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PyramidGlyph{},
	draw.RingGlyph{}, draw.BoxGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
}

// paretoPoint is one run on the plot.
type paretoPoint struct {
	x, y float64
	conc int
	dir  string // the run's folder, to tell apart runs of one concurrency
	// iv says whether the point has intervals (a repeated run's row:
	// the Student-t intervals of x and y over its runs), [xlo, xhi] and
	// [ylo, yhi].
	iv                 bool
	xlo, xhi, ylo, yhi float64
}

// paretoBars are the interval bars of a group's points that have them.
type paretoBars []paretoPoint

func (b paretoBars) Len() int                    { return len(b) }
func (b paretoBars) XY(i int) (float64, float64) { return b[i].x, b[i].y }

// XError and YError are the distances from the point to its interval's
// ends; the lower end stops at 0 (the axes start there; the figures are
// never negative).
func (b paretoBars) XError(i int) (float64, float64) {
	return b[i].x - max(b[i].xlo, 0), b[i].xhi - b[i].x
}
func (b paretoBars) YError(i int) (float64, float64) {
	return b[i].y - max(b[i].ylo, 0), b[i].yhi - b[i].y
}

// groupName is the legend entry of a row: its configuration, else its
// TP; a repeated run's row (PooledRow) says its point is a mean (one
// group whatever the number of runs, which a convergence stop varies).
func groupName(r *Row) string {
	if r.Runs > 0 {
		return groupOf(r) + pooledGroup + fmt.Sprintf(", bars its %s%% interval over the runs", strconv.FormatFloat(100*r.Level, 'f', -1, 64))
	}
	return groupOf(r)
}

// pooledGroup ends the legend entry of repeated runs' rows, whose points
// are each the mean of a point's runs.
const pooledGroup = ", each point the mean of its repeated runs"

func groupOf(r *Row) string {
	if r.Config != "" {
		if r.TP > 0 {
			return r.Config + " TP" + strconv.Itoa(r.TP)
		}
		return r.Config
	}
	return "TP" + strconv.Itoa(r.TP)
}

// frontier returns the points no other point beats on both axes, by x.
func frontier(pts []paretoPoint) []paretoPoint {
	s := slices.Clone(pts)
	slices.SortFunc(s, func(a, b paretoPoint) int { return cmp.Or(cmp.Compare(b.x, a.x), cmp.Compare(b.y, a.y)) })
	var out []paretoPoint
	best := math.Inf(-1)
	for _, p := range s {
		if p.y > best {
			out = append(out, p)
			best = p.y
		}
	}
	slices.Reverse(out)
	return out
}

// WritePareto draws throughput per GPU against interactivity, one point
// per included run labelled by its concurrency, grouped (colour, marker,
// frontier line) by configuration and TP, as InferenceX's website shows
// a sweep; the legend sits to the right of the axes. Rows that cannot be
// placed (excluded, unknown TP, no ITL) are returned as skipped, with the
// reason.
func WritePareto(t *Table, path string, opt ParetoOptions) (skipped []string, err error) {
	if opt.Y == "" {
		opt.Y = ParetoTotal
	}
	if opt.Title == "" {
		opt.Title = "Throughput per GPU vs interactivity"
	}
	groups, order, skipped := paretoGroups(t, opt.Y)
	if len(order) == 0 {
		return skipped, fmt.Errorf("%w: none of the %d runs has a known TP, successful requests and an inter-token latency", ErrNothingToPlot, len(t.Rows)+len(t.Excluded))
	}
	pl, leg := newParetoPlot(opt)
	xmax, ymax := math.Inf(-1), math.Inf(-1)
	for gi, g := range order {
		x, y, err := addParetoGroup(pl, leg, g, groups[g], gi)
		if err != nil {
			return skipped, err
		}
		xmax, ymax = max(xmax, x), max(ymax, y)
	}
	// Room for the labels right of and above the last points; axes from 0.
	pl.X.Min, pl.Y.Min = 0, 0
	pl.X.Max = xmax * 1.12
	pl.Y.Max = ymax * 1.1
	if pl.X.Max <= 0 {
		pl.X.Max = 1
	}
	if pl.Y.Max <= 0 {
		pl.Y.Max = 1
	}
	return skipped, renderPareto(path, pl, leg)
}

// paretoGroups places the rows of t that can be plotted in their groups
// (configuration and TP, in order of first appearance) and says why each
// other row is skipped.
func paretoGroups(t *Table, axis ParetoY) (groups map[string][]paretoPoint, order, skipped []string) {
	groups = map[string][]paretoPoint{}
	for _, r := range t.Excluded {
		skipped = append(skipped, fmt.Sprintf("%s (%s): not plotted, %s", r.Name(), r.Dir, r.Reason))
	}
	for i := range t.Rows {
		r := &t.Rows[i]
		y := r.TputPerGPU
		if axis == ParetoOutput {
			y = r.OutTputPerGPU
		}
		switch {
		case r.TP <= 0:
			skipped = append(skipped, fmt.Sprintf("%s (%s): not plotted, its TP is unknown (name the folder …tp<N>… or pass --tp)", r.Name(), r.Dir))
			continue
		case math.IsNaN(r.Interactivity) || math.IsNaN(y):
			skipped = append(skipped, fmt.Sprintf("%s (%s): not plotted, no inter-token latency or throughput", r.Name(), r.Dir))
			continue
		}
		g := groupName(r)
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		pt := paretoPoint{x: r.Interactivity, y: y, conc: r.Conc, dir: r.Dir}
		yKey := "tput_per_gpu"
		if axis == ParetoOutput {
			yKey = "output_tput_per_gpu"
		}
		px, okx := r.Pooled["interactivity_tok_s_user"]
		py, oky := r.Pooled[yKey]
		if okx && oky && px.N > 1 && py.N > 1 {
			pt.iv, pt.xlo, pt.xhi, pt.ylo, pt.yhi = true, px.CILow, px.CIHigh, py.CILow, py.CIHigh
		}
		groups[g] = append(groups[g], pt)
	}
	return groups, order, skipped
}

// newParetoPlot returns the empty plot (title, axes, grid) and its legend.
func newParetoPlot(opt ParetoOptions) (*gplot.Plot, *gplot.Legend) {
	pl := gplot.New()
	pl.Title.Text = opt.Title
	pl.Title.TextStyle.Font.Size = vg.Points(15)
	pl.X.Label.Text = "Interactivity (tok/s/user, 1 / median inter-token latency)"
	pl.Y.Label.Text = "Throughput per GPU (tok/s/GPU, input + output)"
	if opt.Y == ParetoOutput {
		pl.Y.Label.Text = "Output throughput per GPU (tok/s/GPU)"
	}
	pl.X.Label.TextStyle.Font.Size = vg.Points(12)
	pl.Y.Label.TextStyle.Font.Size = vg.Points(12)
	pl.X.Tick.Label.Font.Size = vg.Points(10)
	pl.Y.Tick.Label.Font.Size = vg.Points(10)
	pl.X.Tick.Marker = niceTicks{}
	pl.Y.Tick.Marker = niceTicks{}
	pl.Add(plotter.NewGrid())
	leg := gplot.NewLegend()
	leg.TextStyle.Font.Size = vg.Points(11)
	leg.ThumbnailWidth = vg.Points(28)
	leg.Padding = vg.Points(8)
	return pl, &leg
}

// paretoLabels are the points' labels, "c16" by concurrency, unique
// within the group: runs that share a concurrency also carry their
// folder's name ("c16 run-a"), or their position when the names agree too
// ("c16 #2").
func paretoLabels(pts []paretoPoint) []string {
	base := make([]string, len(pts))
	n := map[string]int{}
	for i, p := range pts {
		base[i] = "c" + strconv.Itoa(p.conc)
		if p.conc <= 0 {
			base[i] = "c?"
		}
		n[base[i]]++
	}
	out := slices.Clone(base)
	seen := map[string]int{}
	for i, p := range pts {
		if n[base[i]] > 1 {
			out[i] = base[i] + " " + filepath.Base(p.dir)
		}
		seen[out[i]]++
	}
	k := map[string]int{}
	for i := range out {
		if seen[out[i]] > 1 {
			k[out[i]]++
			out[i] = fmt.Sprintf("%s #%d", out[i], k[out[i]])
		}
	}
	return out
}

// addParetoGroup draws group g (the gi-th): its points labelled by
// concurrency, its frontier, and the sweep in concurrency order; it
// returns the largest x and y drawn.
func addParetoGroup(pl *gplot.Plot, leg *gplot.Legend, g string, pts []paretoPoint, gi int) (xmax, ymax float64, err error) {
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	slices.SortFunc(pts, func(a, b paretoPoint) int { return cmp.Compare(a.x, b.x) })
	col := paretoColors[gi%len(paretoColors)]
	xy := make(plotter.XYs, len(pts))
	lab := plotter.XYLabels{XYs: make(plotter.XYs, len(pts)), Labels: make([]string, len(pts))}
	for i, p := range pts {
		xy[i] = plotter.XY{X: p.x, Y: p.y}
		lab.XYs[i] = xy[i]
		xmax, ymax = max(xmax, p.x), max(ymax, p.y)
	}
	copy(lab.Labels, paretoLabels(pts))
	var bars paretoBars
	for _, p := range pts {
		if p.iv {
			bars = append(bars, p)
			xmax, ymax = max(xmax, p.xhi), max(ymax, p.yhi)
		}
	}
	fr := frontier(pts)
	fxy := make(plotter.XYs, len(fr))
	for i, p := range fr {
		fxy[i] = plotter.XY{X: p.x, Y: p.y}
	}
	line, err := plotter.NewLine(fxy)
	if err != nil {
		return 0, 0, err
	}
	line.Color = col
	line.Width = vg.Points(2)
	// The sweep itself: every point in concurrency order, thin and
	// dashed under the frontier.
	byConc := slices.Clone(pts)
	slices.SortFunc(byConc, func(a, b paretoPoint) int { return cmp.Compare(a.conc, b.conc) })
	sxy := make(plotter.XYs, len(byConc))
	for i, p := range byConc {
		sxy[i] = plotter.XY{X: p.x, Y: p.y}
	}
	sweep, err := plotter.NewLine(sxy)
	if err != nil {
		return 0, 0, err
	}
	sweep.Color = col
	sweep.Width = vg.Points(0.8)
	sweep.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	pl.Add(sweep)
	sc, err := plotter.NewScatter(xy)
	if err != nil {
		return 0, 0, err
	}
	sc.GlyphStyle.Color = col
	sc.GlyphStyle.Radius = vg.Points(4)
	sc.GlyphStyle.Shape = paretoShapes[gi%len(paretoShapes)]
	labels, err := plotter.NewLabels(lab)
	if err != nil {
		return 0, 0, err
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].Font.Size = vg.Points(10)
		labels.TextStyle[i].Color = col
	}
	labels.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(4)}
	pl.Add(line, sc, labels)
	if len(bars) > 0 {
		xb, err := plotter.NewXErrorBars(bars)
		if err != nil {
			return 0, 0, err
		}
		yb, err := plotter.NewYErrorBars(bars)
		if err != nil {
			return 0, 0, err
		}
		xb.Color, yb.Color = col, col
		pl.Add(xb, yb)
	}
	unit := "runs"
	if strings.Contains(g, pooledGroup) {
		unit = "points"
	}
	leg.Add(fmt.Sprintf("%s (%d %s)", g, len(pts), unit), line, sc)
	return xmax, ymax, nil
}

// renderPareto draws pl with its legend and notes in a column to the
// right (so the legend never covers a point) and writes the PNG to path.
func renderPareto(path string, pl *gplot.Plot, leg *gplot.Legend) error {
	img := vgimg.NewWith(vgimg.UseWH(paretoW*vg.Inch/paretoDPI, paretoH*vg.Inch/paretoDPI), vgimg.UseDPI(paretoDPI),
		vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	note := leg.TextStyle
	note.Font.Size = vg.Points(9)
	note.Color = color.RGBA{90, 90, 90, 255}
	note.XAlign, note.YAlign = draw.XLeft, draw.YTop
	notes := []string{"labels: concurrency", "solid: Pareto frontier", "dashed: runs by concurrency"}
	lr := leg.Rectangle(dc)
	lw := lr.Max.X - lr.Min.X
	for _, n := range notes {
		lw = max(lw, note.Width(n))
	}
	lw += vg.Points(24)
	plotArea := draw.Crop(dc, vg.Points(6), -lw, vg.Points(6), -vg.Points(6))
	pl.Draw(plotArea)
	legArea := draw.Crop(dc, dc.Max.X-dc.Min.X-lw+vg.Points(12), 0, 0, -vg.Points(48))
	leg.Top, leg.Left = true, true
	leg.Draw(legArea)
	legRect := leg.Rectangle(legArea)
	yNote := legArea.Max.Y - (legRect.Max.Y - legRect.Min.Y) - vg.Points(14)
	for i, n := range notes {
		legArea.FillText(note, vg.Point{X: legArea.Min.X, Y: yNote - vg.Length(i)*vg.Points(12)}, n)
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
		return err
	})
}

// niceTicks labels about six round values (1, 2, 2.5, 5 × 10^k) with as
// many decimals as the step needs, and puts unlabelled ticks between.
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []gplot.Tick {
	if !(hi > lo) {
		return []gplot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	dec := 0
	if step < 1 {
		dec = int(math.Ceil(-math.Log10(step)))
		if step*math.Pow(10, float64(dec)) != math.Trunc(step*math.Pow(10, float64(dec))) {
			dec++
		}
	}
	var ticks []gplot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		ticks = append(ticks, gplot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', dec, 64)})
		if m := v + step/2; m < hi {
			ticks = append(ticks, gplot.Tick{Value: m})
		}
	}
	return ticks
}
