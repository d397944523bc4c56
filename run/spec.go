package run

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/internal/hfhub"
	"github.com/agentperf/agentperf/internal/inputerr"
	"github.com/agentperf/agentperf/replay"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/text/chattemplate"
	"github.com/agentperf/agentperf/text/prompttext"
	"github.com/agentperf/agentperf/text/tokenizer"
	"github.com/agentperf/agentperf/ui"
)

// Spec is one run with every setting resolved: what to replay (the
// corpus, the tokenizer), against which server, with which replay
// settings, and where the artifacts go. Run carries it out. A CLI builds a
// Spec from its flags and environment; an embedder fills one in Go
// (NewSpec holds every default).
//
// Everything a run's artifacts record about their settings
// (input_config, the run metadata) and the engine's replay.Config are
// derived from the Spec, in one place (Run).
type Spec struct {
	// Scenario is the scenario preset's name ("" = none). Submission
	// validity is a scenario's notion: without one, the verdict's findings
	// are warnings, except a run that completed no request, which fails.
	Scenario string
	// Validity are the reasons the run is already not a valid submission
	// (scenario.Preset.Enforce: unsafe_override).
	Validity []string
	// UnsafeOverride records that the scenario's locks were overridden
	// (input_config.unsafe_override).
	UnsafeOverride bool

	// Corpus is where the traces come from.
	Corpus Corpus
	// Tokenizer says which tokenizer synthesizes the prompts.
	Tokenizer Tokenizer

	// Replay is the engine's settings, as replay.DefaultConfig documents
	// them. Replay.Generation is the AgentX generation replayed, the one
	// source of the replay semantics (required: the zero value is
	// refused). Replay.URL is the server (http(s)://host[:port]) or sim://…
	// for the in-process simulator (sim.ParseURL's keys).
	// Replay.Classifier recognises context overflows (NewSpec: the
	// preset's, scenario.DefaultClassifier). Run fills what it derives:
	// Traces, Synth, CacheBust (from the Spec's CacheBust), Observer,
	// BenchmarkID, Logf and Threshold (from FailedRequestThreshold); a
	// Sink set here receives every record besides the run's collector,
	// and a Progress set here (a new one: it is the run's tally) is the
	// one the run counts in.
	Replay replay.Config
	// CacheBust is where each session tree's cache-bust marker goes
	// (--cache-bust; "" or scenario.CacheBustNone: no marker). Run gives
	// the engine the preset's markers (scenario.Marker) at that place.
	CacheBust scenario.CacheBust
	// FailedRequestThreshold is --failed-request-threshold, a fraction in
	// (0, 1] (0 = off): the run is aborted once its profiling requests
	// fail above it with 99.9 % confidence, judged in the order they were
	// sent (scenario.Threshold, over the run's tally; in a sharded run
	// shard 0 also judges every shard's totals;
	// docs/failed-request-threshold.md).
	FailedRequestThreshold float64

	// Coverage is the coverage rule (scenario.Preset.CoverageRatio over
	// phases of at least its MinDuration; ApplyScenario sets it): Required
	// and MinPhase are used, the rest is measured by the run. The zero
	// value judges no coverage.
	Coverage scenario.Coverage
	// StatsInterval is --stats-interval: the period of the live
	// statistics lines (recorded in input_config; a CLI's live view reads
	// it).
	StatsInterval time.Duration
	// NoGPUTelemetry is --no-gpu-telemetry (recorded in input_config).
	NoGPUTelemetry bool

	// WaitForModel is the readiness wait before the first request (zero:
	// none; the in-process simulator is ready once started).
	WaitForModel WaitForModel
	// ResetPrefixCache, before the first request, drains the server and
	// resets its prefix cache (servermetrics.ResetAndDrain), so that an
	// earlier run's cache does not flatter this one. The in-process
	// simulator starts empty.
	ResetPrefixCache bool

	// OutputDir is the artifact folder (required).
	OutputDir string
	// SliceDuration enables the timeslice exports (0 = off); the server
	// metrics' slices default to server.DefaultSliceDuration.
	SliceDuration time.Duration
	// NoPlot leaves metrics_plots.png out.
	NoPlot bool
	// ServerMetrics configures the /metrics scraper.
	ServerMetrics ServerMetrics
	// GPUTelemetry configures the GPU exporter collector (the zero value
	// collects nothing; docs/gpu-telemetry.md).
	GPUTelemetry GPUTelemetry
	// MetricsListen, when set (host:port), serves the run's client-side
	// figures live in the Prometheus exposition format at /metrics
	// (metrics/promexport; docs/metrics-listen.md).
	MetricsListen string
	// OverflowRateLimit is the largest valid context-overflow rate, a
	// fraction in [0, 1]; unset is scenario.DefaultOverflowRateLimit.
	OverflowRateLimit scenario.Opt[float64]
	// OverflowAdvice, when set, replaces the default advice appended to an
	// overflow-rate finding (a CLI names its flags).
	OverflowAdvice string
	// Settings are extra input_config entries: how the caller named
	// settings that the Spec holds resolved (e.g. the tokenizer as typed).
	Settings map[string]any
	// Warnings are warnings found before the run, written first in
	// metadata.warnings.
	Warnings []string

	// Log receives the run's log lines (timestamped; they also go to
	// logs/aiperf.log) and the corpus loading lines. nil discards them.
	// A failed write to it (a closed pipe) never stops the run: the log
	// file notes it once.
	Log io.Writer
	// FailOnInvalid makes every reason the run is not a valid submission
	// fail it (Outcome.ExitCode 1) instead of the pinned aiperf's rule
	// under a scenario (Input.FailOnInvalid).
	FailOnInvalid bool
	// Signals, when set, returns how many interrupts (signals) the caller
	// has received; a signal while the artifacts are written marks the
	// run interrupted (Input.Signals).
	Signals func() int
	// Notes are lines logged first, prefixed "note: ".
	Notes []string
	// View, when set, starts the live view over the run's live figures;
	// log lines go to the view's Log writer while it runs.
	View func(ui.Source) ui.View
	// Observers are told about phase changes, besides Run's own.
	Observers replay.Observers
	// Version is the product version written into the artifacts.
	Version string
	// Started is when the caller started, for the start-up figure in the
	// log (zero: when Run was called).
	Started time.Time

	// Shard, when set, makes the run one shard of a sharded run
	// (docs/distributed.md): Replay.Shard is its share of the
	// Replay.Concurrency global lanes; with more than one shard it meets
	// the others at Shard.Rendezvous (shard 0 listens there) once its
	// corpus is loaded, takes shard 0's run id, passes the run's
	// barriers with them, and stops when one of them stops. Only shard 0
	// scrapes the server's /metrics. Finish writes the shard's manifest
	// (FileShard) for Merge.
	Shard *ShardSpec

	// OverwriteArtifacts lets Run use an OutputDir that holds another
	// run's artifacts (--overwrite-artifacts): they are removed first.
	// Without it such a folder is refused (docs/artifacts.md, "One run per
	// folder").
	OverwriteArtifacts bool

	// Memory returns the memory the process may use, against which
	// Validate checks the lanes (BytesPerLane each); nil is
	// AvailableMemory. ok false skips the check.
	Memory func() (m Memory, ok bool)

	// Loaded, when set, is a corpus and synthesizer loaded before (Load):
	// Run reuses them instead of loading Corpus and Tokenizer again. A
	// sweep point is a Spec with Loaded set and another concurrency and
	// OutputDir.
	Loaded *Loaded
}

