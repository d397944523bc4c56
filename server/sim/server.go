package sim

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentperf/agentperf/internal/numfmt"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// Server is a simulated vLLM server. Build it with New, then Start it (or
// serve Handler yourself), and Close it.
type Server struct {
	// URL is the base URL ("http://127.0.0.1:port") once Start returned.
	URL string

	cfg     Config
	tok     tokenizer.Tokenizer
	engines []*engine
	gpus    *gpuModel // nil without Config.GPUMetrics
	wording overflowWording
	rules   []FaultRule // per-request fault rules, in faultNames order from index 1
	handler http.Handler
	tcache  *tokenCache
	hseed   maphash.Seed

	srv      *http.Server
	ln       net.Listener
	serveErr chan error
	started  atomic.Bool
	// enginesOnce starts the engines (Start or Handler); enginesRunning
	// is written inside it and read by Shutdown after it.
	enginesOnce    sync.Once
	enginesRunning bool
	closed         atomic.Bool
	closeMu        sync.Mutex

	created   int64 // Unix seconds of New, the "created" field of /v1/models
	reqSeq    atomic.Int64
	rr        atomic.Uint64
	downUntil atomic.Int64 // UnixNano; 0 = never down
	downOnce  sync.Once

	cnt struct {
		requests, overflows, notFound, badRequests, completed atomic.Int64
		faults                                                [numFaults]atomic.Int64
	}

	fbMu      sync.Mutex
	firstByte map[string]time.Time

	logMu sync.Mutex // serialises Config.RequestLog lines
}

// faultNames names the fault counters by index: fiDown, then the
// per-request rules in FaultConfig.faultRules order (index i+1 for rule i).
var faultNames = [numFaults]string{FaultDown, FaultHTTP500, FaultHTTP503, FaultHTTP429, FaultResetBeforeHeaders,
	FaultSlowFirstByte, FaultResetMidStream, FaultStall, FaultMalformedSSE, FaultStreamError, FaultMissingUsage}

// Fault indexes (into faultNames).
const (
	fiDown = iota
	fi500
	fi503
	fi429
	fiResetBeforeHeaders
	fiSlowFirstByte
	fiResetMidStream
	fiStall
	fiMalformedSSE
	fiStreamError
	fiMissingUsage
	numFaults
)

// New validates cfg (after applying defaults) and builds a Server. It
// starts nothing.
func New(cfg Config) (*Server, error) {
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tok := cfg.Tokenizer
	if tok == nil {
		var err error
		tok, err = resolveTokenizer(cfg.TokenizerName, cfg.Getenv)
		if err != nil {
			return nil, fmt.Errorf("sim: --tokenizer %q: %w", cfg.TokenizerName, err)
		}
		cfg.Tokenizer = tok
	}
	s := &Server{
		cfg:       cfg,
		tok:       tok,
		wording:   overflowWordings[cfg.OverflowWording],
		tcache:    newTokenCache(8 << 20),
		hseed:     maphash.MakeSeed(),
		created:   time.Now().Unix(),
		firstByte: make(map[string]time.Time),
	}
	for _, r := range s.cfg.Faults.faultRules() {
		s.rules = append(s.rules, *r.rule)
	}
	for i := range cfg.Engines {
		s.engines = append(s.engines, newEngine(i, &s.cfg))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, true) })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, false) })
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /metrics", s.serveMetrics)
	if cfg.GPUMetrics != "" {
		s.gpus = newGPUModel(cfg.GPUs, time.Now())
		mux.HandleFunc("GET "+GPUMetricsPath(cfg.GPUMetrics), s.serveGPUMetrics)
	}
	mux.HandleFunc("POST /reset_prefix_cache", s.serveResetPrefixCache)
	mux.HandleFunc("POST /flush_cache", s.serveFlushCache)
	s.handler = mux
	return s, nil
}

// resolveTokenizer maps a tokenizer name to a tokenizer (see
// tokenizer.Resolve: builtin, a tokenizer.json or tiktoken file, a folder,
// or a model id in the local Hugging Face cache).
func resolveTokenizer(name string, getenv func(string) string) (tokenizer.Tokenizer, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	return tokenizer.Resolve(name, getenv)
}

// Config returns the configuration in use, defaults applied.
func (s *Server) Config() Config { return s.cfg }

// Handler returns the server's HTTP handler, for serving it on a listener
// of your own (Start is then not needed). It starts the engines'
// scheduler goroutines; call Close to stop them.
func (s *Server) Handler() http.Handler {
	s.startEngines()
	return s.handler
}

// startEngines starts the scheduler goroutines once (none with
// ZeroLatency).
func (s *Server) startEngines() {
	s.enginesOnce.Do(func() {
		if s.cfg.ZeroLatency {
			return
		}
		s.enginesRunning = true
		for _, e := range s.engines {
			go e.run()
		}
	})
}

