package plot_test

import (
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"

	"github.com/agentperf/agentperf/metrics/plot"
)

// Render a figure from per-request points alone: the server panels are
// drawn labelled "no data", and the missing export is reported as a
// warning, never silently.
func ExampleRender() {
	dir, _ := os.MkdirTemp("", "plot")
	defer os.RemoveAll(dir)
	var reqs []plot.RequestPoint
	for i := range 50 {
		start := int64(1_790_000_000e9) + int64(i)*1e8
		reqs = append(reqs, plot.RequestPoint{StartNs: start, EndNs: start + 2e9, TTFTms: 150, LatencyMs: 2000,
			ITLms: 12, OK: true, Phase: "profiling"})
	}
	reqs = append(reqs, plot.RequestPoint{TTFTms: math.NaN(), LatencyMs: math.NaN(), ITLms: math.NaN()}) // a failed request
	path := filepath.Join(dir, plot.FileName)
	warnings, err := plot.Render(plot.Input{Requests: reqs}, path)
	if err != nil {
		panic(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	cfg, _ := png.DecodeConfig(f)
	fmt.Println(cfg.Width, cfg.Height)
	fmt.Println(warnings)
	// Output:
	// 2100 3600
	// [plot: no server metrics export: the server panels are empty]
}
