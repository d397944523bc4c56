package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/analysis/inferencex"
	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/htmlreport"
	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/server/gputelemetry"
)

// TestGPUTelemetryEverySurface runs against the simulator's DCGM page,
// whose schema changes mid-run, and finds the energy and the output
// tokens per joule in every surface: the export, the aggregates'
// metadata, the summary, report.html and the InferenceX JSON's power
// fields; the energy per GPU matches the integral of the served power
// within 1 %.
func TestGPUTelemetryEverySurface(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3 s run")
	}
	t.Parallel()
	var log lockedBuffer
	s := run.NewSpec()
	s.Corpus.Traces = dataset.Synthesize(dataset.SynthOptions{Seed: 1, Traces: 12, MinTurns: 6, MaxTurns: 12, TimeScale: 0.01})
	s.Replay.URL, s.Replay.Models = "sim://?gpu-metrics=dcgm&gpus=2&engines=2&gpu-schema-change-after=2s&decode-base-ms=2", []string{"demo"}
	s.Replay.Concurrency, s.Replay.Seed, s.Replay.Streaming = 8, 7, true
	s.Replay.BenchmarkDuration, s.Replay.TraceIdleGapCap = 3*time.Second, 10*time.Millisecond
	s.GPUTelemetry.Interval = 100 * time.Millisecond
	s.OutputDir, s.NoPlot, s.Log = t.TempDir(), true, &log
	out, err := run.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	dir := out.Dir
	g := out.GPU
	if g == nil {
		t.Fatalf("no GPU result; log:\n%s", log.String())
	}
	if len(g.GPUs) != 2 || g.TotalEnergyJ == nil || g.Efficiency == nil {
		t.Fatalf("GPU result %+v; log:\n%s", g, log.String())
	}
	for _, gpu := range g.GPUs {
		if gpu.EnergySource != gputelemetry.SourceCounter || gpu.PowerIntegralJ == nil {
			t.Fatalf("GPU %s: %+v", gpu.Index, gpu)
		}
		if d := math.Abs(*gpu.EnergyJ-*gpu.PowerIntegralJ) / *gpu.PowerIntegralJ; d > 0.01 {
			t.Errorf("GPU %s: energy %.1f J vs the integral of the served power %.1f J: %.2f%% apart", gpu.Index, *gpu.EnergyJ, *gpu.PowerIntegralJ, 100*d)
		}
	}
	if len(g.SchemaChanges) == 0 || !strings.Contains(strings.Join(g.SchemaChanges, "\n"), "appeared") {
		t.Errorf("schema changes %q: the page changed at 2 s", g.SchemaChanges)
	}
	tpj := g.Efficiency.OutputTokensPerJoule
	if !(tpj > 0) || math.Abs(tpj*g.Efficiency.JoulesPerOutputToken-1) > 1e-9 {
		t.Fatalf("efficiency %+v", g.Efficiency)
	}

	// The export.
	ex, err := gputelemetry.ReadExport(dir)
	if err != nil || ex.Efficiency == nil || ex.Efficiency.OutputTokensPerJoule != tpj || len(ex.Series) != 2 {
		t.Fatalf("export: %v %+v", err, ex)
	}
	// The aggregates.
	agg, err := metrics.ReadAggregateFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(agg.Metadata.Agentperf["gpu_telemetry"])
	var inAgg gputelemetry.Result
	if err := json.Unmarshal(b, &inAgg); err != nil || inAgg.Efficiency == nil || math.Abs(inAgg.Efficiency.OutputTokensPerJoule-tpj) > 1e-9*tpj {
		t.Errorf("metadata.agentperf.gpu_telemetry: %v %s", err, b)
	}
	if len(inAgg.Series) != 0 {
		t.Error("the aggregates carry the series (only the export should)")
	}
	// The summary.
	var sum bytes.Buffer
	out.WriteSummary(&sum)
	if !strings.Contains(sum.String(), "output tokens per joule") || !strings.Contains(sum.String(), "GPU energy over the profiling window") {
		t.Errorf("summary lacks the GPU energy:\n%s", sum.String())
	}
	// report.html.
	page, err := os.ReadFile(filepath.Join(dir, htmlreport.FileName))
	if err != nil || !bytes.Contains(page, []byte("output tokens per joule")) || !bytes.Contains(page, []byte("GPU power (W, per GPU")) {
		t.Errorf("report.html lacks the GPU facts or panel (%v)", err)
	}
	// The InferenceX JSON's power fields.
	folder, err := inferencex.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	env, err := inferencex.LoadEnv(inferencex.MapLookup(map[string]string{"KV_OFFLOADING": "none", "TP": "2", "CONC": "8", "FRAMEWORK": "vllm"}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := folder.InferenceX(inferencex.Options{Schema: inferencex.SchemaV3, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	jb, _ := json.Marshal(res)
	if err := json.Unmarshal(jb, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["power_metric_schema_version"] != 2.0 || doc["power_valid"] != 1.0 {
		t.Fatalf("power fields: version %v valid %v", doc["power_metric_schema_version"], doc["power_valid"])
	}
	for _, k := range []string{"avg_power_w", "p75_power_w", "p75_total_gpu_power_w", "p90_power_w", "p90_total_gpu_power_w",
		"avg_total_gpu_power_w", "total_gpu_energy_j", "joules_per_successful_query", "joules_per_input_token",
		"joules_per_output_token", "joules_per_total_token", "output_tokens_per_joule"} {
		if v, ok := doc[k].(float64); !ok || !(v > 0) {
			t.Errorf("%s = %v", k, doc[k])
		}
	}
	if e := doc["total_gpu_energy_j"].(float64); math.Abs(e-*g.TotalEnergyJ) > 0.001 {
		t.Errorf("total_gpu_energy_j %v, want %v", e, *g.TotalEnergyJ)
	}
}
