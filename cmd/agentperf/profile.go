package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	neturl "net/url"
	"os"
	"path/filepath"
	"runtime"
	rpprof "runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/dataset/synth"
	"github.com/agentperf/agentperf/dataset/tokenizer"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/server"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/sim"
	"github.com/agentperf/agentperf/ui"
)

func init() {
	register(command{name: "profile", summary: "replay a trace corpus against a server and write aiperf-compatible artifacts", run: runProfile})
}

const profileExamples = `  # The embedded defaults: in-process simulator, synthetic corpus (about a minute)
  agentperf profile --url sim:// --public-dataset synthetic --model demo \
      --concurrency 8 --benchmark-duration 30 --streaming --use-server-token-count

  # InferenceX AgentX as its launcher runs it today (v1.0 semantics) against a local vLLM
  agentperf profile --scenario inferencex-agentx-mvp --url http://localhost:8000 \
      --endpoint /v1/chat/completions --endpoint-type chat --streaming \
      --model my-model --tokenizer org/model --tokenizer-trust-remote-code \
      --concurrency 32 --benchmark-duration 3600 --stats-interval 30 --random-seed 42 \
      --failed-request-threshold 0.10 --trajectory-start-min-ratio 0.25 \
      --trajectory-start-max-ratio 0.75 --warmup-requests-per-lane 10 \
      --trace-idle-gap-cap-seconds 300 --warmup-grace-period 1800 --use-server-token-count \
      --max-context-length 131072 --num-dataset-entries 393 --slice-duration 1.0 \
      --output-artifact-dir results/aiperf_artifacts \
      --public-dataset semianalysis_cc_traces_weka_062126_256k

  # An older InferenceX command line, with the semantics of its time
  AGENTPERF_AGENTX_GENERATION=v0.3 agentperf profile --scenario inferencex-agentx-mvp …`

// runProfile is `agentperf profile`: flags → config → replay.Run → artifacts.
func runProfile(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("profile", "profile --url URL --model NAME --concurrency N --benchmark-duration S [flags]", profileExamples, io.err)
	p := addProfileFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := p.takePositional(fs); err != nil {
		return err
	}
	if err := rejectUnsupported(fs); err != nil {
		return err
	}
	env, err := readEnv(os.Environ(), os.Getenv)
	if err != nil {
		return err
	}
	run, err := p.resolve(fs, env)
	if err != nil {
		return err
	}
	return run.execute(ctx, io)
}

// takePositional accepts the space-separated form `--server-metrics u1 u2`
// that InferenceX emits: extra positional URLs after --server-metrics are
// more server-metrics URLs. Any other positional argument is an error.
func (p *profileFlags) takePositional(fs *pflag.FlagSet) error {
	for _, a := range fs.Args() {
		if fs.Changed("server-metrics") && (strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "https://")) {
			p.serverMetrics = append(p.serverMetrics, a)
			continue
		}
		return usagef("profile: unexpected argument %q (flags take the form --name value)", a)
	}
	return nil
}

// profileRun is a resolved, validated profile invocation.
type profileRun struct {
	p           *profileFlags
	env         envSettings
	fs          *pflag.FlagSet
	scenario    string
	validity    []string // reasons the run is already not a valid submission
	concurrency int
	cacheBust   scenario.CacheBust
	streaming   bool
	ignoreEOS   bool
	serverTok   bool
	delayCap    time.Duration
	idleGapCap  time.Duration
	sysIdleCap  time.Duration
	duration    time.Duration
	// generationName is the AgentX generation asked for by
	// --agentx-generation or $AGENTPERF_AGENTX_GENERATION ("" = none);
	// generation is the one in force.
	generationName string
	generation     scenario.Generation
	// liveAssistant is the live-assistant mode in force.
	liveAssistant bool
	// notes are lines for the run log.
	notes   []string
	seed    int64
	extra   []replay.ExtraInput
	headers map[string]string
	apiKey  string
	filled  []string

	// metricsHeaders are the --server-metrics-header headers.
	metricsHeaders map[string]string
	// tokOrigin is where the tokenizer came from, for the summary and
	// metadata.
	tokOrigin tokenizer.Origin
	// startWarnings are warnings found before the run (the free-space
	// check), for metadata.warnings.
	startWarnings []string
	// server, when set, is the URL of a server already running for this
	// run (a sweep's or search's one simulator for --url sim://): the run
	// uses it instead of starting its own.
	server string
}

