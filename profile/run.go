package profile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentperf/agentperf/gputelemetry"
	"github.com/agentperf/agentperf/internal/numfmt"
	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/servermetrics"
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
	if err := s.Validate(); err != nil {
		return nil, inputErr(err)
	}
	started := s.Started
	if started.IsZero() {
		started = time.Now()
	}
	lg := newRunLog(s.Log)
	defer lg.close()
	for _, n := range s.Notes {
		lg.Printf("note: %s", n)
	}
	lg.Printf("replay semantics: AgentX %s — %s", s.Replay.Generation.Name, s.Replay.Generation.Doc)

	loaded := s.Loaded
	if loaded == nil {
		l, err := load(ctx, &s, lg)
		if err != nil {
			return nil, err
		}
		defer l.Close()
		loaded = l
	}

	// Server: a URL, or the in-process simulator.
	srv, simCfg, err := StartSimulator(s.Replay.URL, s.Replay.Models[0], loaded.Synth.Tokenizer())
	if err != nil {
		return nil, err
	}
	url := s.Replay.URL
	if srv != nil {
		defer srv.Close()
		url = srv.URL
		lg.Printf("in-process simulator serving %q at %s", simCfg.Model, url)
		s.readSimulatorGPU(srv, simCfg)
	}

	// One run per folder: the lock is held until Run returns, and is taken
	// before anything in the folder is touched (the log is truncated
	// next).
	release, removed, err := claimFolder(s.OutputDir, s.OverwriteArtifacts)
	if err != nil {
		return nil, inputErr(err)
	}
	defer release()
	if err := lg.openFile(s.OutputDir); err != nil {
		return nil, inputErr(err)
	}
	if len(removed) > 0 {
		lg.Printf("--overwrite-artifacts: removed %d artifact(s) of an earlier run from %s: %s", len(removed), s.OutputDir, listNames(removed, 8))
	}
	// The server may still be loading its model (a job that starts the
	// server and the client together): wait for it, when asked.
	if err := waitReady(ctx, &s, lg.Printf); err != nil {
		return nil, err
	}
	if s.ResetPrefixCache && !isSim(s.Replay.URL) {
		path, err := servermetrics.ResetAndDrain(ctx, url, servermetrics.ResetOptions{Headers: s.InferenceHeaders(), MetricsURLs: s.ServerMetrics.URLs})
		if err != nil {
			return nil, fmt.Errorf("profile: Spec.ResetPrefixCache: %w", err)
		}
		lg.Printf("server idle, prefix cache reset (POST %s)", path)
	}

	// A shard meets the others now that its corpus is loaded, and takes
	// shard 0's run id.
	benchID := uuid.NewString()
	peer, err := joinShards(ctx, &s, benchID, loaded, lg)
	if err != nil {
		return nil, err
	}
	if peer != nil {
		benchID = peer.RunID()
		defer func() {
			if err := peer.Close(); err != nil {
				lg.Printf("warning: shard %s: %v", s.Replay.Shard, err)
			}
		}()
	}

	// Sinks, scraper, live view. The run's tally (Progress) is the one
	// count of its requests: the engine updates it, the collector (its
	// aggregates and live window) and the live view read it.
	progress := s.Replay.Progress
	if progress == nil {
		progress = &replay.Progress{}
	}
	prom, err := plugMetricsListen(&s, progress, lg)
	if err != nil {
		return nil, inputErr(err)
	}
	if prom != nil {
		defer prom.Close()
	}
	reserve, warnings := checkFreeSpace(&s, lg)
	copt := metrics.CollectorOptions{SliceDuration: s.SliceDuration, Version: s.Version, ReserveBytes: reserve, Tally: &progress.Tally}
	if s.Replay.Streaming {
		// The live output token rate counts tokens as they arrive.
		copt.Streamed = progress.StreamedTokens
	}
	col, err := metrics.NewCollector(s.OutputDir, copt)
	if err != nil {
		return nil, fmt.Errorf("open artifact files in %s: %w", s.OutputDir, err)
	}
	// The collector gives its reserve up when it is closed; on every other
	// way out of Run the file must not stay behind either.
	defer metrics.RemoveReserve(s.OutputDir)
	var scr *servermetrics.Scraper
	if !s.ServerMetrics.Off && s.Replay.Shard.Index == 0 { // a sharded run's server is scraped once, by shard 0
		urls := servermetrics.URLsFrom(url, s.ServerMetrics.URLs, os.Getenv)
		// Server timeslices feed metrics_plots.png, so they default to 1 s
		// (InferenceX's --slice-duration) when SliceDuration is unset.
		slice := s.SliceDuration
		if slice <= 0 {
			slice = servermetrics.DefaultSliceDuration
		}
		scr = servermetrics.New(servermetrics.Config{URLs: urls, Interval: s.ServerMetrics.Interval, SliceDuration: slice, Logf: lg.Printf,
			AIPerfVersion: s.Version, BenchmarkID: benchID, InputConfig: s.inputConfig(),
			Headers: s.ServerMetrics.Headers, InferenceURL: url, InferenceHeaders: s.InferenceHeaders()})
		scr.Baseline(ctx)
	}
	gpu := startGPUTelemetry(ctx, &s, lg)
	pc := &phaseClock{duration: s.Replay.BenchmarkDuration}
	// The scraper marks the profiling window itself; the log and the live
	// view's clock watch the same phase changes.
	// The collector's live window turns to profiling records at the start.
	obs := replay.Observers{&phaseLog{lg: lg, pc: pc, started: started}, col}
	if scr != nil {
		obs = append(obs, scr)
	}
	if gpu != nil {
		obs = append(obs, gpu)
	}
	obs = append(obs, s.Observers...)

	cfg := s.replayConfig(url, loaded, progress)
	cfg.Sink = col // it routes context overflows to their own export (Record.Bucket)
	if s.Replay.Sink != nil {
		cfg.Sink = metrics.Tee(col, s.Replay.Sink)
	}
	cfg.BenchmarkID = benchID
	cfg.Observer = obs
	cfg.Logf = lg.Printf
	if peer != nil {
		cfg.Coordinator = peer
	}

	scrCtx, stopScr := context.WithCancel(context.Background())
	var scrWG sync.WaitGroup
	if scr != nil {
		scrWG.Add(1)
		go func() { defer scrWG.Done(); scr.Run(scrCtx) }()
	}
	if gpu != nil {
		scrWG.Add(1)
		go func() { defer scrWG.Done(); gpu.Run(scrCtx) }()
	}
	stopNote := context.AfterFunc(ctx, func() {
		grace := fmt.Sprintf("the %s grace period", cfg.GracePeriod)
		var term *replay.Terminated
		if errors.As(context.Cause(ctx), &term) && term.Grace < cfg.GracePeriod {
			grace = fmt.Sprintf("at most %s (%s: the grace period is bounded so that the artifacts are written before a scheduler's kill)", term.Grace, term.Signal)
		}
		lg.Printf("interrupted: no new requests; in-flight requests get %s (a second signal cancels them at once), then every artifact is written", grace)
	})
	defer stopNote()
	var view interface {
		Log() io.Writer
		Stop() error
	}
	// The log's terminal side goes through the view while it runs and
	// back to the caller's writer when it stops.
	terminal := lg.raw()
	if s.View != nil {
		v := s.View(&liveSource{prog: progress, col: col, scr: scr, gpu: gpu, pc: pc, streaming: cfg.Streaming,
			interrupted: func() bool { return ctx.Err() != nil }, killed: closed(cfg.KillNow),
			maxContextLength: s.Corpus.Options.Select.MaxContextLength, advice: s.callerOverflowAdvice()})
		view = v
		lg.setOutput(v.Log())
		defer lg.setOutput(terminal)
	}
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
	res, runErr := replay.Run(ctx, cfg)
	close(runDone)
	if view != nil {
		if err := view.Stop(); err != nil {
			lg.Printf("warning: live view: %v", err)
		}
		lg.setOutput(terminal)
	}
	stopScr()
	scrWG.Wait()
	if runErr != nil {
		return nil, inputErr(runErr)
	}
	if scr != nil {
		scr.Final(context.Background())
	}
	if gpu != nil {
		gpu.Final(context.Background())
	}
	in := s.finishInput(col, scr, loaded, append(append([]string(nil), s.Warnings...), warnings...))
	in.GPU = gpu
	in.Shard = s.manifest(res, loaded, peer)
	out, err := Finish(res, in)
	if err != nil {
		return nil, err
	}
	out.Result, out.Dir, out.Tokenizer, out.Metrics = res, s.OutputDir, loaded.Tokenizer, prom
	for _, w := range append(append([]string(nil), out.Warnings...), out.LateWarnings...) {
		lg.Printf("warning: %s", w)
	}
	for _, pr := range out.Problems {
		if out.Fatal(pr) {
			lg.FileOnly("error: %s", pr.Message)
		} else {
			lg.FileOnly("note: %s", pr.Message)
		}
	}
	return out, nil
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
