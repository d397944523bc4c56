package sim

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The GPU load model (Config.GPUMetrics): each GPU's power approaches a
// target set by its engine's batch (running sequences),
//
//	target(b) = GPUIdleWatts + (GPUMaxWatts − GPUIdleWatts)·(1 − e^(−b/8)),
//
// with a first-order lag of GPUPowerTau (board power does not jump), and
// its energy counter is the exact integral of that power curve: the target
// is read at each page request and held until the next, and between two
// requests p(t) = target + (p₀ − target)·e^(−Δt/τ), whose integral is
// target·Δt + (p₀ − target)·τ·(1 − e^(−Δt/τ)). Utilisation, framebuffer,
// clocks and temperature follow the batch and the power.
const (
	GPUIdleWatts = 90.0
	GPUMaxWatts  = 700.0
	GPUPowerTau  = time.Second
	// gpuFBTotalMiB is an H200's framebuffer.
	gpuFBTotalMiB = 143771.0
)

// GPUMetricsPath is the path the simulator serves kind's GPU page at
// ("dcgm" → /dcgm/metrics, "amd" → /amd/metrics).
func GPUMetricsPath(kind string) string { return "/" + kind + "/metrics" }

type gpuState struct {
	power   float64 // W, at last
	energyJ float64 // J since the model's start
	last    time.Time
}

type gpuModel struct {
	mu      sync.Mutex
	start   time.Time
	gpus    []gpuState
	targets []float64
}

func newGPUModel(n int, now time.Time) *gpuModel {
	m := &gpuModel{start: now, gpus: make([]gpuState, n), targets: make([]float64, n)}
	for i := range m.gpus {
		m.gpus[i] = gpuState{power: GPUIdleWatts, last: now}
		m.targets[i] = GPUIdleWatts
	}
	return m
}

// powerTarget is the power a GPU approaches with b sequences running.
func powerTarget(b int) float64 {
	return GPUIdleWatts + (GPUMaxWatts-GPUIdleWatts)*(1-math.Exp(-float64(b)/8))
}

// advance moves every GPU to now under the targets held since the last
// call, then sets the new targets from the batches.
func (m *gpuModel) advance(now time.Time, batch func(gpu int) int) {
	tau := GPUPowerTau.Seconds()
	for i := range m.gpus {
		g := &m.gpus[i]
		dt := now.Sub(g.last).Seconds()
		if dt > 0 {
			tg := m.targets[i]
			decay := math.Exp(-dt / tau)
			g.energyJ += tg*dt + (g.power-tg)*tau*(1-decay)
			g.power = tg + (g.power-tg)*decay
			g.last = now
		}
		m.targets[i] = powerTarget(batch(i))
	}
}

// GPUSample is one simulated GPU's state (for tests).
type GPUSample struct {
	PowerW  float64
	EnergyJ float64
}

// GPUs advances the GPU model to now and returns every GPU's power and
// energy since the model's start; nil without Config.GPUMetrics.
func (s *Server) GPUs() []GPUSample {
	if s.gpus == nil {
		return nil
	}
	m := s.gpus
	m.mu.Lock()
	defer m.mu.Unlock()
	m.advance(time.Now(), s.gpuBatch())
	out := make([]GPUSample, len(m.gpus))
	for i, g := range m.gpus {
		out[i] = GPUSample{g.power, g.energyJ}
	}
	return out
}

func (s *Server) gpuBatch() func(int) int {
	running := make([]int, len(s.engines))
	for i, e := range s.engines {
		running[i] = e.snapshot().running
	}
	return func(gpu int) int { return running[gpu%len(running)] }
}

func (s *Server) serveGPUMetrics(w http.ResponseWriter, r *http.Request) {
	m := s.gpus
	now := time.Now()
	batch := s.gpuBatch()
	kv := make([]float64, len(s.engines))
	for i, e := range s.engines {
		kv[i] = e.snapshot().kvUsage
	}
	m.mu.Lock()
	m.advance(now, batch)
	rows := make([]gpuRow, len(m.gpus))
	for i, g := range m.gpus {
		b := batch(i)
		util := 100 * (1 - math.Exp(-float64(b)/4))
		rows[i] = gpuRow{
			power: g.power, energyJ: g.energyJ, util: util, memUtil: 0.6 * util,
			fbMiB: gpuFBTotalMiB * (0.1 + 0.8*kv[i%len(kv)]),
			smMHz: 1980 - 0.3*(g.power-GPUIdleWatts), memMHz: 3201, temp: 30 + 0.07*g.power,
		}
	}
	m.mu.Unlock()
	changed := s.cfg.GPUSchemaChangeAfter > 0 && now.Sub(m.start) >= s.cfg.GPUSchemaChangeAfter
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if s.cfg.GPUMetrics == "amd" {
		writeAMD(w, rows, changed)
	} else {
		writeDCGM(w, rows, changed)
	}
}