func (p *profileFlags) resolve(fs *pflag.FlagSet, env envSettings) (*profileRun, error) {
	r := &profileRun{p: p, env: env, fs: fs}
	var err error
	if r.concurrency, err = concurrencyValue(p.concurrency); err != nil {
		return nil, err
	}
	if p.url == "" {
		return nil, usagef("--url is required (e.g. http://localhost:8000, or sim:// for the in-process simulator)")
	}
	if !strings.HasPrefix(p.url, "sim:") {
		// Checked before anything is loaded or written.
		if u, err := neturl.Parse(p.url); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usagef("--url %q: want http(s)://host[:port] (e.g. http://localhost:8000) or sim://", redactURL(p.url))
		}
	}
	if len(p.models) == 0 {
		return nil, usagef("--model is required (the model name the server serves)")
	}
	for _, m := range p.serverMetrics {
		if u, err := neturl.Parse(m); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usagef("--server-metrics %q: want an http(s)://host[:port]/metrics URL (the in-process simulator's /metrics is scraped by itself with --url sim://)", redactURL(m))
		}
	}
	if p.endpointType != "chat" {
		return nil, usagef("--endpoint-type %q: only chat is supported", p.endpointType)
	}
	if p.exportLevel != "records" && p.exportLevel != "summary" {
		return nil, usagef("--export-level %q: records or summary (raw is not supported yet)", p.exportLevel)
	}
	if _, err := ui.ParseType(p.uiType); err != nil {
		return nil, asUsage(err)
	}
	if err := scenario.ValidateThreshold(p.threshold); err != nil {
		return nil, asUsage(err)
	}
	if p.startMin < 0 || p.startMax > 1 || p.startMin > p.startMax {
		return nil, usagef("--trajectory-start-min-ratio %g / --trajectory-start-max-ratio %g: need 0 ≤ min ≤ max ≤ 1", p.startMin, p.startMax)
	}
	for _, s := range p.extraInputs {
		e, err := replay.ParseExtraInput(s)
		if err != nil {
			return nil, asUsage(err)
		}
		r.extra = append(r.extra, e...)
	}
	if r.headers, err = parseHeaders("--header", p.headers); err != nil {
		return nil, err
	}
	if r.metricsHeaders, err = parseHeaders("--server-metrics-header", p.metricsHeaders); err != nil {
		return nil, err
	}
	r.apiKey = p.apiKey
	if r.apiKey == "" {
		r.apiKey = os.Getenv("OPENAI_API_KEY")
	}
	if err := r.checkURLCredentials(); err != nil {
		return nil, err
	}
	r.streaming, r.ignoreEOS, r.serverTok = p.streaming, p.ignoreEOS, p.serverTokens
	r.duration = seconds(p.duration)
	r.delayCap = seconds(p.delayCap)
	r.idleGapCap = seconds(p.idleGapCap)
	r.sysIdleCap = seconds(p.sysIdleCap)
	if err := r.selectGeneration(); err != nil {
		return nil, err
	}
	r.seed = p.seed
	if p.cacheBust != "" {
		cb, err := scenario.ParseCacheBust(p.cacheBust)
		if err != nil {
			return nil, asUsage(err)
		}
		r.cacheBust = cb
	} else {
		r.cacheBust = scenario.CacheBustNone
	}
	if err := r.applyScenario(); err != nil {
		return nil, err
	}
	r.liveAssistant = r.generation.LiveAssistant
	if env.liveAssistantSet {
		r.liveAssistant = env.liveAssistant
	}
	if r.duration <= 0 {
		return nil, usagef("--benchmark-duration is required (seconds of profiling)")
	}
	return r, nil
}

