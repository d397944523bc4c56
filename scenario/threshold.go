package scenario

import (
	"fmt"
	"sync"
)

// ThresholdArmFloor is the smallest number of records before
// --failed-request-threshold can fire, whatever the concurrency (§5).
const ThresholdArmFloor = 10

// ValidateThreshold checks a --failed-request-threshold value: a fraction
// in (0, 1], or 0 for "disabled".
func ValidateThreshold(frac float64) error {
	if frac == 0 || (frac > 0 && frac <= 1) {
		return nil
	}
	return fmt.Errorf("--failed-request-threshold %v: want a fraction in (0, 1], e.g. 0.10 for 10%% (omit the flag to disable the check)", frac)
}

// Threshold is the --failed-request-threshold check (§5). Feed it every
// PROFILING record as it is produced: successes and failures. Do not feed
// warmup records (they have their own abort rule) nor context-overflow
// records (excluded from both counts, as InferenceX documents). It is armed
// once total ≥ max(concurrency, 10); from then on, the first record after
// which failed/total is strictly greater than the fraction aborts the run,
// exactly once. A nil *Threshold or a fraction of 0 never fires. Safe for
// concurrent use.
type Threshold struct {
	mu            sync.Mutex
	frac          float64
	floor         int
	total, failed int
	fired         bool
}

// NewThreshold returns the check for fraction frac (0 = disabled) at the
// given concurrency (values below 1 count as 1, so the floor is 10).
func NewThreshold(frac float64, concurrency int) *Threshold {
	return &Threshold{frac: frac, floor: max(concurrency, 1, ThresholdArmFloor)}
}

// Floor returns the number of records at which the check is armed.
func (t *Threshold) Floor() int { return t.floor }

// Observe counts one profiling record. It returns abort=true, with the
// user-facing message, the first time the failure rate exceeds the limit
// once armed; every later call returns false.
func (t *Threshold) Observe(failed bool) (abort bool, msg string) {
	if t == nil {
		return false, ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total++
	if failed {
		t.failed++
	}
	if t.fired || t.frac <= 0 || t.total < t.floor {
		return false, ""
	}
	rate := float64(t.failed) / float64(t.total)
	if !(rate > t.frac) {
		return false, ""
	}
	t.fired = true
	return true, fmt.Sprintf("Run aborted (failed_request_threshold): %d of %d profiling requests failed (%.2f%%), above the limit of %.2f%% (--failed-request-threshold %v, checked once %d records were in). Check the inference server logs for the cause of the failures.",
		t.failed, t.total, 100*rate, 100*t.frac, t.frac, t.floor)
}

// Counts returns the records seen and the failed ones among them.
func (t *Threshold) Counts() (total, failed int) {
	if t == nil {
		return 0, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total, t.failed
}

// Fired reports whether the threshold has aborted the run.
func (t *Threshold) Fired() bool {
	if t == nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fired
}
