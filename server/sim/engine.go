package sim

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Sequence states.
const (
	seqWaiting = iota
	seqRunning
	seqFinished
)

// seq is one request inside an engine. Fields above the line are set
// before submit and read-only afterwards; engine-owned fields are guarded
// by the engine's mutex; the atomics are shared with the handler.
type seq struct {
	promptLen int
	hashes    []uint64 // chained hashes of the full prompt blocks
	maxOut    int      // tokens to generate (≥ 1)
	arrival   time.Time
	notify    chan struct{} // cap 1; a pending signal means "look again"
	chunk     int           // tokens per chunk (notification granularity)

	// engine-owned
	state         int
	blocks        []*block
	unhashed      int
	prefillTarget int // tokens whose KV must be computed before decoding
	computed      int
	planPrefill   int
	planDecode    bool
	gen           int
	notified      int
	admittedOnce  bool
	firstTok      time.Time
	lastTok       time.Time

	// shared with the handler
	generated atomic.Int64
	cached    atomic.Int64 // prompt tokens served from cache (GPU + offload)
	reason    atomic.Int32 // finishStop or finishLength, valid once done
	done      atomic.Bool
}

func (s *seq) signal() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// engine is one data-parallel engine: its own KV cache, queue, scheduler
// goroutine and metric series.
type engine struct {
	idx  int
	cfg  *Config
	step func(nDecode, ctxTokens, prefillTokens int) time.Duration

	mu      sync.Mutex
	kv      *kvCache
	waiting []*seq // FIFO; preempted sequences go back to the front
	running []*seq
	zlRun   int // running requests in zero-latency mode
	m       engineMetrics

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

func newEngine(idx int, cfg *Config) *engine {
	e := &engine{
		idx:  idx,
		cfg:  cfg,
		kv:   newKVCache(cfg.KVCapacityTokens/cfg.BlockSize, cfg.OffloadCapacityTokens/cfg.BlockSize),
		m:    newEngineMetrics(),
		wake: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	e.step = func(nDecode, ctxTokens, prefillTokens int) time.Duration {
		ms := max(cfg.DecodeBaseMs, 0) + max(cfg.DecodePerSeqMs, 0)*float64(nDecode) +
			max(cfg.DecodeMsPer1kContext, 0)*float64(ctxTokens)/1000 +
			1000*float64(prefillTokens)/cfg.PrefillTokensPerSec
		return time.Duration(ms * float64(time.Millisecond))
	}
	return e
}

// submit queues s; the scheduler picks it up at its next step.
func (e *engine) submit(s *seq) {
	e.mu.Lock()
	s.state = seqWaiting
	s.prefillTarget = s.promptLen
	e.waiting = append(e.waiting, s)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// abort removes s if it has not finished (client gone).
func (e *engine) abort(s *seq) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch s.state {
	case seqWaiting:
		if i := slices.Index(e.waiting, s); i >= 0 {
			e.waiting = slices.Delete(e.waiting, i, i+1)
		}
	case seqRunning:
		if i := slices.Index(e.running, s); i >= 0 {
			e.running = slices.Delete(e.running, i, i+1)
		}
		e.kv.release(s.blocks, s.unhashed)
		s.blocks, s.unhashed = nil, 0
	default:
		return
	}
	s.state = seqFinished
	e.m.success[finishAbort]++
}

// run is the scheduler loop: plan a step, sleep its duration, apply it.
func (e *engine) run() {
	defer close(e.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		e.mu.Lock()
		d, busy := e.planLocked()
		e.mu.Unlock()
		if !busy {
			select {
			case <-e.wake:
				continue
			case <-e.stop:
				return
			}
		}
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-e.stop:
			timer.Stop()
			return
		}
		now := time.Now()
		e.mu.Lock()
		e.applyLocked(now)
		e.mu.Unlock()
	}
}

// heldBlocks is the number of GPU blocks s holds.
func (s *seq) heldBlocks() int { return len(s.blocks) + s.unhashed }

// planLocked schedules one step like vLLM's V1 scheduler: running decodes
// first (growing blocks, preempting the newest running sequence when the
// KV is full), then chunked prefill of running sequences, then admission
// from the waiting queue while the token budget and max-num-seqs allow.
func (e *engine) planLocked() (time.Duration, bool) {
	bs := e.cfg.BlockSize
	budget := e.cfg.MaxNumBatchedTokens
	nDecode, ctxTokens, prefill := 0, 0, 0
	for i := 0; i < len(e.running) && budget > 0; i++ {
		s := e.running[i]
		s.planPrefill, s.planDecode = 0, false
		if s.computed < s.prefillTarget {
			continue
		}
		need := ceilDiv(s.promptLen+s.gen, bs)
		preemptedSelf := false
		for s.heldBlocks() < need {
			if e.kv.grow() {
				s.unhashed++
				continue
			}
			victim := e.running[len(e.running)-1]
			e.preemptLocked(victim)
			if victim == s {
				preemptedSelf = true
				break
			}
		}
		if preemptedSelf {
			break
		}
		s.planDecode = true
		nDecode++
		ctxTokens += s.promptLen + s.gen
		budget--
	}
	for _, s := range e.running {
		if budget == 0 {
			break
		}
		if s.computed < s.prefillTarget && !s.planDecode {
			c := min(s.prefillTarget-s.computed, budget)
			s.planPrefill = c
			budget -= c
			prefill += c
		}
	}
	for len(e.waiting) > 0 && len(e.running) < e.cfg.MaxNumSeqs && budget > 0 {
		s := e.waiting[0]
		if !e.admitLocked(s) {
			break
		}
		e.waiting = e.waiting[1:]
		e.running = append(e.running, s)
		c := min(s.prefillTarget-s.computed, budget)
		s.planPrefill, s.planDecode = c, false
		budget -= c
		prefill += c
	}
	if nDecode == 0 && prefill == 0 {
		return 0, false
	}
	return e.step(nDecode, ctxTokens, prefill), true
}

// admitLocked looks s's prompt up in the cache and takes its blocks; false
// when they do not fit now.
func (e *engine) admitLocked(s *seq) bool {
	bs := e.cfg.BlockSize
	target := s.prefillTarget
	maxHit := (target - 1) / bs // at least one token is always computed
	gpu, ext := e.kv.lookup(s.hashes, maxHit)
	unhashed := ceilDiv(target, bs) - len(s.hashes)
	blocks, ok := e.kv.acquire(s.hashes, unhashed, gpu, gpu+ext)
	if !ok {
		return false
	}
	s.blocks, s.unhashed = blocks, unhashed
	s.state = seqRunning
	s.computed = (gpu + ext) * bs
	e.countLookupLocked(s, target, gpu, ext)
	return true
}

// countLookupLocked updates the prefix-cache counters for one admission of
// s with gpu and ext hit blocks over target tokens.
func (e *engine) countLookupLocked(s *seq, target, gpu, ext int) {
	bs := e.cfg.BlockSize
	gpuTok, extTok := int64(gpu*bs), int64(ext*bs)
	e.m.prefixQueries += int64(target)
	e.m.prefixHits += gpuTok
	if e.kv.off != nil {
		e.m.extQueries += int64(target) - gpuTok
		e.m.extHits += extTok
	}
	if !s.admittedOnce {
		s.admittedOnce = true
		e.m.requests++
		e.m.promptTokens += int64(s.promptLen)
		e.m.srcLocalHit += gpuTok
		e.m.srcExternal += extTok
		e.m.srcLocalCompute += int64(s.promptLen) - gpuTok - extTok
		s.cached.Store(gpuTok + extTok)
	}
}

// preemptLocked frees victim's blocks and puts it back at the head of the
// queue; it recomputes its prompt and generated tokens when readmitted.
func (e *engine) preemptLocked(victim *seq) {
	if i := slices.Index(e.running, victim); i >= 0 {
		e.running = slices.Delete(e.running, i, i+1)
	}
	e.kv.release(victim.blocks, victim.unhashed)
	victim.blocks, victim.unhashed = nil, 0
	victim.state = seqWaiting
	victim.computed = 0
	victim.prefillTarget = victim.promptLen + victim.gen
	victim.planPrefill, victim.planDecode = 0, false
	e.waiting = slices.Insert(e.waiting, 0, victim)
	e.m.preemptions++
}

// applyLocked ends a step at now: prefill progress, one token for every
// sequence that decoded or finished its prefill, completions.
func (e *engine) applyLocked(now time.Time) {
	kept := e.running[:0]
	for _, s := range e.running {
		emit := false
		if s.planPrefill > 0 {
			s.computed += s.planPrefill
			emit = s.computed >= s.prefillTarget
		} else if s.planDecode {
			emit = true
		}
		s.planPrefill, s.planDecode = 0, false
		if !emit {
			kept = append(kept, s)
			continue
		}
		s.gen++
		e.m.generationTokens++
		if s.gen == 1 {
			e.m.ttft.observe(now.Sub(s.arrival).Seconds())
			s.firstTok = now
		} else {
			e.m.itl.observe(now.Sub(s.lastTok).Seconds())
		}
		s.lastTok = now
		s.generated.Store(int64(s.gen))
		if s.gen >= s.maxOut {
			e.finishLocked(s, now)
			s.signal()
			continue
		}
		if s.gen-s.notified >= s.chunk {
			s.notified = s.gen
			s.signal()
		}
		kept = append(kept, s)
	}
	clear(e.running[len(kept):])
	e.running = kept
}

// finishLocked releases a finished sequence (not in e.running any more).
func (e *engine) finishLocked(s *seq, now time.Time) {
	e.kv.release(s.blocks, s.unhashed)
	s.blocks, s.unhashed = nil, 0
	s.state = seqFinished
	r := s.reason.Load()
	e.m.success[r]++
	e.m.e2e.observe(now.Sub(s.arrival).Seconds())
	s.done.Store(true)
}

// beginZeroLatency does a zero-latency request's cache accounting: the
// lookup and block references at arrival. The caller writes the response
// and then calls endZeroLatency.
func (e *engine) beginZeroLatency(s *seq) {
	bs := e.cfg.BlockSize
	e.mu.Lock()
	defer e.mu.Unlock()
	s.prefillTarget = s.promptLen
	gpu, ext := e.kv.lookup(s.hashes, (s.promptLen-1)/bs)
	unhashed := ceilDiv(s.promptLen, bs) - len(s.hashes)
	if blocks, ok := e.kv.acquire(s.hashes, unhashed, gpu, gpu+ext); ok {
		s.blocks, s.unhashed = blocks, unhashed
	}
	// Without room (all blocks referenced by concurrent requests) the
	// request is served uncached: nothing is inserted.
	e.countLookupLocked(s, s.promptLen, gpu, ext)
	s.state = seqRunning
	e.zlRun++
}

// endZeroLatency releases a zero-latency request that generated gen
// tokens (aborted when gen < maxOut).
func (e *engine) endZeroLatency(s *seq, gen int, firstTok, end time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.kv.release(s.blocks, s.unhashed)
	s.blocks, s.unhashed = nil, 0
	s.state = seqFinished
	e.zlRun--
	e.m.generationTokens += int64(gen)
	if gen > 0 {
		e.m.ttft.observe(firstTok.Sub(s.arrival).Seconds())
		if gen > 1 {
			e.m.itl.observeN(end.Sub(firstTok).Seconds()/float64(gen-1), uint64(gen-1))
		}
	}
	if gen < s.maxOut {
		e.m.success[finishAbort]++
		return
	}
	e.m.success[s.reason.Load()]++
	e.m.e2e.observe(end.Sub(s.arrival).Seconds())
}

// resetCache empties the engine's prefix cache (kvCache.reset) and counts
// the reset; it returns the number of blocks dropped.
func (e *engine) resetCache() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.m.cacheResets++
	return e.kv.reset()
}

// snapshot copies the engine's state for /metrics and Stats.
func (e *engine) snapshot() engineSnapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.m
	m.ttft.counts = slices.Clone(m.ttft.counts)
	m.itl.counts = slices.Clone(m.itl.counts)
	m.e2e.counts = slices.Clone(m.e2e.counts)
	bpb := int64(e.cfg.BlockSize) * int64(e.cfg.KVBytesPerToken)
	return engineSnapshot{
		m:           m,
		running:     len(e.running) + e.zlRun,
		waiting:     len(e.waiting),
		kvUsage:     e.kv.usage(),
		cpuUsage:    e.kv.offUsage(),
		gpuToCPUB:   e.kv.gpuToCPU * bpb,
		cpuToGPUB:   e.kv.cpuToGPU * bpb,
		evictions:   e.kv.evictions,
		offEvicted:  e.kv.offEvictions,
		gpuBlocks:   e.kv.total,
		offloadBlks: e.kv.offCap,
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
