package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Probe is one measurement at one concurrency.
type Probe struct {
	Concurrency int
	// Attempt counts the runs at this concurrency, from 1 (a client-bound
	// probe is run again).
	Attempt int
	// Met is true when the probe met every objective; meaningless when
	// ClientBound.
	Met bool
	// ClientBound marks an invalid probe: the client, not the server,
	// limited it. ClientReason says why.
	ClientBound  bool
	ClientReason string
	// Inconclusive marks a probe that measured nothing the objective can
	// be judged on: its run aborted (the server refused the warmup, a
	// write failed, …) or a term had too few samples to be judged. The
	// search stops at it. Why says what happened.
	Inconclusive bool
	Why          string
	// Detail is free text for the log and the result (the failed terms).
	Detail string
	// Dir is the probe's artifact folder, when it has one.
	Dir string
	// Data is whatever the probe function attaches (its SLO result).
	Data any
}

// ProbeFunc runs one measurement at concurrency c (attempt from 1). An
// error stops the search; a probe that ran but failed its objective is a
// Probe with Met false, not an error.
type ProbeFunc func(ctx context.Context, c, attempt int) (Probe, error)

// Resolution is when the bisection stops: when the bracket is at most
// Abs wide, or (with Rel > 0) at most Rel times its low end; at least 1.
type Resolution struct {
	Abs int
	Rel float64
}

// ParseResolution reads "4" (concurrency steps) or "5%" (of the bracket's
// low end).
func ParseResolution(s string) (Resolution, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || !(v > 0 && v < 100) {
			return Resolution{}, fmt.Errorf("resolution %q: a percentage must be in (0, 100), e.g. 5%%", s)
		}
		return Resolution{Rel: v / 100}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return Resolution{}, fmt.Errorf("resolution %q: give a whole number of concurrency steps (≥ 1) or a percentage such as 5%%", s)
	}
	return Resolution{Abs: n}, nil
}

func (r Resolution) String() string {
	if r.Rel > 0 {
		return strconv.FormatFloat(100*r.Rel, 'g', -1, 64) + "%"
	}
	return strconv.Itoa(max(r.Abs, 1))
}

// width is the bracket width at which the search stops, for a low end lo.
func (r Resolution) width(lo int) int {
	w := max(r.Abs, 1)
	if r.Rel > 0 {
		w = max(1, int(math.Floor(r.Rel*float64(lo))))
	}
	return w
}

// Config configures Search.
type Config struct {
	// Lo and Hi bound the concurrency searched (1 ≤ Lo ≤ Hi).
	Lo, Hi int
	// Resolution stops the bisection; the zero value means 1.
	Resolution Resolution
	// Retries is how many more times a client-bound probe is run before it
	// is reported as such. Default 0: no retry (negative means none too).
	Retries int
	// Logf, when set, gets one line per probe.
	Logf func(format string, args ...any)
	// Progress, when set, is called after every probe with the result so
	// far (Best, Below and Above as the finished probes show them).
	Progress func(*Result)
}

