package metrics

import (
	"math"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// LiveOptions configure a LiveWindow. The zero value is usable.
type LiveOptions struct {
	// Now is the clock of the sliding window (default time.Now).
	Now func() time.Time
	// Window is the sliding window of Snapshot's rates and percentiles
	// (default 10 s, in 10 buckets).
	Window time.Duration
	// Tally, when set, is the run's outcome tally, which whoever produces
	// the records updates (CollectorOptions.Tally): Snapshot's counts and
	// in-flight figure read it, and the window counts nothing itself.
	// nil: the window tallies the records added, and LiveStats.Sent and
	// InFlight are 0.
	Tally *Tally
	// Streamed, when set, returns the output tokens streamed so far,
	// counted as they arrive (replay.Progress.StreamedTokens): the
	// window's output token rate is then its increase over the window,
	// which counts the tokens of requests still in flight when they
	// arrive. nil: the rate sums the output tokens of the requests that
	// completed in the window (each counted at its end), as for a run that
	// does not stream.
	Streamed func() int64
}

// liveBuckets is the number of buckets of the sliding window.
const liveBuckets = 10

// LiveWindow is the sink that keeps the live statistics of a run: the
// run's counts (read from its tally, LiveOptions.Tally, else counted in
// its own), and a sliding window of the successful records (rates, TTFT
// and ITL percentiles from HDR histograms, the theoretical hit rate). The
// window holds one phase: warmup records until StartProfiling, profiling
// records only after it, so a profiling percentile never includes a
// warmup request. It keeps nothing per record. It is safe for concurrent
// use.
type LiveWindow struct {
	opt    LiveOptions
	counts tallyRef

	mu      sync.Mutex
	started time.Time
	// The window's figures. winCount counts records too, but not the
	// run's outcomes (those are the tally's): only the successes of the
	// window's phase that arrived within the window's span, so it is
	// kept apart.
	ttft, itl *hdrhistogram.WindowedHistogram
	sendLate  *hdrhistogram.WindowedHistogram // send time − intended send time
	winCount  [liveBuckets]int64
	winTokens [liveBuckets]float64
	winHit    [liveBuckets]int64 // theoretical hit / total blocks of the window's records
	winBlocks [liveBuckets]int64
	// winStreamed is LiveOptions.Streamed when each bucket became the
	// current one.
	winStreamed [liveBuckets]int64
	winIdx      int
	nextRotate  time.Time
	rotations   int
	// profiling is set by StartProfiling: from then on the window holds
	// profiling records only (it was emptied then), and its span starts at
	// profStart.
	profiling bool
	profStart time.Time
}

var _ Sink = (*LiveWindow)(nil)

// NewLiveWindow returns an empty window; its elapsed time starts now.
func NewLiveWindow(opt LiveOptions) *LiveWindow {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Window <= 0 {
		opt.Window = 10 * time.Second
	}
	l := &LiveWindow{opt: opt, counts: newTallyRef(opt.Tally)}
	now := opt.Now()
	l.started = now
	// Latencies in microseconds, 1 µs .. 1 h, 3 significant figures.
	l.ttft = hdrhistogram.NewWindowed(liveBuckets, 1, 3_600_000_000, 3)
	l.itl = hdrhistogram.NewWindowed(liveBuckets, 1, 3_600_000_000, 3)
	l.sendLate = hdrhistogram.NewWindowed(liveBuckets, 1, 3_600_000_000, 3)
	l.nextRotate = now.Add(l.bucketDur())
	l.winStreamed = [liveBuckets]int64{}
	if opt.Streamed != nil {
		s := opt.Streamed()
		for i := range l.winStreamed {
			l.winStreamed[i] = s
		}
	}
	return l
}

func (l *LiveWindow) bucketDur() time.Duration { return l.opt.Window / liveBuckets }

// Add takes r into the window when it succeeded (and, without a Tally
// given, counts it in its bucket, Record.Bucket). It does not retain r.
func (l *LiveWindow) Add(r *Record) {
	e := newEntry(r)
	l.addEntry(&e)
}

func (l *LiveWindow) addEntry(e *entry) {
	now := e.now
	if now.IsZero() {
		now = l.opt.Now()
	}
	r, v := e.r, &e.v
	l.counts.add(e)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rotate(now)
	switch e.b {
	case BucketOverflow, BucketCancelled, BucketWarmupError, BucketProfilingError:
		return
	case BucketWarmupOK:
		if l.profiling {
			return // counted; the window is profiling's
		}
	}
	if Has(v.TTFT) {
		recordClamped(l.ttft.Current, v.TTFT)
	}
	if Has(v.ITL) {
		recordClamped(l.itl.Current, v.ITL)
	}
	if r.CreditIssuedNs > 0 && r.RequestStartNs > 0 {
		recordClamped(l.sendLate.Current, float64(max(0, r.RequestStartNs-r.CreditIssuedNs))/1e6)
	}
	l.winCount[l.winIdx]++
	if Has(v.OSL) {
		l.winTokens[l.winIdx] += v.OSL
	}
	if r.TotalBlocks > 0 {
		l.winHit[l.winIdx] += int64(r.HitBlocks)
		l.winBlocks[l.winIdx] += int64(r.TotalBlocks)
	}
}

// StartProfiling empties the window: from at on it holds profiling
// records only, and its span starts at at. Warmup records added later are
// counted but stay out of the window. Later calls do nothing.
func (l *LiveWindow) StartProfiling(at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.profiling {
		return
	}
	l.profiling, l.profStart = true, at
	for range liveBuckets {
		l.ttft.Rotate()
		l.itl.Rotate()
		l.sendLate.Rotate()
	}
	l.winCount = [liveBuckets]int64{}
	l.winTokens = [liveBuckets]float64{}
	l.winHit = [liveBuckets]int64{}
	l.winBlocks = [liveBuckets]int64{}
	if l.opt.Streamed != nil {
		s := l.opt.Streamed()
		for i := range l.winStreamed {
			l.winStreamed[i] = s
		}
	}
}

// rotate advances the window to now. l.mu held.
func (l *LiveWindow) rotate(now time.Time) {
	if now.Before(l.nextRotate) {
		return
	}
	bd := l.bucketDur()
	steps := int(now.Sub(l.nextRotate)/bd) + 1
	if steps > liveBuckets {
		steps = liveBuckets
		l.nextRotate = now.Add(bd)
	} else {
		l.nextRotate = l.nextRotate.Add(time.Duration(steps) * bd)
	}
	var streamed int64
	if l.opt.Streamed != nil {
		streamed = l.opt.Streamed()
	}
	for range steps {
		l.ttft.Rotate()
		l.itl.Rotate()
		l.sendLate.Rotate()
		l.winIdx = (l.winIdx + 1) % liveBuckets
		l.winCount[l.winIdx] = 0
		l.winTokens[l.winIdx] = 0
		l.winHit[l.winIdx], l.winBlocks[l.winIdx] = 0, 0
		l.winStreamed[l.winIdx] = streamed
		l.rotations++
	}
}

// LiveStats is a snapshot for the live view. Rates and percentiles cover
// the sliding window (LiveOptions.Window) of successful records; Counts
// cover the whole run (the tally's, LiveOptions.Tally). Percentiles are
// NaN without samples.
type LiveStats struct {
	Elapsed time.Duration
	// Counts are the run's counts: every finished request by phase and
	// outcome, and those sent and in flight (Sent and InFlight are 0
	// without a LiveOptions.Tally).
	Counts
	RequestsPerSec float64
	// OutputTokensPerSec is the output token rate over the window: with
	// LiveOptions.Streamed, the tokens that arrived in it (requests in
	// flight included), else the output tokens of the requests that
	// completed in it.
	OutputTokensPerSec float64
	TTFTP50, TTFTP99   float64 // ms
	ITLP50, ITLP99     float64 // ms
	// SendLateP50 and SendLateP99 are how late the window's requests
	// were sent against their intended send time (RequestStartNs −
	// CreditIssuedNs), in ms: a client that cannot keep its schedule.
	SendLateP50, SendLateP99 float64
	WindowSamples            int
	// TheoreticalHitRate is the prefix-cache hit rate an infinite cache
	// would reach on the window's successful records (Σ hit blocks / Σ
	// blocks); NaN when they carry no block counts.
	TheoreticalHitRate float64
	// Window is the span the rates cover (shorter early in a run, and
	// early in profiling).
	Window time.Duration
	// WindowPhase is the phase of the window's records: PhaseWarmup
	// until profiling starts, PhaseProfiling after.
	WindowPhase Phase
}

// Snapshot returns the live statistics now.
func (l *LiveWindow) Snapshot() LiveStats {
	now := l.opt.Now()
	c := l.counts.t.Counts()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rotate(now)
	s := LiveStats{Elapsed: now.Sub(l.started), Counts: c}
	var n, hit, blocks int64
	var tok float64
	for i := range liveBuckets {
		n += l.winCount[i]
		tok += l.winTokens[i]
		hit += l.winHit[i]
		blocks += l.winBlocks[i]
	}
	s.TheoreticalHitRate = math.NaN()
	if blocks > 0 {
		s.TheoreticalHitRate = float64(hit) / float64(blocks)
	}
	// The window spans the full older buckets plus the current partial
	// one, but never more than the time since start.
	bd := l.bucketDur()
	span := time.Duration(min(l.rotations, liveBuckets-1))*bd + bd - l.nextRotate.Sub(now)
	span = min(span, now.Sub(l.started))
	s.WindowPhase = PhaseWarmup
	if l.profiling {
		s.WindowPhase = PhaseProfiling
		span = min(span, now.Sub(l.profStart))
	}
	s.Window = max(span, 0)
	if l.opt.Streamed != nil {
		// The counter when the window's oldest bucket began.
		oldest := (l.winIdx - min(l.rotations, liveBuckets-1) + liveBuckets) % liveBuckets
		tok = float64(l.opt.Streamed() - l.winStreamed[oldest])
	}
	if span > 0 {
		s.RequestsPerSec = float64(n) / span.Seconds()
		s.OutputTokensPerSec = tok / span.Seconds()
	}
	s.WindowSamples = int(n)
	s.TTFTP50, s.TTFTP99 = hdrPercentiles(l.ttft.Merge())
	s.ITLP50, s.ITLP99 = hdrPercentiles(l.itl.Merge())
	s.SendLateP50, s.SendLateP99 = hdrPercentiles(l.sendLate.Merge())
	return s
}

// recordClamped records ms (as µs) into h, clamped to its range so that
// no sample is dropped.
func recordClamped(h *hdrhistogram.Histogram, ms float64) {
	us := int64(ms * 1000)
	us = max(h.LowestTrackableValue(), min(us, h.HighestTrackableValue()))
	_ = h.RecordValue(us) // in range by construction
}

func hdrPercentiles(h *hdrhistogram.Histogram) (float64, float64) {
	if h.TotalCount() == 0 {
		return math.NaN(), math.NaN()
	}
	return float64(h.ValueAtQuantile(50)) / 1000, float64(h.ValueAtQuantile(99)) / 1000
}
