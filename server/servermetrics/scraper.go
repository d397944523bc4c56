package servermetrics

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentperf/agentperf/internal/metricspage"
)

// maxBody bounds one /metrics page; a larger page is a failed scrape.
const maxBody = 64 << 20

// failLogEvery is how often a persistently failing endpoint is logged again.
const failLogEvery = time.Minute

// Scraper collects the configured /metrics endpoints. Its methods are safe
// for concurrent use; Run, Baseline and Final may overlap (fetches of one
// endpoint are serialised).
type Scraper struct {
	cfg      Config
	client   *http.Client
	clock    func() time.Time
	logf     func(string, ...any)
	fetchMus []sync.Mutex  // one per endpoint: serialises fetch+parse
	parsers  []*parser     // one per endpoint, used under fetchMus[i]
	headers  []http.Header // one per endpoint: sent with every fetch

	mu          sync.Mutex
	st          *store
	profStartNs int64
	profEndNs   int64

	// broken is set by the first internal error (a panic in the store or
	// the export); from then on nothing is collected (see Err).
	broken atomic.Pointer[CollectionError]
	// testHook, when set (tests only), runs in scrapeOne after the page
	// is parsed, under the store's lock.
	testHook func()
}

// CollectionError is the internal error that stopped a Scraper: a panic
// in the scraper's own code (a bug, e.g. on a page sequence it did not
// expect). The run that owns the Scraper keeps going without server
// metrics; the export records the error.
type CollectionError struct {
	// Where says what the scraper was doing ("scraping URL", "writing
	// the export", …).
	Where string
	// Value is what the code panicked with.
	Value any
	// Stack is the goroutine's stack at the panic.
	Stack []byte
}

func (e *CollectionError) Error() string {
	return fmt.Sprintf("internal error while %s: %v", e.Where, e.Value)
}

// Err returns the *CollectionError that stopped the collection, or nil
// while it works. Once set, Scrape and Run fetch nothing, Live reports
// nothing, and Export writes a file without metrics that names the error.
func (s *Scraper) Err() error {
	if e := s.broken.Load(); e != nil {
		return e
	}
	return nil
}

// recoverPanic, deferred at every entry point that touches the store,
// turns a panic into a CollectionError: the scraper stops, the caller (the
// run) does not. The store may be half-updated, so it is not read again.
func (s *Scraper) recoverPanic(where string) {
	v := recover()
	if v == nil {
		return
	}
	s.disable(where, v, debug.Stack())
}

func (s *Scraper) disable(where string, v any, stack []byte) {
	e := &CollectionError{Where: where, Value: v, Stack: stack}
	if !s.broken.CompareAndSwap(nil, e) {
		return
	}
	s.logf("server metrics: %v; server metrics are off for the rest of the run (the run continues; %s records the error). This is a bug in agentperf: please report it with this stack:\n%s",
		e, JSONFile, strings.TrimSpace(string(stack)))
}

// New returns a Scraper for cfg. It does not fetch anything.
func New(cfg Config) *Scraper {
	s := &Scraper{cfg: cfg, client: cfg.Client, clock: cfg.Clock, logf: cfg.Logf}
	if s.client == nil {
		s.client = &http.Client{Transport: &http.Transport{
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	s.prepareEndpoints()
	s.st = newStore(s.cfg.URLs)
	s.fetchMus = make([]sync.Mutex, len(s.cfg.URLs))
	for range s.cfg.URLs {
		s.parsers = append(s.parsers, newParser())
	}
	return s
}

// URLs returns the configured scrape URLs (without user:password).
func (s *Scraper) URLs() []string { return append([]string(nil), s.cfg.URLs...) }

// Scrape fetches every endpoint once, concurrently, and returns when all
// fetches have finished. Failures are logged and counted.
func (s *Scraper) Scrape(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range s.cfg.URLs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.scrapeOne(ctx, i)
		}()
	}
	wg.Wait()
}

// Baseline takes the scrape before warmup; counters of the warmup window are
// measured from it.
func (s *Scraper) Baseline(ctx context.Context) { s.Scrape(ctx) }

// Final takes the last scrape. Taken right after MarkProfilingEnd, it is
// the sample that closes the profiling window for counters and histograms
// (see the package doc).
func (s *Scraper) Final(ctx context.Context) {
	s.Scrape(ctx)
}

// MarkProfilingStart records the start of the profiling window (the end of
// warmup).
func (s *Scraper) MarkProfilingStart(t time.Time) {
	defer s.recoverPanic("marking the profiling start")
	if s.Err() != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.profStartNs = t.UnixNano()
	s.st.markStart(s.profStartNs)
}

// MarkProfilingEnd records the end of the profiling window.
func (s *Scraper) MarkProfilingEnd(t time.Time) {
	defer s.recoverPanic("marking the profiling end")
	if s.Err() != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.profEndNs = t.UnixNano()
	s.st.markEnd(s.profEndNs)
}

// Run scrapes every endpoint every Config.Interval until ctx is done. Each
// endpoint has its own ticker, so a slow endpoint delays only itself (a
// tick that falls during a fetch is skipped). Run never fails and never
// panics: an internal error stops the collection (see Err) and Run
// returns.
func (s *Scraper) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range s.cfg.URLs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk := time.NewTicker(s.cfg.interval())
			defer tk.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tk.C:
					s.scrapeOne(ctx, i)
					if s.Err() != nil {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// scrapeOne fetches, parses and stores endpoint i.
func (s *Scraper) scrapeOne(ctx context.Context, i int) {
	url := s.cfg.URLs[i]
	defer s.recoverPanic("scraping " + url)
	if s.Err() != nil {
		return
	}
	s.fetchMus[i].Lock()
	defer s.fetchMus[i].Unlock()
	t0 := s.clock()
	body, err := s.fetch(ctx, url, s.headers[i])
	lat := s.clock().Sub(t0)
	var fams []parsedFamily
	if err == nil {
		fams, err = s.parsers[i].parse(body)
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return // shutting down: not a server failure
	}
	ns := t0.UnixNano()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Err() != nil {
		return // stopped while this fetch was running
	}
	e := s.st.eps[i]
	e.fetches++
	e.latencyNs += int64(lat)
	if e.firstFetchNs == 0 {
		e.firstFetchNs = ns
	}
	e.lastFetchNs = ns
	if err != nil {
		e.failures++
		e.lastErr = err.Error()
		if !e.failing || ns-e.lastFailNs >= int64(failLogEvery) {
			s.logf("server metrics: scrape %s failed (%d failure(s) so far; the run continues, the export will list it): %v", url, e.failures, err)
			e.lastFailNs = ns
		}
		e.failing = true
		return
	}
	if e.failing {
		s.logf("server metrics: scrape %s recovered after %d failure(s)", url, e.failures)
		e.failing = false
	}
	h := fnv.New64a()
	h.Write(body)
	if s.testHook != nil {
		s.testHook()
	}
	if sum := h.Sum64(); !e.hasHash || sum != e.lastHash {
		e.updates = append(e.updates, ns)
		e.lastHash, e.hasHash = sum, true
	}
	for _, name := range s.st.add(i, ns, fams) {
		s.logf("server metrics: %s: metric %s has a different type than on an earlier page; its samples from here are ignored", url, name)
	}
}

func (s *Scraper) fetch(ctx context.Context, url string, hdr http.Header) ([]byte, error) {
	return metricspage.Fetch(ctx, s.client, url, hdr, s.cfg.timeout(), maxBody)
}