// Start listens on Config.Addr (default 127.0.0.1:0), fills URL, starts
// the engines and serves in the background. It returns once the listener
// is bound.
func (s *Server) Start() error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("sim: Start called twice")
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("sim: listen on %s: %w (pick another --host/--port)", s.cfg.Addr, err)
	}
	s.ln = &downListener{Listener: ln, s: s}
	s.URL = "http://" + ln.Addr().String()
	s.startEngines()
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       s.cfg.KeepAliveTimeout, // negative: none, as net/http reads it
		ErrorLog:          nil,
	}
	s.serveErr = make(chan error, 1)
	go func() { s.serveErr <- s.srv.Serve(s.ln) }()
	s.logf("sim: serving %s at %s (%d engine(s), zero-latency=%v)", s.cfg.Model, s.URL, len(s.engines), s.cfg.ZeroLatency)
	for i, e := range s.engines {
		// vLLM's start-up line, which InferenceX reads as kv_cache_pool_tokens.
		s.logf("sim: engine %d: GPU KV cache size: %s tokens", i, numfmt.Thousands(e.kv.total*s.cfg.BlockSize))
	}
	return nil
}

// Addr returns the listener's address, or "" before Start.
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops accepting connections, waits for in-flight requests to
// finish (including stalls) and stops the engines. It is safe to call
// more than once. With Handler served elsewhere, stop that server first:
// requests arriving after Close wait forever.
func (s *Server) Close() error {
	return s.Shutdown(context.Background())
}

// Shutdown is Close with a deadline: when ctx ends first, the remaining
// connections are closed and ctx's error is returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed.Load() {
		return nil
	}
	var err error
	if s.srv != nil { // Start succeeded
		err = s.srv.Shutdown(ctx)
		if err != nil {
			s.srv.Close()
		}
		if serr := <-s.serveErr; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
	}
	s.enginesOnce.Do(func() {}) // no engine starts after Close
	if s.enginesRunning {
		for _, e := range s.engines {
			close(e.stop)
			<-e.done
		}
	}
	s.closed.Store(true)
	return err
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// FirstByte returns when the server wrote (and flushed to the socket) the
// first content byte of the response to the request with this
// X-Request-ID; a client's TTFT minus this is its measurement error plus
// the loopback latency. With ZeroLatency nothing is flushed early: it is
// when the whole response was handed to net/http. It needs
// Config.RecordFirstByte.
func (s *Server) FirstByte(requestID string) (time.Time, bool) {
	s.fbMu.Lock()
	defer s.fbMu.Unlock()
	t, ok := s.firstByte[requestID]
	return t, ok
}

func (s *Server) recordFirstByte(id string, t time.Time) {
	if !s.cfg.RecordFirstByte || id == "" {
		return
	}
	s.fbMu.Lock()
	s.firstByte[id] = t
	s.fbMu.Unlock()
}

// EngineStats are one engine's counters. Token counters are in tokens.
type EngineStats struct {
	Requests         int64 // requests admitted (once each)
	Running, Waiting int
	PromptTokens     int64
	GenerationTokens int64
	CachedTokens     int64 // prompt tokens from any cache tier (Σ usage cached_tokens)
	PrefixQueries    int64 // vllm:prefix_cache_queries
	PrefixHits       int64 // vllm:prefix_cache_hits (GPU tier)
	ExternalQueries  int64 // vllm:external_prefix_cache_queries
	ExternalHits     int64 // vllm:external_prefix_cache_hits (offload tier)
	Evictions        int64 // GPU blocks evicted
	OffloadEvictions int64 // offload-tier blocks evicted
	Preemptions      int64
	CacheResets      int64            // prefix-cache resets (ResetPrefixCache, the reset endpoints)
	Finished         map[string]int64 // by finished_reason: stop, length, abort
	KVUsage          float64
}

// Stats is a snapshot of the server's counters, for tests.
type Stats struct {
	EngineStats                  // sums over engines (KVUsage: the maximum)
	Requests    int64            // completion requests received (chat and text)
	Completed   int64            // responses fully written
	Overflows   int64            // context-overflow 400s
	NotFound    int64            // unknown-model 404s
	BadRequests int64            // other 400s
	Faults      map[string]int64 // injected faults by name (Fault* constants)
	Engines     []EngineStats
}

// Stats returns the current counters.
func (s *Server) Stats() Stats {
	st := Stats{
		Requests:    s.cnt.requests.Load(),
		Completed:   s.cnt.completed.Load(),
		Overflows:   s.cnt.overflows.Load(),
		NotFound:    s.cnt.notFound.Load(),
		BadRequests: s.cnt.badRequests.Load(),
		Faults:      map[string]int64{},
	}
	st.Finished = map[string]int64{}
	for i, n := range faultNames {
		if v := s.cnt.faults[i].Load(); v > 0 {
			st.Faults[n] = v
		}
	}
	for _, e := range s.engines {
		sn := e.snapshot()
		es := EngineStats{
			Requests: sn.m.requests, Running: sn.running, Waiting: sn.waiting,
			PromptTokens: sn.m.promptTokens, GenerationTokens: sn.m.generationTokens,
			CachedTokens:  sn.m.srcLocalHit + sn.m.srcExternal,
			PrefixQueries: sn.m.prefixQueries, PrefixHits: sn.m.prefixHits,
			ExternalQueries: sn.m.extQueries, ExternalHits: sn.m.extHits,
			Evictions: sn.evictions, OffloadEvictions: sn.offEvicted,
			Preemptions: sn.m.preemptions, CacheResets: sn.m.cacheResets, Finished: map[string]int64{}, KVUsage: sn.kvUsage,
		}
		for r, name := range finishReasons {
			es.Finished[name] = sn.m.success[r]
			st.Finished[name] += sn.m.success[r]
		}
		st.Engines = append(st.Engines, es)
		st.EngineStats.add(&es)
	}
	return st
}