// ShardSpec is what a shard of a sharded run needs besides its share of
// the lanes (Spec.Replay.Shard).
type ShardSpec struct {
	// Rendezvous is HOST:PORT where shard 0 listens (required with more
	// than one shard).
	Rendezvous string
	// Argv is the command line every shard of the run must share
	// (ShardArgv: the shard's own value left out); with the seed, the
	// corpus digest and the lane count it is the run's key.
	Argv []string
	// JoinTimeout bounds the wait for the other shards at the start
	// (0: rendezvous.DefaultJoinTimeout).
	JoinTimeout time.Duration
}

// Corpus says where a run's traces come from: a source that
// dataset.Open resolves, or traces already in memory.
type Corpus struct {
	// Source names the corpus (a file, a public alias, an HF repo, or
	// synthetic[:…]).
	Source dataset.Source
	// Options are dataset.Open's (selection, cache, hub, log).
	Options dataset.Options
	// OpenTimeout bounds opening the corpus (0 = none).
	OpenTimeout time.Duration
	// Traces, when set, is the corpus in memory; Source and Options are
	// then unused.
	Traces []dataset.Trace
}

// Tokenizer says which tokenizer builds the prompts.
type Tokenizer struct {
	// Name is the tokenizer: a Hugging Face model id, a tokenizer.json, a
	// folder, or "builtin". "" is the first model name, as aiperf does;
	// with the in-process simulator and a model name that is no hub id,
	// that is the builtin tokenizer.
	Name string
	// Options resolve Name (revision, environment; a hub client set here
	// is used as it is).
	Options tokenizer.ResolveOptions
	// Hub, when set and Options.Hub is not, makes the hub client for a
	// hub model id missing from the cache; it is called only then (nil:
	// the cache only, nothing touches the network).
	Hub func() (*hfhub.Client, error)
	// Given, when set, is the tokenizer itself; Name is then unused.
	Given tokenizer.Tokenizer
	// CacheDir is where the tokenized prompt corpus is cached ("" = not
	// cached).
	CacheDir string
	// ApplyChatTemplate is --apply-chat-template: Load reads the model's
	// chat template (the tokenizer_config.json beside the tokenizer file)
	// into Loaded.ChatTemplate and logs what it adds to a prompt. Requests
	// are not changed: they carry chat messages, which the server renders
	// with its template, as aiperf's do (docs/prompt-synthesis.md, "The
	// chat template").
	ApplyChatTemplate bool
}

