package timing

import (
	"math"
	"time"

	"github.com/agentperf/agentperf/dataset"
)

// DefaultDelayCap is the legacy scenario's inter-turn delay cap (§1.9).
const DefaultDelayCap = 60 * time.Second

// TraceInfo is what the scheduler needs to know about one trace.
type TraceInfo struct {
	// ID is the trace id (the cache-bust marker input and the recycle-pass
	// key).
	ID string
	// Turns is the number of parent requests.
	Turns int
	// Delays[k] is the recorded gap before turn k, already clamped to the
	// cap; Delays[0] is 0. len(Delays) == Turns.
	Delays []time.Duration
}

// FromTrace builds the scheduler's view of tr with the legacy delay rule of
// §1.9: the gap before turn k is think_time when present (not NaN), else
// t_k − t_{k−1}; it is clamped to ≥ 0 and, when cap > 0, to ≤ cap (pass
// DefaultDelayCap for the scenario's 60 s; 0 disables the cap). A gap whose
// inputs are both missing (NaN) is 0. Only parent requests become turns;
// subagent entries are ignored here (the caller counts them).
func FromTrace(tr *dataset.Trace, cap time.Duration) TraceInfo {
	n := len(tr.Requests)
	info := TraceInfo{ID: tr.ID, Turns: n, Delays: make([]time.Duration, n)}
	for k := 1; k < n; k++ {
		sec := tr.Requests[k].ThinkTime
		if math.IsNaN(sec) {
			sec = tr.Requests[k].T - tr.Requests[k-1].T
		}
		info.Delays[k] = clampDelay(sec, cap)
	}
	return info
}

// clampDelay converts a gap in seconds to a Duration in [0, cap] (no upper
// bound when cap ≤ 0 other than the largest Duration). NaN gives 0.
func clampDelay(sec float64, cap time.Duration) time.Duration {
	if math.IsNaN(sec) || sec <= 0 {
		return 0
	}
	limit := time.Duration(math.MaxInt64)
	if cap > 0 {
		limit = cap
	}
	if sec >= limit.Seconds() {
		return limit
	}
	return min(time.Duration(math.Round(sec*1e9)), limit)
}
