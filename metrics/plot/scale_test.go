package plot

import (
	"image/color"
	"strings"
	"testing"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// primedRequests is a run whose warmup primers are slow (12–15 s) and
// whose profiling requests are fast (61–270 ms).
func primedRequests() []RequestPoint {
	var rs []RequestPoint
	for i := range 8 {
		st := zeroNs + int64(i)*1e8
		rs = append(rs, RequestPoint{StartNs: st, EndNs: st + 15e9, TTFTms: 12_000 + 400*float64(i), LatencyMs: 15_000, ITLms: 20, OK: true, Phase: "warmup"})
	}
	for i := range 60 {
		st := zeroNs + 20e9 + int64(i)*5e8
		rs = append(rs, RequestPoint{StartNs: st, EndNs: st + 2e9, TTFTms: 61 + float64(i*209/59), LatencyMs: 900 + float64(i), ITLms: 15, OK: true, Phase: "profiling"})
	}
	return rs
}

// TestRequestPanelsScaleToProfiling: the TTFT and latency panels' y range
// comes from the profiling values (61–270 ms), not from the warmup
// primers (12–15 s), which are drawn on the top edge and say so in the
// legend.
func TestRequestPanelsScaleToProfiling(t *testing.T) {
	t.Parallel()
	ps := buildPanels(&Input{Requests: primedRequests()}, zeroNs)
	for _, c := range []struct {
		panel    int
		lo, hi   float64 // the y maximum must lie in [lo, hi]
		clamped  bool
		wantName string
	}{
		{8, 270, 300, true, "warmup (above the profiling scale: on the top edge)"},
		{9, 959, 1100, true, "warmup (above the profiling scale: on the top edge)"},
	} {
		pn := &ps[c.panel]
		pl, legend, err := newPlot(pn, 60)
		if err != nil {
			t.Fatal(err)
		}
		if pl.Y.Min != 0 || pl.Y.Max < c.lo || pl.Y.Max > c.hi {
			t.Errorf("%s: y axis %v..%v, want 0..[%v, %v] from the profiling values", pn.title, pl.Y.Min, pl.Y.Max, c.lo, c.hi)
		}
		var names []string
		for _, l := range legend {
			names = append(names, l.text)
		}
		if !strings.Contains(strings.Join(names, "|"), c.wantName) {
			t.Errorf("%s: legend %q lacks %q", pn.title, names, c.wantName)
		}
	}
	// Without profiling requests the warmup sets the scale.
	var warm []RequestPoint
	for _, r := range primedRequests() {
		if r.Phase == "warmup" {
			warm = append(warm, r)
		}
	}
	pn := buildPanels(&Input{Requests: warm}, zeroNs)[8]
	if pl, _, _ := newPlot(&pn, 60); pl.Y.Max < 14_800 {
		t.Errorf("warmup only: y max %v, want above the slowest primer (14.8 s)", pl.Y.Max)
	}
}

// TestLegendBoxesDoNotIntersect lays out the figure of a busy run (every
// panel with data, the longest legend names) and checks every legend box:
// inside its panel's column, under its data, and clear of every other box.
func TestLegendBoxesDoNotIntersect(t *testing.T) {
	t.Parallel()
	in := Input{Requests: append(primedRequests(), fixtureRequests(400)...), Server: fixtureExport(60)}
	panels := buildPanels(&in, zeroNs)
	plots := make([][]*gplot.Plot, Rows)
	legends := make([][][]legendItem, Rows)
	for r := range Rows {
		plots[r] = make([]*gplot.Plot, Cols)
		legends[r] = make([][]legendItem, Cols)
		for c := range Cols {
			pl, entries, err := newPlot(&panels[r*Cols+c], 120)
			if err != nil {
				t.Fatal(err)
			}
			plots[r][c], legends[r][c] = pl, entries
		}
	}
	img := vgimg.NewWith(vgimg.UseWH(WidthPx*vg.Inch/DPI, HeightPx*vg.Inch/DPI), vgimg.UseDPI(DPI), vgimg.UseBackgroundColor(color.White))
	canvases := panelCanvases(plots, draw.New(img))
	type placed struct {
		panel string
		text  string
		box   vg.Rectangle
	}
	var all []placed
	for r := range Rows {
		for c := range Cols {
			cv := canvases[r][c]
			data := plots[r][c].DataCanvas(cv)
			for i, lb := range legendLayout(cv, legends[r][c]) {
				p := placed{panels[r*Cols+c].title, legends[r][c][i].text, lb.box}
				if lb.box.Min.X < cv.Min.X || lb.box.Max.X > cv.Max.X {
					t.Errorf("%s: legend %q (x %v..%v) leaves the panel's column (%v..%v)", p.panel, p.text, lb.box.Min.X, lb.box.Max.X, cv.Min.X, cv.Max.X)
				}
				if lb.box.Max.Y > data.Min.Y {
					t.Errorf("%s: legend %q reaches into the data area", p.panel, p.text)
				}
				all = append(all, p)
			}
		}
	}
	if len(all) < 20 {
		t.Fatalf("only %d legend entries laid out: the fixture does not fill the panels", len(all))
	}
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			a, b := all[i].box, all[j].box
			if a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y {
				t.Errorf("legend entries intersect: %q (%s) and %q (%s)", all[i].text, all[i].panel, all[j].text, all[j].panel)
			}
		}
	}
	// Every series' legend thumbnail is the series itself (its style), and
	// every right axis has a series read on it.
	for _, pn := range panels {
		if pn.right == nil {
			continue
		}
		n := 0
		for _, s := range pn.series {
			if s.right {
				n++
				if !strings.Contains(s.name, "right axis") {
					t.Errorf("%s: series %q is read on the right axis but its legend does not say so", pn.title, s.name)
				}
			}
		}
		if n == 0 {
			t.Errorf("%s: a right axis without a series", pn.title)
		}
	}
}