// selectGeneration reads the AgentX generation asked for outside
// --scenario: --agentx-generation, else $AGENTPERF_AGENTX_GENERATION. Both
// set and different is an error.
func (r *profileRun) selectGeneration() error {
	flag, env := r.p.generation, os.Getenv(envGeneration)
	switch {
	case flag != "" && env != "" && flag != env:
		return usagef("--agentx-generation %s and %s=%s disagree: set the AgentX generation once", flag, envGeneration, env)
	case flag != "":
		r.generationName = flag
	default:
		r.generationName = env
	}
	if r.generationName != "" {
		if _, err := scenario.LookupGeneration(r.generationName); err != nil {
			return usagef("AgentX generation: %v", err)
		}
	}
	return nil
}

// warmupGrace is the bound of the whole warmup: --agentic-warmup-grace-period
// when given, else --warmup-grace-period (both 0 = unlimited).
func (r *profileRun) warmupGrace() time.Duration {
	if r.fs.Changed("agentic-warmup-grace-period") {
		return seconds(r.p.graceAgentic)
	}
	return seconds(r.p.graceWarmup)
}

// runLog writes diagnostics to stderr and to logs/aiperf.log.
type runLog struct {
	mu      sync.Mutex
	w       io.Writer
	file    *os.File
	pending []string // lines logged before the file was opened
}