// ServerMetrics configures the Prometheus /metrics scraper.
type ServerMetrics struct {
	// Off disables scraping.
	Off bool
	// URLs are the endpoints to scrape besides the one derived from the
	// server's URL (server.URLsFrom).
	URLs []string
	// Headers are sent with every scrape.
	Headers http.Header
	// Interval is the scrape interval (0 = the scraper's default).
	Interval time.Duration
	// RequiredPrefix, when set, fails a run whose export holds no metric
	// with this prefix.
	RequiredPrefix string
}

// GPUTelemetry configures the collector of GPU exporter metrics
// (gputelemetry): DCGM's and AMD's exporters, scraped during the run, the
// energy of the profiling window and its efficiency.
type GPUTelemetry struct {
	// Off disables collection (--no-gpu-telemetry); so does
	// Spec.NoGPUTelemetry (which a preset's default may set).
	Off bool
	// URLs are exporters the user named: a failed scrape is a warning.
	URLs []string
	// Probe are default exporters (gputelemetry.DefaultURLs), scraped
	// only when they answer the first scrape.
	Probe []string
	// Interval is the scrape interval (0 = gputelemetry.DefaultInterval).
	Interval time.Duration
}

// NewSpec returns a Spec holding every default: the default AgentX
// generation and the engine's defaults (replay.DefaultConfig), with the
// scenario preset's context-overflow classifier
// (scenario.DefaultClassifier). Fill in the corpus, the server URL, the
// model names, the concurrency, the duration and the artifact folder.
func NewSpec() Spec {
	s := Spec{Replay: replay.DefaultConfig()}
	s.Replay.Classifier = scenario.DefaultClassifier()
	return s
}

// Loaded is what Load built once and several runs can share: the opened
// corpus, its traces, and the synthesizer (with its tokenizer).
type Loaded struct {
	// Corpus is the opened corpus (nil for traces given in memory).
	Corpus *dataset.Corpus
	// Traces are the traces to replay, in source order.
	Traces []dataset.Trace
	// Synth builds the prompts.
	Synth *prompttext.Synthesizer
	// Tokenizer is where the synthesizer's tokenizer came from.
	Tokenizer tokenizer.Origin
	// ChatTemplate is the model's chat template when
	// Spec.Tokenizer.ApplyChatTemplate asked for it and the tokenizer has
	// one (nil otherwise).
	ChatTemplate *chattemplate.Template
	// Took is how long loading took.
	Took time.Duration
}

