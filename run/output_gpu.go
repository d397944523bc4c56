package run

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentperf/agentperf/internal/atomicfile"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/server/gputelemetry"
)

// gpuExport relates the GPUs' energy to the run's work (the successful
// profiling requests of the summary), writes the GPU telemetry export
// (gputelemetry.FileName) and adds its figures to the aggregates'
// metadata.agentperf.gpu_telemetry. Runs with GPU telemetry only.
type gpuExport struct{}

func (gpuExport) Stage() Stage { return StageAmend }

func (gpuExport) Write(f *Finishing) {
	r := f.Outcome.GPU
	if f.Folder() || r == nil {
		return
	}
	dir, sum := f.Dir, f.Summary
	if sum != nil {
		isl, _ := sum.Scalar("total_isl")
		osl, _ := sum.Scalar("total_osl")
		r.SetWork(sum.RequestCount, int64(isl.Value), int64(osl.Value))
	}
	b, err := r.Encode()
	if err == nil {
		err = atomicfile.WriteBytes(filepath.Join(dir, gputelemetry.FileName), b)
	}
	if err != nil {
		f.WriteProblem(gputelemetry.FileName, err)
		return
	}
	for _, g := range r.GPUs {
		if g.Problem != "" {
			f.Warn(fmt.Sprintf("GPU telemetry: GPU %s at %s has no energy for the profiling window: %s; the totals and the energy per token are left out", g.Index, g.Endpoint, g.Problem))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, metrics.FileAggregateJSON)); err != nil {
		return // the aggregates were not written (reported)
	}
	if err := metrics.SetAgentperf(dir, "gpu_telemetry", r.Summary()); err != nil {
		f.Warn(fmt.Sprintf("GPU telemetry: its figures could not be added to %s: %v (they are in %s)", metrics.FileAggregateJSON, err, gputelemetry.FileName))
	}
}
