package scenario

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/agentperf/agentperf/metrics"
)

// ThresholdAlpha bounds the probability that --failed-request-threshold
// aborts a run whose server fails at most at the limit: over the whole run,
// however long, that chance is at most 0.1 % (docs/failed-request-threshold.md).
const ThresholdAlpha = 1e-3

// Threshold is the --failed-request-threshold check: it aborts a run once
// the failure rate of its profiling requests is, with confidence
// 1 − ThresholdAlpha, above the limit. Feed it PROFILING requests only:
// Sent when a request is sent, Done when it ends, with its record's bucket
// (warmup requests have their own rule). A request of
// metrics.BucketProfilingError failed; one of metrics.BucketOverflow (a
// context overflow) is left out of both counts; one of
// metrics.BucketCancelled (the run itself cancelled it, as it was
// stopping) and any other counts as not failed. It is the engine's
// replay.Threshold.
//
// The rate is judged in the order requests were sent, not the order they
// finished, so fast failures cannot bias it: for every prefix of the
// requests sent (the first n), the failures known so far among them are
// counted against all n, where a request that has not finished yet counts
// as not failed (and a context overflow that has finished is left out).
// That count can only grow to the prefix's final count, and the first n
// requests sent are a sample of the server's behaviour whatever their
// durations, so an error that returns in milliseconds while successes
// stream for seconds weighs exactly as it would in the end. A prefix
// aborts when its failure fraction p̂ is above the limit f and
// n·KL(p̂ ‖ f) > ln(n(n+1)/ThresholdAlpha) (a Chernoff bound, with a union
// over all prefixes and all moments). See docs/failed-request-threshold.md
// for the reasoning and how this differs from aiperf.
//
// Its totals (Counts, and the abort message's count of the requests that
// finished so far) are the profiling counts of the run's tally when it was
// given one (NewThreshold), which whoever feeds it updates; it keeps no
// count of its own then.
//
// A nil *Threshold, a fraction of 0 and a fraction of 1 never fire. Safe
// for concurrent use; it fires at most once.
type Threshold struct {
	mu   sync.Mutex
	frac float64
	// sent is the last sequence number handed out (1..sent): the send
	// order the rule judges, not an outcome count (the tally's).
	sent int
	// counts is the run's tally (own: the threshold's, counted in Done).
	counts *metrics.Tally
	own    bool

	// failSeqs and overSeqs are the sorted sequence numbers of the failed
	// and the overflowed requests that have finished.
	failSeqs, overSeqs []int
	// lo is the longest prefix in which every request has finished;
	// doneAbove[i] says whether request lo+1+i has.
	lo        int
	doneAbove []bool

	fired bool
}

// NewThreshold returns the check for fraction frac (0 = disabled). counts
// is the run's tally (replay.Progress's), which the engine updates with a
// request's record before it calls Done: the threshold's totals are read
// from its profiling counts. nil: the threshold counts the outcomes given
// to Done itself.
func NewThreshold(frac float64, counts *metrics.Tally) *Threshold {
	t := &Threshold{frac: frac, counts: counts}
	if counts == nil {
		t.counts, t.own = new(metrics.Tally), true
	}
	return t
}

func (t *Threshold) active() bool { return t != nil && t.frac > 0 && t.frac < 1 }

// Sent registers a profiling request as sent and returns its sequence
// number, to pass to Done when it ends. Call it in the order requests go
// out (right before writing each one).
func (t *Threshold) Sent() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sent++
	return t.sent
}