// Close releases the corpus mapping.
func (l *Loaded) Close() error {
	if l == nil || l.Corpus == nil {
		return nil
	}
	return l.Corpus.Close()
}

// identity is the corpus identity for the metadata (zero for traces in
// memory).
func (l *Loaded) identity() dataset.Identity {
	if l.Corpus == nil {
		return dataset.Identity{}
	}
	return l.Corpus.Identity()
}

// InputError is an error in a Spec's inputs found before anything was
// sent: a bad setting, a corpus or tokenizer that cannot be loaded, a
// simulator URL it cannot parse. Nothing was written. A CLI reports it as
// a usage error.
// It is the type of every package's InputError (inputerr.Error).
type InputError = inputerr.Error

func inputErr(err error) error { return inputerr.Wrap(err) }

// Validate reports what Run would refuse in s before it loads anything:
// the engine's settings (replay.Config.ValidateSettings; the corpus, the
// synthesizer and the sink Run derives are checked by replay.Run), the
// artifact folder, the overflow-rate limit, the shard's rendezvous. Run
// and Load call it first.
func (s *Spec) Validate() error {
	var errs []error
	r := s.Replay
	if isSim(r.URL) {
		// The in-process simulator's address is known once it has
		// started; any http URL stands for it here.
		r.URL = "http://127.0.0.1"
	}
	if err := r.ValidateSettings(); err != nil {
		errs = append(errs, simHint(err, s.Replay.URL))
	}
	if s.OutputDir == "" {
		errs = append(errs, errors.New("profile: Spec.OutputDir: required (the artifact folder)"))
	}
	if err := s.WaitForModel.validate(); err != nil {
		errs = append(errs, err)
	}
	if f := s.FailedRequestThreshold; !(f >= 0 && f <= 1) {
		errs = append(errs, fmt.Errorf("profile: Spec.FailedRequestThreshold %v: want a fraction in (0, 1], e.g. 0.10 for 10%% (0 = off)", f))
	}
	if l := s.OverflowRateLimit; l.Set && !(l.V >= 0 && l.V <= 1) {
		errs = append(errs, fmt.Errorf("profile: Spec.OverflowRateLimit %v: want a fraction between 0 and 1", l.V))
	}
	if sh := s.Replay.Shard; sh.Sharded() && (s.Shard == nil || s.Shard.Rendezvous == "") {
		errs = append(errs, fmt.Errorf("profile: Spec.Shard.Rendezvous: required for shard %s (HOST:PORT where shard 0 listens)", sh))
	}
	if sh := s.Replay.Shard; sh.Sharded() && isSim(s.Replay.URL) {
		// Each shard would start its own in-process simulator: the merge
		// would present one run against as many servers as shards.
		errs = append(errs, fmt.Errorf("profile: Config.URL %s with shard %s: every shard would run its own in-process simulator, and the merged run would not be one run against one server; start one simulator (agentperf sim --port 8000) and give every shard its URL (--url http://HOST:8000)", RedactURL(s.Replay.URL), sh))
	}
	if s.Replay.Concurrency >= 1 {
		memory := s.Memory
		if memory == nil {
			memory = AvailableMemory
		}
		if m, ok := memory(); ok {
			if err := checkLanes(s.processLanes(), m); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// simHint adds the in-process simulator to the Config.URL errors of err
// when url is not an http(s) URL: the other kind of server a Spec takes.
func simHint(err error, url string) error {
	if strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") {
		return err
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = append([]error(nil), j.Unwrap()...)
	}
	for i, e := range errs {
		var fe *replay.FieldError
		if errors.As(e, &fe) && fe.Field == "Config.URL" {
			errs[i] = fmt.Errorf("%w (or sim:// for the in-process simulator)", e)
		}
	}
	return errors.Join(errs...)
}

// isSim reports whether the URL names the in-process simulator.
func isSim(url string) bool { return strings.HasPrefix(url, "sim:") }