type gpuRow struct {
	power, energyJ, util, memUtil, fbMiB, smMHz, memMHz, temp float64
}

// writeDCGM writes a DCGM exporter page (dcgm-exporter's default
// counters; energy in mJ).
func writeDCGM(w io.Writer, rows []gpuRow, changed bool) {
	var b strings.Builder
	fam := func(name, typ, help string, val func(gpuRow) float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for i, r := range rows {
			fmt.Fprintf(&b, "%s{gpu=\"%d\",UUID=\"GPU-sim-%04d\",pci_bus_id=\"00000000:%02X:00.0\",device=\"nvidia%d\",modelName=\"NVIDIA H200 (agentperf sim)\",Hostname=\"sim\"} %s\n",
				name, i, i, 0x18+i, i, fmtFloat(val(r)))
		}
	}
	power := "DCGM_FI_DEV_POWER_USAGE"
	utilType := "gauge"
	if changed {
		power, utilType = "DCGM_FI_DEV_POWER_USAGE_INSTANT", "counter"
	}
	fam("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", func(r gpuRow) float64 { return math.Round(r.smMHz) })
	if changed {
		fam("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", func(r gpuRow) float64 { return r.memMHz })
	}
	fam("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", func(r gpuRow) float64 { return math.Round(r.temp) })
	fam(power, "gauge", "Power draw (in W).", func(r gpuRow) float64 { return r.power })
	fam("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", func(r gpuRow) float64 { return math.Round(r.energyJ * 1e3) })
	fam("DCGM_FI_DEV_GPU_UTIL", utilType, "GPU utilization (in %).", func(r gpuRow) float64 { return math.Round(r.util) })
	fam("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", func(r gpuRow) float64 { return math.Round(r.memUtil) })
	fam("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", func(r gpuRow) float64 { return math.Round(r.fbMiB) })
	io.WriteString(w, b.String())
}

// writeAMD writes an AMD device-metrics-exporter page (energy in µJ).
func writeAMD(w io.Writer, rows []gpuRow, changed bool) {
	var b strings.Builder
	labels := func(i int) string {
		return fmt.Sprintf("gpu_id=\"%d\",serial_number=\"SIM%05d\",card_model=\"AMD Instinct MI300X (agentperf sim)\",gpu_partition_id=\"0\",hostname=\"sim\"", i, i)
	}
	fam := func(name, typ string, val func(gpuRow) float64) {
		fmt.Fprintf(&b, "# TYPE %s %s\n", name, typ)
		for i, r := range rows {
			fmt.Fprintf(&b, "%s{%s} %s\n", name, labels(i), fmtFloat(val(r)))
		}
	}
	power, utilType := "gpu_package_power", "gauge"
	if changed {
		power, utilType = "amd_gpu_package_power", "counter"
	}
	fam(power, "gauge", func(r gpuRow) float64 { return r.power })
	fam("gpu_energy_consumed", "gauge", func(r gpuRow) float64 { return math.Round(r.energyJ * 1e6) })
	fam("gpu_gfx_activity", utilType, func(r gpuRow) float64 { return math.Round(r.util) })
	fam("gpu_umc_activity", "gauge", func(r gpuRow) float64 { return math.Round(r.memUtil) })
	fam("gpu_used_vram", "gauge", func(r gpuRow) float64 { return math.Round(r.fbMiB) })
	fam("gpu_junction_temperature", "gauge", func(r gpuRow) float64 { return math.Round(r.temp) })
	fmt.Fprintf(&b, "# TYPE gpu_clock gauge\n")
	for i, r := range rows {
		fmt.Fprintf(&b, "gpu_clock{%s,clock_type=\"GPU_CLOCK_TYPE_SYSTEM\",clock_index=\"0\"} %s\n", labels(i), fmtFloat(math.Round(r.smMHz)))
		if changed {
			fmt.Fprintf(&b, "gpu_clock{%s,clock_type=\"GPU_CLOCK_TYPE_MEMORY\",clock_index=\"0\"} %s\n", labels(i), fmtFloat(r.memMHz))
		}
	}
	io.WriteString(w, b.String())
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