// Done records how request seq ended: b is its record's bucket. It
// returns abort=true, with the user-facing message, the first time the
// failure rate is confidently above the limit; every later call returns
// false. A seq of 0, one never handed out by Sent, or one already done is
// ignored.
func (t *Threshold) Done(seq int, b metrics.Bucket) (abort bool, msg string) {
	if t == nil {
		return false, ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if seq <= t.lo || seq > t.sent || (seq-t.lo-1 < len(t.doneAbove) && t.doneAbove[seq-t.lo-1]) {
		return false, ""
	}
	t.markDone(seq)
	switch b {
	case metrics.BucketProfilingError:
		t.failSeqs = insertSorted(t.failSeqs, seq)
	case metrics.BucketOverflow:
		t.overSeqs = insertSorted(t.overSeqs, seq)
	case metrics.BucketCancelled:
	default:
		b = metrics.BucketProfilingOK // not failed
	}
	if t.own {
		t.counts.Count(b, metrics.PhaseProfiling, false)
	}
	if t.fired || !t.active() || (b != metrics.BucketProfilingError && b != metrics.BucketOverflow) {
		return false, "" // a success or a cancellation never raises a prefix's rate
	}
	// Only prefixes n ≥ seq changed, and among those the bound is largest
	// where a failure ends the prefix: between two failures the count stays
	// and n grows. So the candidates are the finished failures at or after
	// seq (usually only the one that just finished).
	for i := sort.SearchInts(t.failSeqs, seq); i < len(t.failSeqs); i++ {
		n := t.failSeqs[i]
		f := i + 1
		judged := n - sort.SearchInts(t.overSeqs, n+1)
		if exceeds(f, judged, n, t.frac) {
			t.fired = true
			return true, t.message(n, f, judged)
		}
	}
	return false, ""
}

// ExceedsThreshold reports whether failed failures among judged finished
// requests (context overflows and cancellations not counted) put the
// failure rate above frac with the confidence Threshold uses (the same
// bound, with judged as the number of requests considered). It judges
// counts totalled over several processes, such as the shards of one run;
// a frac of 0 or 1 never fires.
func ExceedsThreshold(failed, judged int, frac float64) bool {
	return frac > 0 && frac < 1 && exceeds(failed, judged, judged, frac)
}

// exceeds reports whether f failures among judged requests (the first n
// sent, less the overflows among them) put the rate above frac with
// confidence 1 − ThresholdAlpha over all prefixes.
func exceeds(f, judged, n int, frac float64) bool {
	if judged <= 0 {
		return false
	}
	p := float64(f) / float64(judged)
	if !(p > frac) {
		return false
	}
	return float64(judged)*bernoulliKL(p, frac) > math.Log(float64(n)*float64(n+1)/ThresholdAlpha)
}

// bernoulliKL is the Kullback-Leibler divergence of Bernoulli(q) from
// Bernoulli(p), in nats (p in [0, 1], q in (0, 1)).
func bernoulliKL(p, q float64) float64 {
	kl := 0.0
	if p > 0 {
		kl += p * math.Log(p/q)
	}
	if p < 1 {
		kl += (1 - p) * math.Log((1-p)/(1-q))
	}
	return kl
}

func (t *Threshold) message(n, f, judged int) string {
	unfinished := n - t.finishedUpTo(n)
	var pending string
	if unfinished > 0 {
		pending = fmt.Sprintf("; %d of them had not finished and count as successes", unfinished)
	}
	var over string
	if judged < n {
		over = fmt.Sprintf(" (%d context overflows among them are left out)", n-judged)
	}
	total, failed := t.totals()
	return fmt.Sprintf("Run aborted (failed_request_threshold): %d of the first %d profiling requests sent failed (%.2f%%)%s%s, so the failure rate is above the limit of %.2f%% (--failed-request-threshold %v) with %.1f%% confidence; %d of the %d profiling requests that finished so far failed. Check the inference server logs for the cause of the failures.",
		f, judged, 100*float64(f)/float64(judged), over, pending, 100*t.frac, t.frac, 100*(1-ThresholdAlpha), failed, total)
}

// markDone records that seq finished and advances lo over the finished
// prefix.
func (t *Threshold) markDone(seq int) {
	i := seq - t.lo - 1
	for len(t.doneAbove) <= i {
		t.doneAbove = append(t.doneAbove, false)
	}
	t.doneAbove[i] = true
	k := 0
	for k < len(t.doneAbove) && t.doneAbove[k] {
		k++
	}
	if k > 0 {
		t.lo += k
		t.doneAbove = t.doneAbove[k:]
	}
}

// finishedUpTo counts the finished requests among the first n sent.
func (t *Threshold) finishedUpTo(n int) int {
	if n <= t.lo {
		return n
	}
	c := t.lo
	for i := 0; i < n-t.lo && i < len(t.doneAbove); i++ {
		if t.doneAbove[i] {
			c++
		}
	}
	return c
}

func insertSorted(s []int, v int) []int {
	i := sort.SearchInts(s, v)
	s = append(s, 0)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

// Counts returns the profiling requests that finished, not counting
// context overflows and cancellations, and the failed ones among them
// (the tally's, NewThreshold).
func (t *Threshold) Counts() (total, failed int) {
	if t == nil {
		return 0, 0
	}
	return t.totals()
}

// totals are Counts of t, not nil.
func (t *Threshold) totals() (total, failed int) {
	p := t.counts.Counts().Profiling
	return p.Judged(), p.Errors
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