// openFile creates dir/logs/aiperf.log (and dir) and writes the lines
// logged so far into it.
func (l *runLog) openFile(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return fmt.Errorf("create --output-artifact-dir %s: %w", dir, err)
	}
	f, err := os.Create(filepath.Join(dir, "logs", "aiperf.log"))
	if err != nil {
		return fmt.Errorf("create log file in %s: %w (is the directory writable?)", dir, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.file = f
	for _, line := range l.pending {
		f.WriteString(line)
	}
	l.pending = nil
	return nil
}

// close closes the log file.
func (l *runLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
}

// toFile writes line to the file, or keeps it until the file is open.
// l.mu held.
func (l *runLog) toFile(line string) {
	if l.file != nil {
		l.file.WriteString(line)
		return
	}
	l.pending = append(l.pending, line)
}

// setOutput redirects the terminal side of the log (the file is kept).
func (l *runLog) setOutput(w io.Writer) {
	l.mu.Lock()
	l.w = w
	l.mu.Unlock()
}

// FileOnly writes a line to logs/aiperf.log only, for a message the
// terminal gets in another form (each error is shown once).
func (l *runLog) FileOnly(format string, args ...any) {
	line := logLine(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.toFile(line)
}

// logLine is one timestamped log line.
func logLine(format string, args ...any) string {
	line := time.Now().Format("15:04:05.000") + " " + fmt.Sprintf(format, args...)
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	return line
}

func (l *runLog) Printf(format string, args ...any) {
	line := logLine(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	io.WriteString(l.w, line)
	l.toFile(line)
}

func (r *profileRun) execute(ctx context.Context, io stdio) (retErr error) {
	p := r.p
	// The artifact folder is created once the inputs are known to be good
	// (corpus, tokenizer, server URL): a run refused at validation leaves
	// nothing behind. Log lines until then are kept and written first.
	lg := &runLog{w: io.err}
	defer lg.close()
	for _, n := range r.env.notes {
		lg.Printf("note: %s", n)
	}
	for _, n := range r.notes {
		lg.Printf("note: %s", n)
	}
	lg.Printf("replay semantics: AgentX %s — %s", r.generation.Name, r.generation.Doc)
	if stop, err := startProfiling(p, lg); err != nil {
		return asUsage(err)
	} else {
		defer stop()
	}

	// Dataset.
	openCtx := ctx
	if r.env.configTimeout > 0 {
		var cancel context.CancelFunc
		openCtx, cancel = context.WithTimeout(ctx, r.env.configTimeout)
		defer cancel()
	}
	t0 := time.Now()
	corpus, err := p.data.open(openCtx, io)
	if err != nil {
		return err
	}
	defer corpus.Close()
	traces, err := corpus.ReadTraces()
	if err != nil {
		return fmt.Errorf("read the corpus: %w", err)
	}

	// Tokenizer and synthesizer.
	tok, tokOrigin, err := resolveRunTokenizer(ctx, p, r.fs, io, lg.Printf)
	if err != nil {
		return err
	}
	r.tokOrigin = tokOrigin
	if tok.Approximate() {
		lg.Printf("tokenizer: %s (approximate: prompt token counts follow the trace only roughly; pass --tokenizer with the served model's tokenizer for exact counts)", tok.Name())
	}
	syn, err := synth.New(tok, synth.Options{Seed: r.seed, CacheDir: p.data.cacheDir(), Live: r.liveAssistant, Logf: lg.Printf})
	if err != nil {
		return fmt.Errorf("prompt synthesis: %w", err)
	}
	lg.Printf("start-up: corpus and prompt synthesizer ready in %s", time.Since(t0).Round(time.Millisecond))

	// Server: a URL, or the in-process simulator.
	url := p.url
	if r.server != "" {
		url = r.server
	} else if strings.HasPrefix(url, "sim://") {
		cfg, err := sim.ParseURL(url, sim.DefaultConfig())
		if err != nil {
			return asUsage(fmt.Errorf("--url %s: %w", url, err))
		}
		if cfg.Model == "" {
			cfg.Model = p.models[0]
		}
		if cfg.Tokenizer == nil && cfg.TokenizerName == "" {
			// Count prompts with the tokenizer that synthesized them, so the
			// simulator's prompt_tokens match the trace's counts.
			cfg.Tokenizer = tok
		}
		srv, err := sim.New(cfg)
		if err != nil {
			return asUsage(fmt.Errorf("--url %s: %w", url, err))
		}
		if err := srv.Start(); err != nil {
			return fmt.Errorf("start the in-process simulator: %w", err)
		}
		defer srv.Close()
		url = srv.URL
		lg.Printf("in-process simulator serving %q at %s", cfg.Model, url)
	}

	if err := lg.openFile(p.outputDir); err != nil {
		return asUsage(err)
	}

	// Exporters, scraper, live view.
	benchID := uuid.NewString()
	// The engine counts the requests in flight; the collector's live
	// window reads that count itself.
	progress := &replay.Progress{}
	col, err := metrics.NewCollector(p.outputDir, metrics.CollectorOptions{SliceDuration: seconds(p.sliceDuration), Version: productVersion(),
		ReserveBytes: r.checkFreeSpace(lg), InFlight: progress.InFlight.Load})
	if err != nil {
		return fmt.Errorf("open artifact files in %s: %w", p.outputDir, err)
	}
	var scr *server.Scraper
	if !p.noServerMetrics {
		urls := server.URLsFrom(url, append(append([]string(nil), p.serverMetrics...), r.env.serverMetricsURLs...), os.Getenv)
		// Server timeslices feed metrics_plots.png, so they default to 1 s
		// (InferenceX's --slice-duration) when --slice-duration is unset.
		slice := seconds(p.sliceDuration)
		if slice <= 0 {
			slice = server.DefaultSliceDuration
		}
		scr = server.New(server.Config{URLs: urls, Interval: r.env.scrapeInterval, SliceDuration: slice, Logf: lg.Printf,
			AIPerfVersion: productVersion(), BenchmarkID: benchID, InputConfig: r.inputConfig(),
			Headers: httpHeader(r.metricsHeaders), InferenceURL: url, InferenceHeaders: r.inferenceHeaders()})
		scr.Baseline(ctx)
	}
	pc := &phaseClock{duration: r.duration}
	// The scraper marks the profiling window itself; the log and the live
	// view's clock watch the same phase changes.
	obs := replay.Observers{&phaseLog{lg: lg, pc: pc, started: processStart}}
	if scr != nil {
		obs = append(obs, scr)
	}

	// Every value is taken as the flags give it (a Config from DefaultConfig:
	// 0 means 0, e.g. no grace period or no delay cap).
	cfg := replay.DefaultConfig()
	cfg.URL = url
	cfg.Endpoint = p.endpoint
	cfg.Models = p.models
	cfg.APIKey = r.apiKey
	cfg.Traces = traces
	cfg.Synth = syn
	cfg.Concurrency = r.concurrency
	cfg.Seed = r.seed
	cfg.StartMinRatio = p.startMin
	cfg.StartMaxRatio = p.startMax
	cfg.BenchmarkDuration = r.duration
	cfg.GracePeriod = seconds(p.graceBench)
	cfg.WarmupGracePeriod = r.warmupGrace()
	cfg.Generation = r.generation.Replay
	cfg.TurnStart = r.generation.TurnStart
	cfg.InterTurnDelayCap = r.delayCap
	cfg.TraceIdleGapCap = r.idleGapCap
	cfg.SystemIdleGapCap = r.sysIdleCap
	cfg.WarmupRequestsPerLane = p.warmupPerLane
	cfg.AgenticCacheWarmupDuration = seconds(p.cacheWarmup)
	cfg.BurstPhaseStarts = p.burstStarts
	cfg.DAGFailFast = r.env.dagFailFast
	cfg.AllowDatasetWrap = p.allowWrap
	cfg.CacheBust = r.cacheBust
	cfg.Streaming = r.streaming
	cfg.IgnoreEOS = r.ignoreEOS
	cfg.UseLegacyMaxTokens = p.legacyMaxTok
	cfg.SynthesisMaxOSL = p.data.synthesisMaxOSL()
	cfg.ExtraInputs = r.extra
	cfg.UseServerTokenCount = r.serverTok
	cfg.LiveAssistant = r.liveAssistant
	cfg.RequestTimeout = seconds(p.requestTO)
	cfg.ConnectTimeout = seconds(p.connectTO)
	cfg.Insecure = p.insecure
	cfg.Headers = r.headers
	cfg.SessionHeaders = replay.SessionHeaders{XSessionID: r.env.xSessionID, Dynamo: r.env.dynamo, SMG: r.env.smg}
	cfg.FailedRequestThreshold = p.threshold
	cfg.Sink = col // it routes context overflows to their own export (Record.Bucket)
	cfg.BenchmarkID = benchID
	cfg.Progress = progress
	cfg.Observer = obs
	cfg.Logf = lg.Printf
	if p.dynamoRouting {
		cfg.DynamoSession = &replay.DynamoSession{TimeoutSeconds: p.dynamoTimeout}
	}
	if cl, err := scenario.ClassifierFromEnv(os.Getenv); err != nil {
		return asUsage(err)
	} else {
		cfg.Classifier = cl
	}

	scrCtx, stopScr := context.WithCancel(context.Background())
	var scrWG sync.WaitGroup
	if scr != nil {
		scrWG.Add(1)
		go func() { defer scrWG.Done(); scr.Run(scrCtx) }()
	}
	stopNote := context.AfterFunc(ctx, func() {
		lg.Printf("interrupted: no new requests; in-flight requests get the %s grace period (a second signal cancels them at once), then every artifact is written", seconds(p.graceBench))
	})
	defer stopNote()
	lv := startLiveView(p, io.err, &liveSource{prog: progress, col: col, scr: scr, pc: pc, streaming: r.streaming,
		interrupted: func() bool { return ctx.Err() != nil }})
	lg.setOutput(lv.Log())
	// The second signal cuts the grace period short; the run still ends
	// through finish, which writes every artifact.
	cfg.KillNow = claimKillSwitch(ctx)
	runDone := make(chan struct{})
	if cfg.KillNow != nil {
		go func() {
			select {
			case <-cfg.KillNow:
				lg.Printf("interrupted twice: the requests in flight are cancelled now, without the grace period; every artifact is written from what was recorded")
			case <-runDone:
			}
		}()
	}
	res, err := replay.Run(ctx, cfg)
	close(runDone)
	if err := lv.Stop(); err != nil {
		lg.Printf("warning: live view: %v", err)
	}
	lg.setOutput(io.err)
	stopScr()
	scrWG.Wait()
	if err != nil {
		return asUsage(err)
	}
	if scr != nil {
		scr.Final(context.Background())
	}
	return r.finish(res, col, scr, corpus.Identity(), syn, lg, io)
}

// maxReserve is the room the collector keeps for the end of a run on a
// disk that fills up (the aggregates, the log; metrics.CollectorOptions).
const maxReserve = 1 << 20

// checkFreeSpace warns when the output directory has less room than the
// run will likely need (metrics.EstimateArtifactBytes) and returns the
// reserve to keep: maxReserve, or a quarter of the free space when that
// is less.
func (r *profileRun) checkFreeSpace(lg *runLog) int64 {
	dir := r.p.outputDir
	free, err := metrics.FreeBytes(dir)
	if err != nil {
		lg.Printf("note: free space in %s not checked: %v", dir, err)
		return maxReserve
	}
	if need := metrics.EstimateArtifactBytes(r.concurrency, r.duration); free < need {
		w := fmt.Sprintf("%s has %s free, but this run will likely write about %s (estimate: 2 MB of plots and reports, 8 KB per second of server metrics, and 2 KB per request at 0.25 requests per lane per second); a failed write stops the run: free space or pass another --output-artifact-dir",
			dir, humanBytes(free), humanBytes(need))
		lg.Printf("warning: %s", w)
		r.startWarnings = append(r.startWarnings, w)
	}
	return min(maxReserve, free/4)
}

// humanBytes formats n bytes with a binary unit.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// phaseLog logs the phase changes and keeps them for the live view.
type phaseLog struct {
	lg      *runLog
	pc      *phaseClock
	started time.Time // when the command started, for the start-up figure
}

func (o *phaseLog) WarmupStarted(requests int, at time.Time) {
	o.lg.Printf("start-up: first requests sent %s after the command started", at.Sub(o.started).Round(time.Millisecond))
	o.lg.Printf("warmup: %d requests planned (the start state of every lane, each with its full history, then any cache warmup)", requests)
}

func (o *phaseLog) ProfilingStarted(start, deadline time.Time) {
	o.pc.start.Store(start.UnixNano())
	o.lg.Printf("profiling: started, ends at %s", deadline.Format(time.TimeOnly))
}

func (o *phaseLog) ProfilingEnded(at time.Time) {
	o.pc.ended.Store(at.UnixNano())
	o.lg.Printf("profiling: ended")
}

// startProfiling starts the optional CPU profile and pprof server.
func startProfiling(p *profileFlags, lg *runLog) (func(), error) {
	var stops []func()
	if p.cpuProfile != "" {
		f, err := os.Create(p.cpuProfile)
		if err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := rpprof.StartCPUProfile(f); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		stops = append(stops, func() { rpprof.StopCPUProfile(); f.Close() })
	}
	if p.pprofAddr != "" {
		host, _, err := net.SplitHostPort(p.pprofAddr)
		if err != nil || (host != "127.0.0.1" && host != "localhost" && host != "::1") {
			return nil, fmt.Errorf("--pprof-addr %q: must be a loopback host:port", p.pprofAddr)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		srv := &http.Server{Addr: p.pprofAddr, Handler: mux, ErrorLog: log.New(io.Discard, "", 0)}
		go srv.ListenAndServe()
		stops = append(stops, func() { srv.Close() })
	}
	if p.memProfile != "" {
		stops = append(stops, func() {
			f, err := os.Create(p.memProfile)
			if err != nil {
				lg.Printf("warning: --memprofile: %v", err)
				return
			}
			runtime.GC()
			if err := rpprof.WriteHeapProfile(f); err != nil {
				lg.Printf("warning: --memprofile: %v", err)
			}
			f.Close()
		})
	}
	return func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}, nil
}