// add accumulates o into e: sums, and the maximum KV usage (Finished is
// summed by the caller).
func (e *EngineStats) add(o *EngineStats) {
	e.Requests += o.Requests
	e.Running += o.Running
	e.Waiting += o.Waiting
	e.PromptTokens += o.PromptTokens
	e.GenerationTokens += o.GenerationTokens
	e.CachedTokens += o.CachedTokens
	e.PrefixQueries += o.PrefixQueries
	e.PrefixHits += o.PrefixHits
	e.ExternalQueries += o.ExternalQueries
	e.ExternalHits += o.ExternalHits
	e.Evictions += o.Evictions
	e.OffloadEvictions += o.OffloadEvictions
	e.Preemptions += o.Preemptions
	e.CacheResets += o.CacheResets
	e.KVUsage = max(e.KVUsage, o.KVUsage)
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	snaps := make([]engineSnapshot, len(s.engines))
	for i, e := range s.engines {
		snaps[i] = e.snapshot()
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	switch s.cfg.MetricsDialect {
	case "llamacpp":
		writeLlamaCppMetrics(w, snaps)
	case "sglang":
		writeSGLangMetrics(w, s.cfg.Model, s.cfg.BlockSize, snaps)
	case "tgi":
		writeTGIMetrics(w, snaps)
	default:
		writeMetrics(w, s.cfg.Model, s.cfg.BlockSize, s.cfg.OffloadCapacityTokens >= s.cfg.BlockSize, s.cfg.LazyMetrics, snaps)
	}
}

// ResetPrefixCache empties every engine's prefix cache, as vLLM's POST
// /reset_prefix_cache and SGLang's POST /flush_cache do (both call it): the
// cached blocks no running request holds, and the offload tier. Blocks of
// running requests stay in use. It returns the number of blocks dropped
// and counts one reset per engine (agentperf_sim:prefix_cache_resets_total
// on /metrics, EngineStats.CacheResets).
//
// vLLM skips the whole reset (with a warning, still answering 200) while
// any block is in use, and SGLang refuses it with a 400 while requests
// run or wait; the simulator resets what it can. A client that wants a
// cold cache on a real server drains it first (servermetrics.ResetAndDrain).
func (s *Server) ResetPrefixCache() int {
	n := 0
	for _, e := range s.engines {
		n += e.resetCache()
	}
	s.logf("sim: prefix cache reset: %d cached block(s) dropped", n)
	return n
}

func (s *Server) serveResetPrefixCache(w http.ResponseWriter, r *http.Request) {
	s.ResetPrefixCache()
	w.WriteHeader(http.StatusOK) // vLLM answers 200 with an empty body
}

func (s *Server) serveFlushCache(w http.ResponseWriter, r *http.Request) {
	s.ResetPrefixCache()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	io.WriteString(w, "Cache flushed.\n")
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"object":"list","data":[{"id":%s,"object":"model","created":%d,"owned_by":"vllm","root":%s,"parent":null,"max_model_len":%d,"permission":[]}]}`,
		jsonString(s.cfg.Model), s.created, jsonString(s.cfg.Model), s.cfg.MaxModelLen)
}

// downListener resets new connections during a down window.
type downListener struct {
	net.Listener
	s *Server
}

func (l *downListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return c, err
		}
		if !l.s.isDown(time.Now()) {
			return c, nil
		}
		resetConn(c)
	}
}

func (s *Server) isDown(now time.Time) bool {
	u := s.downUntil.Load()
	return u != 0 && now.UnixNano() < u
}

// resetConn closes c with a TCP RST (SO_LINGER 0).
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

// tokenCache remembers the token ids of long message texts so a
// conversation's history is tokenized once, not once per turn. It is
// bounded by total tokens and cleared when full.
type tokenCache struct {
	mu     sync.Mutex
	m      map[uint64][]uint32
	tokens int
	limit  int
}

func newTokenCache(limit int) *tokenCache {
	return &tokenCache{m: make(map[uint64][]uint32), limit: limit}
}

func (c *tokenCache) get(k uint64) ([]uint32, bool) {
	c.mu.Lock()
	ids, ok := c.m[k]
	c.mu.Unlock()
	return ids, ok
}

func (c *tokenCache) put(k uint64, ids []uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tokens+len(ids) > c.limit {
		clear(c.m)
		c.tokens = 0
	}
	if len(ids) > c.limit {
		return
	}
	c.m[k] = ids
	c.tokens += len(ids)
}
