package plot

import (
	"fmt"
	"image/color"
	"math"
)

// FigureData is the figure as data: the same 12 panels and series Render
// draws, for other renderers (the interactive HTML report).
type FigureData struct {
	// ZeroNs is the time zero (Unix ns); x values are seconds since it.
	ZeroNs int64
	// ProfilingStart is the x where profiling starts (valid when
	// HasProfilingStart).
	ProfilingStart    float64
	HasProfilingStart bool
	// Panels are the 6×2 panels, row-major.
	Panels []PanelData
}

// PanelData is one panel.
type PanelData struct {
	Title, YLabel string
	// Percent is set for percentage axes, which end at 100.
	Percent bool
	// Note is an extra line about the panel (may be empty).
	Note string
	// YMax, when positive, is the top of the y axis: the profiling values
	// set it, and points above it (warmup) are drawn on it.
	YMax float64
	// RightLabel, when set, is the label of a second y axis on the right
	// for the series marked Right.
	RightLabel string
	Series     []SeriesData
}

// Series styles.
const (
	StyleLine   = "line"
	StyleDashed = "dashed"
	StyleFill   = "fill"   // area down to zero, drawn in order (stacked panels draw the top layer first)
	StylePoints = "points" // scatter
	StyleRings  = "rings"  // hollow markers of partial slices
)

// SeriesData is one series. A line in several parts has its parts
// separated by a point whose Y is NaN (no line is drawn across it).
type SeriesData struct {
	Name  string
	X, Y  []float64
	Style string
	Color string // #rrggbb
	// Right marks a series read on the panel's right axis; its Y values
	// are in that axis' unit.
	Right bool
}

// Figure returns the figure's data for in.
func Figure(in Input) FigureData {
	zero := zeroOf(&in)
	fd := FigureData{ZeroNs: zero}
	fd.ProfilingStart, fd.HasProfilingStart = profilingStart(&in, zero)
	for _, p := range buildPanels(&in, zero) {
		pd := PanelData{Title: p.title, YLabel: p.ylabel, Percent: p.percent, Note: p.note}
		top := p.top()
		if !math.IsNaN(top) {
			pd.YMax = top
		}
		factor := 1.0
		if p.right != nil {
			pd.RightLabel, factor = p.right.label, p.right.factor
		}
		for _, s := range p.series {
			if !math.IsNaN(top) {
				s = s.clamped(top)
			}
			sd := SeriesData{Name: s.name, Color: hex(s.col), Style: StyleLine, Right: s.right && p.right != nil}
			switch {
			case s.ring:
				sd.Style = StyleRings
			case s.scatter:
				sd.Style = StylePoints
			case s.fill:
				sd.Style = StyleFill
			case s.dashed:
				sd.Style = StyleDashed
			}
			parts := s.parts
			if parts == nil {
				parts = [][]point{s.pts}
			}
			for i, part := range parts {
				if i > 0 && len(sd.X) > 0 && len(part) > 0 {
					sd.X = append(sd.X, (sd.X[len(sd.X)-1]+part[0].x)/2)
					sd.Y = append(sd.Y, math.NaN())
				}
				for _, q := range part {
					y := q.y
					if sd.Right {
						y /= factor // in the right axis' unit
					}
					sd.X = append(sd.X, q.x)
					sd.Y = append(sd.Y, y)
				}
			}
			pd.Series = append(pd.Series, sd)
		}
		fd.Panels = append(fd.Panels, pd)
	}
	return fd
}

func hex(c color.Color) string {
	if c == nil {
		return "#000000"
	}
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}
