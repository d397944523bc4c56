package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentperf/agentperf/internal/numfmt"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/promexport"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/run/rendezvous"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/gputelemetry"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// Run carries out a Spec: it loads the corpus and the synthesizer (unless
// Spec.Loaded is set), starts the in-process simulator for a sim:// URL,
// replays against the server while scraping its /metrics and feeding the
// live view, then writes every artifact and judges the run (Finish).
//
// Run returns an error only when nothing could be run: an *InputError for
// a bad Spec or inputs that cannot be loaded (nothing was written), or the
// context's error when it was cancelled while loading. Once requests were
// sent, every outcome (an abort, a failed write, an invalid submission, a
// cancelled run) is in the Outcome, and every artifact was written.
func Run(ctx context.Context, s Spec) (*Outcome, error) {
	r := &running{s: s}
	defer r.close()
	for _, stage := range []func(context.Context) error{r.start, r.connect, r.openSinks} {
		if err := stage(ctx); err != nil {
			return nil, err
		}
	}
	res, err := r.replay(ctx)
	if err != nil {
		return nil, inputErr(err)
	}
	return r.finish(res)
}

// running is one Run in progress: the pipeline of a run is start (log,
// corpus, server, folder), connect (the server ready, the shards met),
// openSinks (the record collector, the scrapers, the live outputs),
// replay, finish (Finish). Each stage adds what it opened to the cleanups,
// which Run undoes in reverse order.
type running struct {
	s        Spec
	lg       *runLog
	started  time.Time
	loaded   *Loaded
	url      string
	benchID  string
	peer     *rendezvous.Peer
	progress *replay.Progress
	prom     *promexport.Exporter
	warnings []string
	col      *metrics.Collector
	scr      *servermetrics.Scraper
	gpu      *gputelemetry.Collector
	pc       *phaseClock
	obs      replay.Observers
	cleanups []func()
}

// onClose adds fn to what Run undoes when it returns (last added, first
// undone).
func (r *running) onClose(fn func()) { r.cleanups = append(r.cleanups, fn) }

func (r *running) close() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// start validates the Spec, opens the run log, loads the corpus and the
// synthesizer, starts the in-process simulator for a sim:// URL and takes
// the artifact folder.
func (r *running) start(ctx context.Context) error {
	s := &r.s
	if err := s.Validate(); err != nil {
		return inputErr(err)
	}
	r.started = s.Started
	if r.started.IsZero() {
		r.started = time.Now()
	}
	r.lg = newRunLog(s.Log)
	r.onClose(r.lg.close)
	lg := r.lg
	for _, n := range s.Notes {
		lg.Printf("note: %s", n)
	}
	lg.Printf("replay semantics: AgentX %s — %s", s.Replay.Generation.Name, s.Replay.Generation.Doc)

	r.loaded = s.Loaded
	if r.loaded == nil {
		l, err := load(ctx, s, lg)
		if err != nil {
			return err
		}
		r.onClose(func() { l.Close() })
		r.loaded = l
	}

	// Server: a URL, or this run's own in-process simulator (the Spec
	// keeps its sim:// URL).
	srv, simCfg, err := s.startSimulator(r.loaded, false)
	if err != nil {
		return err
	}
	r.url = s.Replay.URL
	if srv != nil {
		r.onClose(func() { srv.Close() })
		r.url = srv.URL
		lg.Printf("in-process simulator serving %q at %s", simCfg.Model, r.url)
	}
	return r.claim()
}

// claim takes the artifact folder: one run per folder, the lock held
// until Run returns and taken before anything in the folder is touched
// (the log is truncated next).
func (r *running) claim() error {
	s := &r.s
	release, removed, err := claimFolder(s.OutputDir, s.OverwriteArtifacts)
	if err != nil {
		return inputErr(err)
	}
	r.onClose(release)
	if err := r.lg.openFile(s.OutputDir); err != nil {
		return inputErr(err)
	}
	if len(removed) > 0 {
		r.lg.Printf("--overwrite-artifacts: removed %d artifact(s) of an earlier run from %s: %s", len(removed), s.OutputDir, listNames(removed, 8))
	}
	return nil
}

