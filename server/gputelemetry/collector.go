package gputelemetry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentperf/agentperf/internal/metricspage"
)

// maxBody bounds one exporter page; a larger page is a failed scrape.
const maxBody = 16 << 20

// failLogEvery is how often a persistently failing endpoint is logged again.
const failLogEvery = time.Minute

// Config configures a Collector. The zero value of every field but the
// URLs means a documented default.
type Config struct {
	// URLs are the exporters the user named (--gpu-telemetry,
	// AIPERF_GPU_TELEMETRY_URL): a failed scrape of one is a warning.
	URLs []string
	// Probe are the default exporters (DefaultURLs): scraped only when
	// they answer the first scrape (Start), else dropped with one note.
	Probe []string
	// Interval between scrapes; 0 means DefaultInterval.
	Interval time.Duration
	// Timeout bounds one fetch; 0 means max(2×Interval, 2 s).
	Timeout time.Duration
	// Client performs the fetches; nil means a client of its own.
	Client *http.Client
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// Logf receives notes and warnings; nil discards them.
	Logf func(format string, args ...any)
	// Quietf, when set, receives the one note that default endpoints
	// were dropped (a run log's file, not the terminal: most machines run
	// no exporter); nil means Logf.
	Quietf func(format string, args ...any)
}

// endpoint is one exporter and its scrape counts.
type endpoint struct {
	url      string
	explicit bool
	scrapes  int
	failures int
	lastErr  string
	failing  bool
	lastLog  int64
	ignored  map[string]bool
}

// series is one GPU's samples.
type series struct {
	id     GPUID
	uuid   string
	model  string
	first  int64
	fields [numFields][]Sample
}

// Collector scrapes GPU exporters. Its methods are safe for concurrent
// use; Run and Final may overlap.
type Collector struct {
	cfg    Config
	client *http.Client
	clock  func() time.Time
	logf   func(string, ...any)

	mu          sync.Mutex
	eps         []*endpoint
	gpus        map[GPUID]*series
	order       []GPUID
	changes     []string
	startNs     int64
	profStartNs int64
	profEndNs   int64
	firstNs     int64
}

// New returns a Collector for cfg; it fetches nothing until Start.
func New(cfg Config) *Collector {
	c := &Collector{cfg: cfg, client: cfg.Client, clock: cfg.Clock, logf: cfg.Logf, gpus: map[GPUID]*series{}}
	if c.client == nil {
		c.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: 90 * time.Second}}
	}
	if c.clock == nil {
		c.clock = time.Now
	}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	seen := map[string]bool{}
	for _, u := range cfg.URLs {
		if !seen[u] {
			seen[u] = true
			c.eps = append(c.eps, &endpoint{url: u, explicit: true, ignored: map[string]bool{}})
		}
	}
	for _, u := range cfg.Probe {
		if !seen[u] {
			seen[u] = true
			c.eps = append(c.eps, &endpoint{url: u, ignored: map[string]bool{}})
		}
	}
	return c
}

func (c *Collector) interval() time.Duration {
	if c.cfg.Interval > 0 {
		return c.cfg.Interval
	}
	return DefaultInterval
}

// Start takes the first scrape of every endpoint and drops the default
// endpoints that did not answer it with a GPU. It returns the number of
// endpoints kept.
func (c *Collector) Start(ctx context.Context) int {
	c.mu.Lock()
	c.startNs = c.clock().UnixNano()
	c.mu.Unlock()
	c.Scrape(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.eps[:0]
	var dropped []string
	for _, e := range c.eps {
		if e.explicit || (e.failures == 0 && c.hasGPUs(e.url)) {
			kept = append(kept, e)
		} else {
			dropped = append(dropped, e.url)
		}
	}
	c.eps = kept
	if len(dropped) > 0 {
		quiet := c.cfg.Quietf
		if quiet == nil {
			quiet = c.logf
		}
		quiet("GPU telemetry: no GPU exporter at the default address(es) %s; not scraped (name one with --gpu-telemetry URL)", strings.Join(dropped, ", "))
	}
	return len(c.eps)
}

func (c *Collector) hasGPUs(url string) bool {
	for _, id := range c.order {
		if id.Endpoint == url {
			return true
		}
	}
	return false
}

// URLs returns the endpoints scraped.
func (c *Collector) URLs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.eps))
	for i, e := range c.eps {
		out[i] = e.url
	}
	return out
}

// Scrape fetches every endpoint once, concurrently.
func (c *Collector) Scrape(ctx context.Context) {
	c.mu.Lock()
	eps := append([]*endpoint(nil), c.eps...)
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, e := range eps {
		wg.Add(1)
		go func() { defer wg.Done(); c.scrapeOne(ctx, e) }()
	}
	wg.Wait()
}

// Final takes the last scrape, which closes the profiling window.
func (c *Collector) Final(ctx context.Context) { c.Scrape(ctx) }

