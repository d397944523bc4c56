package capacity

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/agentperf/agentperf/metrics"
)

// Defaults of ClientCheck.
const (
	DefaultMaxLatenessP99 = 100 * time.Millisecond
	DefaultMaxCPU         = 0.9
)

// ClientCheck says when a probe measured the client rather than the
// server. The zero value of each field means its default.
type ClientCheck struct {
	// MaxLatenessP99 bounds the p99 of the client's own send lateness
	// (request_start_ns − credit_issued_ns: how long after its intended
	// time a request left). Default DefaultMaxLatenessP99; negative
	// disables the check. Over few requests the p99 is the slowest one, so
	// one late request (a long prompt synthesized on a busy machine) would
	// mark a probe: the bound counts as exceeded only when at least two
	// requests, and more than 1 %, are later than it.
	MaxLatenessP99 time.Duration
	// MaxCPU bounds the process's CPU use over the probe, as a share of
	// GOMAXPROCS (user + system time / wall time / GOMAXPROCS). Default
	// DefaultMaxCPU; negative disables the check. An in-process
	// simulator's CPU counts too: it runs on the same processors.
	MaxCPU float64
}

// CPUUse is the process's CPU time over an interval.
type CPUUse struct {
	CPU, Wall time.Duration
	// Procs is GOMAXPROCS at the end of the interval.
	Procs int
	// OK is false where the platform cannot measure it.
	OK bool
}

// Share is CPU / (Wall · Procs); 0 when not measured.
func (u CPUUse) Share() float64 {
	if !u.OK || u.Wall <= 0 || u.Procs <= 0 {
		return 0
	}
	return u.CPU.Seconds() / u.Wall.Seconds() / float64(u.Procs)
}

// CPUMeter measures the process's CPU use from Start to Stop.
type CPUMeter struct {
	cpu0  time.Duration
	ok    bool
	wall0 time.Time
}

// StartCPU starts a meter.
func StartCPU() *CPUMeter {
	c, ok := processCPU()
	return &CPUMeter{cpu0: c, ok: ok, wall0: time.Now()}
}

// Stop returns the use since Start.
func (m *CPUMeter) Stop() CPUUse {
	c, ok := processCPU()
	return CPUUse{CPU: c - m.cpu0, Wall: time.Since(m.wall0), Procs: runtime.GOMAXPROCS(0), OK: ok && m.ok}
}

// Judge reports whether a probe was client-bound, and why: lateness holds
// the per-request send lateness in ms (slo.Run.Lateness).
func (c ClientCheck) Judge(lateness []float64, cpu CPUUse) (bool, string) {
	maxLate := c.MaxLatenessP99
	if maxLate == 0 {
		maxLate = DefaultMaxLatenessP99
	}
	maxCPU := c.MaxCPU
	if maxCPU == 0 {
		maxCPU = DefaultMaxCPU
	}
	var why []string
	if len(lateness) > 0 && maxLate > 0 {
		s := slices.Clone(lateness)
		slices.Sort(s)
		bound := float64(maxLate) / 1e6
		late := len(s) - sort.SearchFloat64s(s, math.Nextafter(bound, math.Inf(1)))
		if p99 := metrics.Percentile(s, 99); p99 > bound && late >= 2 && float64(late) > 0.01*float64(len(s)) {
			why = append(why, fmt.Sprintf("client send lateness p99 %.1f ms > %s (%d of %d requests later)", p99, maxLate, late, len(s)))
		}
	}
	if sh := cpu.Share(); maxCPU > 0 && sh >= maxCPU {
		why = append(why, fmt.Sprintf("client CPU %.0f%% of %d processor(s) ≥ %.0f%%", 100*sh, cpu.Procs, 100*maxCPU))
	}
	if len(why) == 0 {
		return false, ""
	}
	s := why[0]
	for _, w := range why[1:] {
		s += "; " + w
	}
	return true, s
}