// connect waits for the server when asked (a job that starts the server
// and the client together), resets its prefix cache when asked, and
// makes a shard meet the others now that its corpus is loaded (it takes
// shard 0's run id).
func (r *running) connect(ctx context.Context) error {
	s, lg := &r.s, r.lg
	if err := waitReady(ctx, s, lg.Printf); err != nil {
		return err
	}
	if s.ResetPrefixCache && !isSim(s.Replay.URL) {
		path, err := servermetrics.ResetAndDrain(ctx, r.url, servermetrics.ResetOptions{Headers: s.InferenceHeaders(), MetricsURLs: s.ServerMetrics.URLs})
		if err != nil {
			return fmt.Errorf("profile: Spec.ResetPrefixCache: %w", err)
		}
		lg.Printf("server idle, prefix cache reset (POST %s)", path)
	}
	r.benchID = uuid.NewString()
	peer, err := joinShards(ctx, s, r.benchID, r.loaded, lg)
	if err != nil {
		return err
	}
	if peer != nil {
		r.peer, r.benchID = peer, peer.RunID()
		r.onClose(func() {
			if err := peer.Close(); err != nil {
				lg.Printf("warning: shard %s: %v", s.Replay.Shard, err)
			}
		})
	}
	return nil
}

// openSinks opens what consumes the run while it replays: the live
// outputs plugged at the edge (liveOutputs), the record collector (the
// artifacts' records and aggregates), the server and GPU scrapers, and
// the observers of the phase changes. The run's tally (Progress) is the
// one count of its requests: the engine updates it, the collector (its
// aggregates and live window), the live view and the exporters read it.
func (r *running) openSinks(ctx context.Context) error {
	s := &r.s
	r.progress = s.Replay.Progress
	if r.progress == nil {
		r.progress = &replay.Progress{}
	}
	for _, plug := range liveOutputs {
		if err := plug(r); err != nil {
			return inputErr(err)
		}
	}
	reserve, warnings := checkFreeSpace(s, r.lg)
	r.warnings = warnings
	copt := metrics.CollectorOptions{SliceDuration: s.SliceDuration, Version: s.Version, ReserveBytes: reserve, Tally: &r.progress.Tally}
	if s.Replay.Streaming {
		// The live output token rate counts tokens as they arrive.
		copt.Streamed = r.progress.StreamedTokens
	}
	col, err := metrics.NewCollector(s.OutputDir, copt)
	if err != nil {
		return fmt.Errorf("open artifact files in %s: %w", s.OutputDir, err)
	}
	r.col = col
	// The collector gives its reserve up when it is closed; on every other
	// way out of Run the file must not stay behind either.
	r.onClose(func() { metrics.RemoveReserve(s.OutputDir) })
	r.scr = r.scraper(ctx)
	r.gpu = startGPUTelemetry(ctx, s, r.lg)
	r.pc = &phaseClock{duration: s.Replay.BenchmarkDuration}
	// The scraper marks the profiling window itself; the log and the live
	// view's clock watch the same phase changes. The collector's live
	// window turns to profiling records at the start.
	r.obs = replay.Observers{&phaseLog{lg: r.lg, pc: r.pc, started: r.started}, col}
	if r.scr != nil {
		r.obs = append(r.obs, r.scr)
	}
	if r.gpu != nil {
		r.obs = append(r.obs, r.gpu)
	}
	r.obs = append(r.obs, s.Observers...)
	return nil
}

// scraper starts the server-metrics scraper (its baseline scrape): nil
// when server metrics are off or the run is a shard other than 0 (a
// sharded run's server is scraped once).
func (r *running) scraper(ctx context.Context) *servermetrics.Scraper {
	s := &r.s
	if s.ServerMetrics.Off || s.Replay.Shard.Index != 0 {
		return nil
	}
	urls := servermetrics.URLsFrom(r.url, s.ServerMetrics.URLs, os.Getenv)
	// Server timeslices feed metrics_plots.png, so they default to 1 s
	// (InferenceX's --slice-duration) when SliceDuration is unset.
	slice := s.SliceDuration
	if slice <= 0 {
		slice = servermetrics.DefaultSliceDuration
	}
	scr := servermetrics.New(servermetrics.Config{URLs: urls, Interval: s.ServerMetrics.Interval, SliceDuration: slice, Logf: r.lg.Printf,
		AIPerfVersion: s.Version, BenchmarkID: r.benchID, InputConfig: s.inputConfig(),
		Headers: s.ServerMetrics.Headers, InferenceURL: r.url, InferenceHeaders: s.InferenceHeaders()})
	scr.Baseline(ctx)
	return scr
}

