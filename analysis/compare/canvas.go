package compare

import (
	"image/color"
	"io"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/agentperf/agentperf/internal/atomicfile"
)

func newCanvas(w, h vg.Length) *vgimg.Canvas {
	return vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110), vgimg.UseBackgroundColor(color.White))
}

// drawTiles splits the canvas into rows × cols tiles.
func drawTiles(img *vgimg.Canvas, rows, cols int) [][]draw.Canvas {
	dc := draw.New(img)
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(12), PadY: vg.Points(12), PadTop: vg.Points(8), PadBottom: vg.Points(8), PadLeft: vg.Points(8), PadRight: vg.Points(8)}
	out := make([][]draw.Canvas, rows)
	for i := range out {
		out[i] = make([]draw.Canvas, cols)
		for j := range out[i] {
			out[i][j] = t.At(dc, j, i)
		}
	}
	return out
}

// savePNG writes the canvas as a PNG, atomically.
func savePNG(img *vgimg.Canvas, path string) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(w)
		return err
	})
}
