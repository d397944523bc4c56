package ui

import (
	"math"
	"strings"
)

// levels are the eighths of a cell, from empty to full.
var levels = []rune(" ▁▂▃▄▅▆▇█")

// columns resamples ps to n columns: with more points than columns each
// column is the mean of its points (NaNs left out), with fewer the series
// is right-aligned and the columns before it are NaN.
func columns(ps []Point, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	if n <= 0 || len(ps) == 0 {
		return out
	}
	if len(ps) <= n {
		off := n - len(ps)
		for i, p := range ps {
			out[off+i] = p.V
		}
		return out
	}
	for c := range n {
		lo, hi := c*len(ps)/n, (c+1)*len(ps)/n
		var s float64
		var k int
		for _, p := range ps[lo:hi] {
			if !math.IsNaN(p.V) {
				s += p.V
				k++
			}
		}
		if k > 0 {
			out[c] = s / float64(k)
		}
	}
	return out
}

// chartRows draws vals as a bar chart of h rows (top row first) scaled to
// 0..top, in eighths of a cell. A NaN column is blank, a zero is "_"; a
// column above top is drawn full.
func chartRows(vals []float64, h int, top float64) []string {
	rows := make([][]rune, h)
	for r := range rows {
		rows[r] = []rune(strings.Repeat(" ", len(vals)))
	}
	if top <= 0 {
		top = 1
	}
	for c, v := range vals {
		if v == 0 {
			rows[h-1][c] = '_' // zero, told apart from "no value"
			continue
		}
		if math.IsNaN(v) || v < 0 {
			continue
		}
		eighths := int(math.Round(math.Min(v/top, 1) * float64(h*8)))
		if eighths == 0 {
			eighths = 1 // a positive value is never invisible
		}
		for r := range h { // r = 0 is the bottom row
			fill := min(8, max(0, eighths-8*r))
			rows[h-1-r][c] = levels[fill]
		}
	}
	out := make([]string, h)
	for r := range rows {
		out[r] = string(rows[r])
	}
	return out
}

// niceTop rounds the largest value up to 1, 2 or 5 × 10^k, for a chart's
// scale.
func niceTop(vals []float64) float64 {
	m := 0.0
	for _, v := range vals {
		if !math.IsNaN(v) {
			m = math.Max(m, v)
		}
	}
	if m <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(m)))
	for _, f := range []float64{1, 2, 5, 10} {
		if m <= f*p {
			return f * p
		}
	}
	return 10 * p
}

// last returns the last non-NaN value of vals, NaN if none.
func last(ps []Point) float64 {
	for i := len(ps) - 1; i >= 0; i-- {
		if !math.IsNaN(ps[i].V) {
			return ps[i].V
		}
	}
	return math.NaN()
}