// engineConfig is the engine's configuration for this run: the Spec's,
// with the server, the corpus, the sinks and the observers.
func (r *running) engineConfig() replay.Config {
	s := &r.s
	cfg := s.replayConfig(r.url, r.loaded, r.progress)
	cfg.Sink = r.col // it routes context overflows to their own export (Record.Bucket)
	if s.Replay.Sink != nil {
		cfg.Sink = metrics.Tee(r.col, s.Replay.Sink)
	}
	cfg.BenchmarkID = r.benchID
	cfg.Observer = r.obs
	cfg.Logf = r.lg.Printf
	if r.peer != nil {
		cfg.Coordinator = r.peer
	}
	return cfg
}

// replay runs the engine with the scrapers in the background and the live
// view in front, then takes the scrapers' final scrapes.
func (r *running) replay(ctx context.Context) (*replay.Result, error) {
	cfg := r.engineConfig()
	stopScrapers := r.runScrapers()
	// The note stays armed until Run returns: a signal while the
	// artifacts are written is logged too.
	stopNote := context.AfterFunc(ctx, func() { r.lg.Printf("%s", interruptNote(ctx, cfg.GracePeriod)) })
	r.onClose(func() { stopNote() })
	stopView := r.startView(ctx, cfg)
	stopKillNote := r.killNote(cfg.KillNow)
	res, runErr := replay.Run(ctx, cfg)
	stopKillNote()
	stopView()
	stopScrapers()
	if runErr != nil {
		return nil, runErr
	}
	if r.scr != nil {
		r.scr.Final(context.Background())
	}
	if r.gpu != nil {
		r.gpu.Final(context.Background())
	}
	return res, nil
}

// runScrapers runs the server and GPU scrapers until the returned stop.
func (r *running) runScrapers() (stop func()) {
	scrCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if r.scr != nil {
		wg.Add(1)
		go func() { defer wg.Done(); r.scr.Run(scrCtx) }()
	}
	if r.gpu != nil {
		wg.Add(1)
		go func() { defer wg.Done(); r.gpu.Run(scrCtx) }()
	}
	return func() { cancel(); wg.Wait() }
}

// interruptNote is the log's line when ctx is cancelled during the replay.
func interruptNote(ctx context.Context, gracePeriod time.Duration) string {
	grace := fmt.Sprintf("the %s grace period", gracePeriod)
	var term *replay.Terminated
	if errors.As(context.Cause(ctx), &term) && term.Grace < gracePeriod {
		grace = fmt.Sprintf("at most %s (%s: the grace period is bounded so that the artifacts are written before a scheduler's kill)", term.Grace, term.Signal)
	}
	return "interrupted: no new requests; in-flight requests get " + grace + " (a second signal cancels them at once), then every artifact is written"
}

// startView starts the live view (Spec.View) when there is one; the log's
// terminal side goes through the view while it runs and back to the
// caller's writer when the returned stop is called.
func (r *running) startView(ctx context.Context, cfg replay.Config) (stop func()) {
	s := &r.s
	if s.View == nil {
		return func() {}
	}
	terminal := r.lg.raw()
	v := s.View(&liveSource{prog: r.progress, col: r.col, scr: r.scr, gpu: r.gpu, pc: r.pc, streaming: cfg.Streaming,
		interrupted: func() bool { return ctx.Err() != nil }, killed: closed(cfg.KillNow),
		maxContextLength: s.Corpus.Options.Select.MaxContextLength, advice: s.callerOverflowAdvice()})
	r.lg.setOutput(v.Log())
	r.onClose(func() { r.lg.setOutput(terminal) })
	return func() {
		if err := v.Stop(); err != nil {
			r.lg.Printf("warning: live view: %v", err)
		}
		r.lg.setOutput(terminal)
	}
}