// Run scrapes every Interval until ctx is done.
func (c *Collector) Run(ctx context.Context) {
	tk := time.NewTicker(c.interval())
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			c.Scrape(ctx)
		}
	}
}

func (c *Collector) scrapeOne(ctx context.Context, e *endpoint) {
	t0 := c.clock()
	body, err := c.fetch(ctx, e.url)
	var page Page
	if err == nil {
		page, err = ParsePage(e.url, body)
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return
	}
	ns := t0.UnixNano()
	c.mu.Lock()
	defer c.mu.Unlock()
	e.scrapes++
	if c.firstNs == 0 {
		c.firstNs = ns
	}
	if err != nil {
		e.failures++
		e.lastErr = err.Error()
		if e.explicit && (!e.failing || ns-e.lastLog >= int64(failLogEvery)) {
			c.logf("GPU telemetry: scrape %s failed (%d failure(s) so far; the run continues): %v", e.url, e.failures, err)
			e.lastLog = ns
		}
		e.failing = true
		return
	}
	if e.failing && e.explicit {
		c.logf("GPU telemetry: scrape %s recovered after %d failure(s)", e.url, e.failures)
	}
	e.failing = false
	for _, name := range page.Ignored {
		if !e.ignored[name] {
			e.ignored[name] = true
			c.note(ns, fmt.Sprintf("%s: family %s is not a gauge or counter on this page; its samples are skipped while it is not", e.url, name))
		}
	}
	for _, r := range page.Readings {
		s := c.gpus[r.GPU]
		if s == nil {
			s = &series{id: r.GPU, first: ns}
			c.gpus[r.GPU] = s
			c.order = append(c.order, r.GPU)
			sort.Slice(c.order, func(i, j int) bool { return lessIndex(c.order[i], c.order[j]) })
			if len(c.order) > 1 && ns > c.firstNs {
				c.note(ns, fmt.Sprintf("%s: GPU %s appeared", e.url, r.GPU.Index))
			}
		}
		if r.UUID != "" {
			s.uuid = r.UUID
		}
		if r.Model != "" {
			s.model = r.Model
		}
		for f, v := range r.Values {
			if math.IsNaN(v) {
				continue
			}
			tr := s.fields[f]
			if n := len(tr); n > 0 && tr[n-1].T >= ns {
				continue // an older fetch finished after a newer one
			}
			if len(tr) == 0 && ns > s.first {
				c.note(ns, fmt.Sprintf("%s: GPU %s: %s appeared", e.url, r.GPU.Index, Field(f)))
			}
			s.fields[f] = append(tr, Sample{ns, v})
		}
	}
}

// note records a change of the pages' schema and logs it.
func (c *Collector) note(ns int64, msg string) {
	at := float64(ns-c.startNs) / 1e9
	c.changes = append(c.changes, fmt.Sprintf("+%.1fs %s", at, msg))
	c.logf("GPU telemetry: %s (collection continues)", msg)
}

func (c *Collector) fetch(ctx context.Context, url string) ([]byte, error) {
	to := c.cfg.Timeout
	if to <= 0 {
		to = max(2*c.interval(), 2*time.Second)
	}
	return metricspage.Fetch(ctx, c.client, url, nil, to, maxBody)
}

// WarmupStarted does nothing; with ProfilingStarted and ProfilingEnded it
// makes a Collector a replay.Observer that marks the profiling window. A
// nil *Collector ignores them.
func (c *Collector) WarmupStarted(requests int, at time.Time) {}

// ProfilingStarted marks the start of the profiling window.
func (c *Collector) ProfilingStarted(start, deadline time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.profStartNs = start.UnixNano()
	c.mu.Unlock()
}

// ProfilingEnded marks the end of the profiling window.
func (c *Collector) ProfilingEnded(at time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.profEndNs = at.UnixNano()
	c.mu.Unlock()
}

// Live is what the live view shows: the GPUs' summed power now and its
// recent history.
type Live struct {
	// GPUs is the number of GPUs seen.
	GPUs int
	// PowerW is the summed power of the GPUs' last samples (NaN before
	// the first).
	PowerW float64
	// History is the summed power at the last scrapes, oldest first (at
	// most the n asked for).
	History []float64
}

// Live returns the live figures, with at most n points of history.
func (c *Collector) Live(n int) Live {
	if c == nil {
		return Live{PowerW: math.NaN()}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Live{GPUs: len(c.order), PowerW: math.NaN()}
	// History: per GPU, the last n power samples summed by position from
	// the end (the GPUs of one exporter are scraped together).
	for _, id := range c.order {
		p := c.gpus[id].fields[Power]
		if len(p) == 0 {
			continue
		}
		if math.IsNaN(out.PowerW) {
			out.PowerW = 0
		}
		out.PowerW += p[len(p)-1].V
		k := min(n, len(p))
		if len(out.History) < k {
			out.History = append(make([]float64, k-len(out.History)), out.History...)
		}
		for i := range k {
			out.History[len(out.History)-k+i] += p[len(p)-k+i].V
		}
	}
	return out
}
