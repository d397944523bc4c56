package plot

import (
	"math"
	"strconv"

	gplot "gonum.org/v1/plot"
)

// compactTicks are gonum's default tick positions with short labels:
// 1.2M, 250k, 0.5, 40 instead of 1200000.00.
type compactTicks struct{}

func (compactTicks) Ticks(lo, hi float64) []gplot.Tick {
	ts := gplot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = compact(ts[i].Value)
		}
	}
	return ts
}

// compact formats v with at most three significant digits and a k/M/G
// suffix for large magnitudes.
func compact(v float64) string {
	a := math.Abs(v)
	for _, u := range []struct {
		div float64
		suf string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if a >= u.div {
			return strconv.FormatFloat(v/u.div, 'g', 3, 64) + u.suf
		}
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
