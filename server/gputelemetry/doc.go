// Package gputelemetry scrapes GPU exporters during a run — NVIDIA's DCGM
// exporter and AMD's device-metrics-exporter, both Prometheus /metrics
// pages — and measures what the GPUs did over the profiling window:
// energy per GPU and in all, average power, and the energy per output
// token and per request (docs/gpu-telemetry.md).
//
// Every scrape is parsed on its own: a GPU whose series first appears
// mid-run, a family that disappears, is renamed (DCGM's
// DCGM_FI_DEV_POWER_USAGE and DCGM_FI_DEV_POWER_USAGE_INSTANT, AMD's
// gpu_* and amd_gpu_*) or changes its type is taken as it comes, never
// fatal: the collector keeps what each page has (aiperf's collector froze
// its schema at the first scrape and failed on a field that appeared later).
//
// Energy over a window is the GPU's energy counter (DCGM's
// DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION in mJ, AMD's gpu_energy_consumed
// in µJ) read at the window's bounds, linearly interpolated between the
// scrapes around each bound; a GPU without a counter, or whose counter
// does not bracket the window, has its power integrated instead
// (trapezoids, linear interpolation at the bounds: what InferenceX's power
// adapter does with nvidia-smi samples).
package gputelemetry