// killNote logs the second signal (KillNow) while the replay runs; stop
// ends its watch.
func (r *running) killNote(kill <-chan struct{}) (stop func()) {
	if kill == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-kill:
			r.lg.Printf("interrupted twice: the requests in flight are cancelled now, without the grace period; every artifact is written from what was recorded")
		case <-done:
		}
	}()
	return func() { close(done) }
}

// finish writes every artifact and judges the run (Finish), then logs its
// warnings and problems.
func (r *running) finish(res *replay.Result) (*Outcome, error) {
	s := &r.s
	in := s.finishInput(r.col, r.scr, r.loaded, append(append([]string(nil), s.Warnings...), r.warnings...))
	in.GPU = r.gpu
	in.Shard = s.manifest(res, r.loaded, r.peer)
	out, err := Finish(res, in)
	if err != nil {
		return nil, err
	}
	out.Result, out.Dir, out.Tokenizer, out.Metrics = res, s.OutputDir, r.loaded.Tokenizer, r.prom
	for _, w := range append(append([]string(nil), out.Warnings...), out.LateWarnings...) {
		r.lg.Printf("warning: %s", w)
	}
	for _, pr := range out.Problems {
		if out.Fatal(pr) {
			r.lg.FileOnly("error: %s", pr.Message)
		} else {
			r.lg.FileOnly("note: %s", pr.Message)
		}
	}
	return out, nil
}

// liveOutputs are the consumers plugged into a run while it replays,
// besides the collector and the scrapers: each adds itself to the run's
// sinks and observers (Spec.Replay.Sink, Spec.Observers) and to the
// cleanups. One line per live output.
var liveOutputs = []func(*running) error{
	plugMetricsListen, // --metrics-listen: the live Prometheus endpoint
}

// startGPUTelemetry starts the GPU exporter collector of the run: nil when
// telemetry is off, the run is a shard other than 0 (the GPUs are
// measured once, like the server), or no exporter answered.
func startGPUTelemetry(ctx context.Context, s *Spec, lg *runLog) *gputelemetry.Collector {
	g := s.GPUTelemetry
	if g.Off || s.NoGPUTelemetry || s.Replay.Shard.Index != 0 || len(g.URLs)+len(g.Probe) == 0 {
		return nil
	}
	c := gputelemetry.New(gputelemetry.Config{URLs: g.URLs, Probe: g.Probe, Interval: g.Interval, Logf: lg.Printf, Quietf: lg.FileOnly})
	if c.Start(ctx) == 0 {
		return nil
	}
	lg.Printf("GPU telemetry: scraping %s", strings.Join(c.URLs(), ", "))
	return c
}

// replayConfig is the engine's configuration: the Spec's replay settings
// with what Run derives (the server's address, the corpus, the
// synthesizer, the cache-bust marker, the run's tally p and the
// failed-request threshold, which reads it).
func (s *Spec) replayConfig(url string, l *Loaded, p *replay.Progress) replay.Config {
	cfg := s.Replay
	cfg.URL = url
	cfg.Traces = l.Traces
	cfg.Synth = l.Synth
	cfg.Progress = p
	cfg.Threshold = s.threshold(p)
	cfg.CacheBust = cacheBust(s.CacheBust)
	return cfg
}

// finishInput is Finish's Input for this Spec.
func (s *Spec) finishInput(col *metrics.Collector, scr *servermetrics.Scraper, l *Loaded, warnings []string) Input {
	advice := s.callerOverflowAdvice()
	return Input{
		Dir: s.OutputDir, Collector: col, Scraper: scr,
		Scenario: s.Scenario, StaticReasons: s.Validity,
		Duration: s.Replay.BenchmarkDuration, Coverage: s.Coverage, Concurrency: s.Replay.Concurrency,
		OverflowRateLimit: s.OverflowRateLimit, OverflowAdvice: advice, MaxContextLength: s.Corpus.Options.Select.MaxContextLength,
		InputConfig: s.inputConfig(), Corpus: l.identity(), PublicDataset: s.loaderKind() == scenario.LoaderPublic,
		Synth: l.Synth, Tokenizer: l.Tokenizer,
		RequiredServerMetricPrefix: s.ServerMetrics.RequiredPrefix,
		FailedRequestThreshold:     s.FailedRequestThreshold,
		Warnings:                   warnings,
		NoPlot:                     s.NoPlot,
		FailOnInvalid:              s.FailOnInvalid,
		Signals:                    s.Signals,
	}
}

