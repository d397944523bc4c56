package gputelemetry

import "strings"

// Field is one per-GPU quantity the collector keeps.
type Field int

// The fields, in the order of the export's columns.
const (
	// Power is the board power draw in watts.
	Power Field = iota
	// Energy is the energy counter in joules (since boot or driver load;
	// only its differences mean anything).
	Energy
	// GPUUtil is the GPU (graphics engine) utilisation in percent.
	GPUUtil
	// MemUtil is the memory (copy engine, UMC) utilisation in percent.
	MemUtil
	// FBUsed is the framebuffer (VRAM) in use in MiB.
	FBUsed
	// SMClock is the SM (AMD: system/gfx) clock in MHz.
	SMClock
	// MemClock is the memory clock in MHz.
	MemClock
	// Temp is the GPU temperature in °C (DCGM's GPU temperature, AMD's
	// junction temperature).
	Temp
	numFields
)

// fieldNames are the fields' names in the export (unit suffixed).
var fieldNames = [numFields]string{"power_w", "energy_j", "gpu_util_pct", "mem_util_pct", "fb_used_mib", "sm_clock_mhz", "mem_clock_mhz", "temp_c"}

// String returns the field's export name ("power_w").
func (f Field) String() string {
	if f < 0 || f >= numFields {
		return "unknown"
	}
	return fieldNames[f]
}

// Vendor names the exporter a series came from.
type Vendor string

// The exporters understood.
const (
	NVIDIA Vendor = "nvidia-dcgm"
	AMD    Vendor = "amd-device-metrics"
)

// source maps one exporter metric family to a field.
type source struct {
	vendor Vendor
	field  Field
	// scale converts the exported unit to the field's (mJ → J: 1e-3).
	scale float64
	// rank orders the families that feed one field: on one page the
	// lowest rank present wins (a renamed family and its old name).
	rank int
	// labelName/labelValue, when set, select the series of the family
	// that feed the field (AMD's gpu_clock{clock_type=...}).
	labelName, labelValue string
}

// sources are the families read, by name. AMD's exporter names its
// families gpu_*; deployments that prefix them (amd_gpu_*) are matched
// with the prefix removed (see lookup).
var sources = map[string][]source{
	// NVIDIA DCGM exporter (dcgm-exporter's default counters CSV).
	"DCGM_FI_DEV_POWER_USAGE":              {{vendor: NVIDIA, field: Power, scale: 1}},
	"DCGM_FI_DEV_POWER_USAGE_INSTANT":      {{vendor: NVIDIA, field: Power, scale: 1, rank: 1}},
	"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": {{vendor: NVIDIA, field: Energy, scale: 1e-3}}, // mJ
	"DCGM_FI_DEV_GPU_UTIL":                 {{vendor: NVIDIA, field: GPUUtil, scale: 1}},
	"DCGM_FI_DEV_MEM_COPY_UTIL":            {{vendor: NVIDIA, field: MemUtil, scale: 1}},
	"DCGM_FI_DEV_FB_USED":                  {{vendor: NVIDIA, field: FBUsed, scale: 1}}, // MiB
	"DCGM_FI_DEV_SM_CLOCK":                 {{vendor: NVIDIA, field: SMClock, scale: 1}},
	"DCGM_FI_DEV_MEM_CLOCK":                {{vendor: NVIDIA, field: MemClock, scale: 1}},
	"DCGM_FI_DEV_GPU_TEMP":                 {{vendor: NVIDIA, field: Temp, scale: 1}},
	// AMD device-metrics-exporter.
	"gpu_package_power":         {{vendor: AMD, field: Power, scale: 1}},
	"gpu_power_usage":           {{vendor: AMD, field: Power, scale: 1, rank: 1}},
	"gpu_average_package_power": {{vendor: AMD, field: Power, scale: 1, rank: 2}},
	"gpu_energy_consumed":       {{vendor: AMD, field: Energy, scale: 1e-6}}, // µJ
	"gpu_gfx_activity":          {{vendor: AMD, field: GPUUtil, scale: 1}},
	"gpu_umc_activity":          {{vendor: AMD, field: MemUtil, scale: 1}},
	"gpu_used_vram":             {{vendor: AMD, field: FBUsed, scale: 1}}, // "MB" in AMD's table: MiB, as amd-smi reports VRAM
	"gpu_clock": {
		{vendor: AMD, field: SMClock, scale: 1, labelName: "clock_type", labelValue: "GPU_CLOCK_TYPE_SYSTEM"},
		{vendor: AMD, field: MemClock, scale: 1, labelName: "clock_type", labelValue: "GPU_CLOCK_TYPE_MEMORY"},
	},
	"gpu_junction_temperature": {{vendor: AMD, field: Temp, scale: 1}},
	"gpu_edge_temperature":     {{vendor: AMD, field: Temp, scale: 1, rank: 1}},
}

// lookup returns the sources of a family name.
func lookup(name string) []source {
	if s, ok := sources[name]; ok {
		return s
	}
	if rest, ok := strings.CutPrefix(name, "amd_"); ok {
		return sources[rest]
	}
	return nil
}

// gpuLabels are the labels that identify a GPU on each exporter's page.
var gpuLabels = map[Vendor]struct{ index, uuid, model, partition string }{
	NVIDIA: {index: "gpu", uuid: "UUID", model: "modelName"},
	AMD:    {index: "gpu_id", uuid: "serial_number", model: "card_model", partition: "gpu_partition_id"},
}
