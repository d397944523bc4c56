package capacity

import (
	"fmt"
	"math"
	"runtime"
	rtmetrics "runtime/metrics"
	"slices"
	"sort"
	"time"

	"github.com/agentperf/agentperf/metrics"
)

// Defaults of ClientCheck.
const (
	DefaultMaxLatenessP99 = 100 * time.Millisecond
	DefaultMaxCPU         = 0.9
	DefaultMaxSchedP99    = 50 * time.Millisecond
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
	// MaxSchedP99 bounds the p99 of the Go scheduler's latency over the
	// probe (runtime/metrics /sched/latencies:seconds: how long runnable
	// goroutines — the lanes, their requests, an in-process simulator's
	// handlers — waited for a processor). It catches a client starved of
	// CPU whether by GOMAXPROCS or by other processes on the machine, when
	// its own CPU share looks low. Default DefaultMaxSchedP99; negative
	// disables the check.
	MaxSchedP99 time.Duration
}

// CPUUse is the process's CPU time over an interval.
type CPUUse struct {
	CPU, Wall time.Duration
	// Procs is GOMAXPROCS at the end of the interval.
	Procs int
	// OK is false where the platform cannot measure it.
	OK bool
	// SchedP99 is the p99 of the Go scheduler latency over the interval
	// (an upper bucket bound); SchedOK is false when it is not known.
	SchedP99 time.Duration
	SchedOK  bool
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
	cpu0   time.Duration
	ok     bool
	wall0  time.Time
	sched0 *rtmetrics.Float64Histogram
}

const schedMetric = "/sched/latencies:seconds"

func schedHist() *rtmetrics.Float64Histogram {
	s := []rtmetrics.Sample{{Name: schedMetric}}
	rtmetrics.Read(s)
	if s[0].Value.Kind() != rtmetrics.KindFloat64Histogram {
		return nil
	}
	return s[0].Value.Float64Histogram()
}

// StartCPU starts a meter.
func StartCPU() *CPUMeter {
	c, ok := processCPU()
	return &CPUMeter{cpu0: c, ok: ok, wall0: time.Now(), sched0: schedHist()}
}

// Stop returns the use since Start.
func (m *CPUMeter) Stop() CPUUse {
	c, ok := processCPU()
	u := CPUUse{CPU: c - m.cpu0, Wall: time.Since(m.wall0), Procs: runtime.GOMAXPROCS(0), OK: ok && m.ok}
	if h := schedHist(); h != nil && m.sched0 != nil && len(h.Counts) == len(m.sched0.Counts) {
		u.SchedP99, u.SchedOK = histP99(h, m.sched0)
	}
	return u
}

// histP99 is the p99 of the observations added between h0 and h: the
// upper bound of the bucket holding it.
func histP99(h, h0 *rtmetrics.Float64Histogram) (time.Duration, bool) {
	var total uint64
	for i := range h.Counts {
		total += h.Counts[i] - h0.Counts[i]
	}
	if total == 0 {
		return 0, false
	}
	need := uint64(math.Ceil(0.99 * float64(total)))
	var cum uint64
	for i := range h.Counts {
		cum += h.Counts[i] - h0.Counts[i]
		if cum >= need {
			ub := h.Buckets[i+1]
			if math.IsInf(ub, 1) {
				ub = h.Buckets[i]
			}
			return time.Duration(ub * float64(time.Second)), true
		}
	}
	return 0, false
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
	maxSched := c.MaxSchedP99
	if maxSched == 0 {
		maxSched = DefaultMaxSchedP99
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
	if maxSched > 0 && cpu.SchedOK && cpu.SchedP99 > maxSched {
		why = append(why, fmt.Sprintf("Go scheduler latency p99 %s > %s (goroutines waited that long for a processor)", cpu.SchedP99.Round(time.Millisecond), maxSched))
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