// ParseRange reads "LO:HI".
func ParseRange(s string) (lo, hi int, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), ":")
	if ok {
		lo, err = strconv.Atoi(a)
		if err == nil {
			hi, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || lo < 1 || hi < lo {
		return 0, 0, fmt.Errorf("concurrency range %q: want LO:HI with 1 ≤ LO ≤ HI, e.g. 1:1024", s)
	}
	return lo, hi, nil
}

// Result is the outcome of a search.
type Result struct {
	// Best is the highest concurrency that met every objective; 0 when
	// not even Lo did.
	Best int
	// BestProbe is the probe at Best (nil when Best is 0).
	BestProbe *Probe
	// Below is the highest passing probe under Best, Above the lowest
	// failing or client-bound probe over it (nil when there is none: Best
	// is Lo, or Best is Hi).
	Below, Above *Probe
	// ClientBoundAt is the lowest concurrency whose probe stayed
	// client-bound (0 when none): the server's capacity may be higher than
	// Best, but this client cannot show it.
	ClientBoundAt int
	// Probes are every probe, in the order run.
	Probes []Probe
	// Inconclusive is the probe that stopped the search because it was
	// inconclusive (nil when none did): Best is then only what the probes
	// before it showed, a lower bound.
	Inconclusive *Probe
	// Interrupted is set when the search was stopped (its context ended)
	// before it finished; Pending is the concurrency whose probe was cut
	// short (0 when none was running). Best is what the finished probes
	// showed.
	Interrupted bool
	Pending     int
	// Running is set in the results handed to Config.Progress: the search
	// goes on.
	Running bool
	// Error is set when an error stopped the search (a probe that could
	// not run, a failed reset); Pending is then the concurrency it was
	// probing.
	Error string
}

// Complete reports whether the search ran to its answer: not stopped by
// an inconclusive probe, an interruption or an error.
func (r *Result) Complete() bool {
	return r.Inconclusive == nil && !r.Interrupted && !r.Running && r.Error == ""
}

// ErrRange is wrapped by Search's error for a bad Config.
var ErrRange = errors.New("bad search range")

// Search finds the highest concurrency in [Lo, Hi] whose probe met every
// objective (see the package documentation for the method). It assumes
// feasibility is monotone in concurrency.
func Search(ctx context.Context, cfg Config, probe ProbeFunc) (*Result, error) {
	if cfg.Lo < 1 || cfg.Hi < cfg.Lo {
		return nil, fmt.Errorf("%w: %d:%d (want 1 ≤ lo ≤ hi)", ErrRange, cfg.Lo, cfg.Hi)
	}
	s := &searcher{ctx: ctx, cfg: cfg, probe: probe, res: &Result{}, done: map[int]int{}}
	// Exponential phase.
	c := cfg.Lo
	for {
		if err := s.judge(c); err != nil {
			return s.end(err)
		}
		if s.bad == c || c == cfg.Hi {
			break
		}
		c = min(2*c, cfg.Hi)
	}
	// Bisection between ok and bad.
	for s.ok > 0 && s.bad > 0 && s.bad-s.ok > cfg.Resolution.width(s.ok) {
		if err := s.judge(s.ok + (s.bad-s.ok)/2); err != nil {
			return s.end(err)
		}
	}
	return s.end(nil)
}

// searcher is the state of one Search.
type searcher struct {
	ctx   context.Context
	cfg   Config
	probe ProbeFunc
	res   *Result
	done  map[int]int // concurrency → index in res.Probes of its final probe
	// ok is the highest passing concurrency (0: none yet), bad the lowest
	// failing or client-bound one (0: none yet).
	ok, bad int
}

// errStop ends a search at an inconclusive probe.
var errStop = errors.New("inconclusive probe")

// settle fills Best, BestProbe, Below and Above from the finished probes.
func (s *searcher) settle() {
	res := s.res
	res.Best = s.ok
	res.BestProbe, res.Below, res.Above = nil, nil, nil
	for i := range res.Probes {
		p := &res.Probes[i]
		if j, fin := s.done[p.Concurrency]; !fin || j != i || p.Inconclusive {
			continue // a client-bound attempt that was retried, or the probe that stopped the search
		}
		switch {
		case p.Concurrency == s.ok && p.Met && !p.ClientBound:
			res.BestProbe = p
		case p.Concurrency < s.ok && p.Met && !p.ClientBound && (res.Below == nil || p.Concurrency > res.Below.Concurrency):
			res.Below = p
		case p.Concurrency > s.ok && (res.Above == nil || p.Concurrency < res.Above.Concurrency):
			res.Above = p
		}
	}
}

// run probes c (with retries while client-bound) and returns its final
// probe; a concurrency already probed is not probed again.
func (s *searcher) run(c int) (*Probe, error) {
	res := s.res
	if i, ok := s.done[c]; ok {
		return &res.Probes[i], nil
	}
	for attempt := 1; ; attempt++ {
		if err := s.ctx.Err(); err != nil {
			return nil, err
		}
		res.Pending = c
		p, err := s.probe(s.ctx, c, attempt)
		if err != nil {
			return nil, fmt.Errorf("probe at concurrency %d: %w", c, err)
		}
		res.Pending = 0
		p.Concurrency, p.Attempt = c, attempt
		if p.Inconclusive {
			p.ClientBound, p.Met = false, false
		}
		res.Probes = append(res.Probes, p)
		if s.cfg.Logf != nil {
			s.cfg.Logf("search: probe %d at concurrency %d: %s", len(res.Probes), c, p.verdict())
		}
		if p.Inconclusive || !p.ClientBound || attempt > s.cfg.Retries {
			s.done[c] = len(res.Probes) - 1
			return &res.Probes[len(res.Probes)-1], nil
		}
	}
}

// judge probes c, moves the bracket (ok, bad) by its verdict and reports
// the progress; errStop when the probe was inconclusive.
func (s *searcher) judge(c int) error {
	p, err := s.run(c)
	if err != nil {
		return err
	}
	switch {
	case p.Inconclusive:
		s.res.Inconclusive = p
		return errStop
	case p.ClientBound:
		if s.res.ClientBoundAt == 0 || c < s.res.ClientBoundAt {
			s.res.ClientBoundAt = c
		}
		s.bad = c
	case p.Met:
		s.ok = c
	default:
		s.bad = c
	}
	if s.cfg.Progress != nil {
		s.settle()
		s.res.Running = true
		s.cfg.Progress(s.res)
		s.res.Running = false
	}
	return nil
}

// end settles the result and says how the search stopped.
func (s *searcher) end(err error) (*Result, error) {
	s.settle()
	res := s.res
	if errors.Is(err, errStop) {
		// res.Inconclusive points into res.Probes, which no longer grows.
		return res, nil
	}
	switch {
	case err != nil && s.ctx.Err() != nil:
		res.Interrupted = true
	case err != nil:
		res.Error = err.Error()
	default:
		res.Pending = 0
	}
	return res, err
}

func (p *Probe) verdict() string {
	s := "met every objective"
	switch {
	case p.Inconclusive:
		s = "INCONCLUSIVE: " + p.Why
	case p.ClientBound:
		s = "client-bound (invalid, not a server failure): " + p.ClientReason
	case !p.Met:
		s = "failed"
	}
	if p.Detail != "" {
		s += " — " + p.Detail
	}
	return s
}

// PredictProbes is the number of probes the method needs on [lo, hi]
// with an absolute resolution r when every concurrency ≤ k meets the
// objective and every one above fails (lo ≤ k < hi, no client-bound
// probe): m+2 exponential probes, m = ⌊log2(k/lo)⌋ (the last one fails),
// then ⌈log2(w/r)⌉ bisections of the bracket of width
// w = min(lo·2^(m+1), hi) − lo·2^m. It is exact when w/r is a power of
// two and an upper bound otherwise (integer midpoints can end a bracket
// one bisection early).
func PredictProbes(lo, hi, r, k int) int {
	r = max(r, 1)
	m := 0
	for lo<<(m+1) <= k {
		m++
	}
	w := min(lo<<(m+1), hi) - lo<<m
	n := m + 2
	for j := 0; ; j++ {
		if (w+(1<<j)-1)>>j <= r {
			return n + j
		}
	}
}
