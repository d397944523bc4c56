package gputelemetry

import (
	"math"
	"testing"
)

// FuzzParsePage: any page either fails to parse or gives readings of
// known GPUs whose values are finite or NaN, never a panic.
func FuzzParsePage(f *testing.F) {
	f.Add([]byte("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-1\"} 312.5\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\"} 123456789\n"))
	f.Add([]byte("# TYPE gpu_clock gauge\ngpu_clock{gpu_id=\"1\",clock_type=\"GPU_CLOCK_TYPE_SYSTEM\",clock_index=\"0\"} 1500\ngpu_clock{gpu_id=\"1\",clock_type=\"GPU_CLOCK_TYPE_SYSTEM\",clock_index=\"1\"} 1600\n"))
	f.Add([]byte("# TYPE amd_gpu_package_power histogram\namd_gpu_package_power_bucket{le=\"+Inf\"} 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePage("http://x/metrics", b)
		if err != nil {
			return
		}
		for _, r := range p.Readings {
			if r.GPU.Index == "" {
				t.Fatalf("reading without a GPU: %+v", r)
			}
			for _, v := range r.Values {
				if math.IsInf(v, 0) {
					t.Fatalf("infinite value in %+v", r)
				}
			}
		}
	})
}

func TestParsePageClocksAveraged(t *testing.T) {
	t.Parallel()
	p, err := ParsePage("e", []byte("# TYPE gpu_clock gauge\ngpu_clock{gpu_id=\"1\",clock_type=\"GPU_CLOCK_TYPE_SYSTEM\",clock_index=\"0\"} 1500\ngpu_clock{gpu_id=\"1\",clock_type=\"GPU_CLOCK_TYPE_SYSTEM\",clock_index=\"1\"} 1600\n# TYPE DCGM_FI_DEV_POWER_USAGE_INSTANT gauge\nDCGM_FI_DEV_POWER_USAGE_INSTANT{gpu=\"0\"} 5\n# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{gpu=\"0\"} 7\n"))
	if err != nil || len(p.Readings) != 2 {
		t.Fatalf("%+v %v", p, err)
	}
	if v := p.Readings[0].Values[SMClock]; p.Readings[0].GPU.Vendor != AMD || v != 1550 {
		t.Errorf("AMD system clock = %v, want the mean 1550", v)
	}
	if v := p.Readings[1].Values[Power]; v != 7 {
		t.Errorf("DCGM power = %v, want 7 (DCGM_FI_DEV_POWER_USAGE ranks before _INSTANT)", v)
	}
}