// callerOverflowAdvice is the caller's overflow advice: Spec.OverflowAdvice,
// or the default (overflowAdvice below).
func (s *Spec) callerOverflowAdvice() string {
	if s.OverflowAdvice != "" {
		return s.OverflowAdvice
	}
	return s.overflowAdvice()
}

// overflowAdvice says how to stop context overflows from agentperf's side.
func (s *Spec) overflowAdvice() string {
	a := "or pass --max-context-length N (the server's context window in tokens) so that only the traces that fit are replayed"
	if isSim(s.Replay.URL) {
		a += "; the in-process simulator's window is set in the URL, e.g. sim://?max-model-len=262144 (default 131072)"
	}
	return a
}

// checkFreeSpace removes a reserve file an earlier run in the folder left
// behind (it was killed, or crashed), warns when the output directory has
// less room than the run will likely need (metrics.EstimateArtifactBytes)
// and returns the reserve to keep: the room the run's aggregates take
// (metrics.ReserveFor), but never more than half the free space
// (metrics.ReserveShare), so that the reserve cannot fill the disk that
// other writers share (then the first record that does not fit ends the
// run, and its aggregate is still written).
func checkFreeSpace(s *Spec, lg *runLog) (int64, []string) {
	dir := s.OutputDir
	var warnings []string
	if n, err := metrics.RemoveReserve(dir); err != nil {
		lg.Printf("warning: %v", err)
	} else if n > 0 {
		w := fmt.Sprintf("removed %s, %s left by an earlier run in %s that did not end (killed or crashed)", metrics.FileReserve, numfmt.Bytes(n), dir)
		lg.Printf("note: %s", w)
		warnings = append(warnings, w)
	}
	reserve := metrics.ReserveFor(s.Replay.Concurrency, s.Replay.BenchmarkDuration, s.SliceDuration)
	free, err := metrics.FreeBytes(dir)
	if err != nil {
		lg.Printf("note: free space in %s not checked: %v", dir, err)
		return reserve, warnings
	}
	if need := metrics.EstimateArtifactBytes(s.Replay.Concurrency, s.Replay.BenchmarkDuration); free < need {
		w := fmt.Sprintf("%s has %s free, but this run will likely write about %s (estimate: 2 MB of plots and reports, 8 KB per second of server metrics, and 2 KB per request at 0.25 requests per lane per second); a failed write stops the run: free space or pass another --output-artifact-dir",
			dir, numfmt.Bytes(free), numfmt.Bytes(need))
		lg.Printf("warning: %s", w)
		warnings = append(warnings, w)
	}
	if bound := metrics.ReserveBound(free); reserve > bound {
		w := fmt.Sprintf("the aggregates of this run may take up to %s (%d lanes, %s of profiling, --slice-duration %s), but %s has %s free: the reserve kept for them is cut to %s (half the free space), so they may not fit on a full disk",
			numfmt.Bytes(reserve), s.Replay.Concurrency, s.Replay.BenchmarkDuration, s.SliceDuration, dir, numfmt.Bytes(free), numfmt.Bytes(bound))
		lg.Printf("warning: %s", w)
		warnings = append(warnings, w)
		reserve = bound
	}
	return reserve, warnings
}

// loaderKind is LoaderKind of the Spec's corpus (unset for traces in
// memory).
func (s *Spec) loaderKind() scenario.LoaderKind {
	if s.Corpus.Traces != nil {
		return scenario.LoaderUnset
	}
	k, _, _ := LoaderKind(s.Corpus.Source)
	return k
}
