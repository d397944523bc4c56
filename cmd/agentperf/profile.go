package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentperf/agentperf/internal/suggest"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/internal/hfhub"
	"github.com/agentperf/agentperf/internal/selfprofile"
	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/gputelemetry"
	"github.com/agentperf/agentperf/timing"
	"github.com/agentperf/agentperf/ui"
)

func init() {
	register(command{name: "profile", summary: "replay a trace corpus against a server and write aiperf-compatible artifacts", run: runProfile})
}

const profileExamples = `  # The embedded defaults: in-process simulator, synthetic corpus (about a minute)
  agentperf profile --url sim:// --public-dataset synthetic --model demo \
      --concurrency 8 --benchmark-duration 30 --streaming --use-server-token-count

  # InferenceX AgentX as its current client runs it: the agentx preset supplies the rest
  # (3600 s, seed 42, warmup, threshold, idle cap, 393 entries, …; listed under Scenarios)
  agentperf profile --scenario agentx --url http://localhost:8000 --model my-model \
      --tokenizer org/model --concurrency 32 --benchmark-duration 3600 \
      --tokenizer-trust-remote-code --output-artifact-dir results/aiperf_artifacts \
      --public-dataset semianalysis_cc_traces_weka_062126_256k

  # InferenceX AgentX as its v1.0.5 launcher ran it (v1.0 semantics) against a local vLLM
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

// scenarioHelp lists the scenario presets, as the library describes them
// (scenario.Preset.Describe), ahead of the examples.
func scenarioHelp() string {
	var b strings.Builder
	b.WriteString("\nScenarios (--scenario NAME; docs/replay.md):\n")
	for _, p := range scenario.Presets() {
		for _, l := range p.Describe() {
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String()
}

// runProfile is `agentperf profile`: flags → config → replay.Run → artifacts.
func runProfile(ctx context.Context, args []string, io stdio) error {
	fs := newFlagSet("profile", "profile --url URL --model NAME --concurrency N --benchmark-duration S [flags]", profileExamples, io.out)
	usage := fs.Usage
	fs.Usage = func() { usage(); fmt.Fprint(fs.Output(), scenarioHelp()) }
	p := addProfileFlags(fs)
	// sweep and search have it among their point flags (before every point).
	fs.StringVar(&p.output, "output", "text", "what stdout gets at the end: text (the summary table) or json (one JSON object for scripts: artifact_dir, exit_code, submission_valid, problems, warnings and the aggregate as written in profile_export_aiperf.json; the text summary then goes to stderr)")
	fs.BoolVar(&p.resetCache, "reset-prefix-cache", false, "before the first request, wait until the server runs and queues nothing, then reset its prefix cache (vLLM POST /reset_prefix_cache, else SGLang POST /flush_cache), so that an earlier run's cache does not flatter this one")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkRanges(fs, profileRanges()); err != nil {
		return err
	}
	if err := p.takeArgs(fs); err != nil {
		return err
	}
	if err := rejectUnsupported(fs); err != nil {
		return err
	}
	if err := p.discoverModel(ctx); err != nil {
		return err
	}
	resolved, err := p.resolve(fs, io)
	if err != nil {
		return err
	}
	if err := resolved.resolveShard(args); err != nil {
		return err
	}
	return resolved.execute(ctx, io)
}

// takeArgs takes what the flags left: the positional arguments, then
// the text settings (run.TextSettings), parsed into the Spec. The only
// positional form accepted is the space-separated `--server-metrics u1
// u2` that InferenceX emits: extra positional URLs after
// --server-metrics are more server-metrics URLs.
func (p *profileFlags) takeArgs(fs *pflag.FlagSet) error {
	for _, a := range fs.Args() {
		if fs.Changed("server-metrics") && (strings.HasPrefix(a, "http://") || strings.HasPrefix(a, "https://")) {
			urls := p.text["server-metrics"]
			urls.vals = append(urls.vals, a)
			continue
		}
		return usagef("profile: unexpected argument %q (flags take the form --name value)", a)
	}
	return p.text.apply(&p.spec)
}

// profileRun is a resolved, validated profile invocation: the flags, the
// environment, and the Spec they describe.
type profileRun struct {
	p   *profileFlags
	env run.Environment
	fs  *pflag.FlagSet
	// preset is the --scenario preset (nil: none).
	preset *scenario.Preset
	// generation is the AgentX generation (run.GenerationChoice).
	generation timing.Generation
	// notes are lines for the run log.
	notes []string
	spec  run.Spec
}

// resolve maps the flags and the environment to the run's Spec, checking
// what only the flags can say (a flag's form, a missing flag, flags the
// generation has no use for); the library checks the rest.
func (p *profileFlags) resolve(fs *pflag.FlagSet, io stdio) (*profileRun, error) {
	r := &profileRun{p: p, fs: fs}
	concurrency, typ, err := p.checkForms()
	if err != nil {
		return nil, err
	}
	apiKey := p.resolvedAPIKey()
	if err := checkURLCredentials(p.spec.Replay.URL, p.apiKey, apiKey, p.spec.Replay.Headers); err != nil {
		return nil, err
	}
	choice := run.GenerationChoice{Scenario: p.scenario, Flag: p.generation, Env: os.Getenv(envGeneration)}
	if r.preset, r.generation, err = choice.Resolve(); err != nil {
		return nil, asUsage(err)
	}
	// The environment under the preset: its defaults where a variable is
	// unset (run.ReadScenarioEnvironment).
	if r.env, err = run.ReadScenarioEnvironment(r.preset, os.Environ(), os.Getenv); err != nil {
		return nil, asUsage(err)
	}
	s := p.spec // the settings of the tables, as their flags left them
	if s.Corpus.Source, err = p.data.source(); err != nil {
		return nil, err
	}
	if s.Corpus.Options, err = p.data.options(io); err != nil {
		return nil, err
	}
	if s.Replay.Classifier, err = scenario.ClassifierFromEnv(os.Getenv); err != nil {
		return nil, asUsage(err)
	}
	s.Tokenizer.CacheDir = p.data.cacheDir()
	s.Tokenizer.Options.Getenv = os.Getenv
	s.Tokenizer.Hub = func() (*hfhub.Client, error) { return newHub(os.Getenv, io, nil) }
	s.OverflowAdvice = overflowAdvice(s.Replay.URL)
	if fs.Changed("warmup-grace-period") {
		// aiperf's input_config records the flag as given (the library
		// records the whole warmup bound).
		s.Settings["warmup_grace_period"] = p.graceWarmup
	}
	s.Log, s.Version, s.Started = io.err, productVersion(), processStart

	c := &s.Replay // the flags that are not settings of the tables
	c.APIKey = apiKey
	c.Concurrency = concurrency
	c.WarmupGracePeriod = r.warmupGrace()
	c.SynthesisMaxOSL = p.data.synthesisMaxOSL()
	if err := r.applyPresetAndGPU(&s); err != nil {
		return nil, err
	}
	if p.discovered != "" {
		r.notes = append(r.notes, p.discovered)
	}
	s.Notes = append(s.Notes, r.notes...)
	interval := s.StatsInterval // as the preset resolved it
	s.View = func(src ui.Source) ui.View {
		return ui.Start(typ, ui.NewTracker(src, nil), ui.Options{Out: io.err, Interval: interval})
	}
	r.spec = s
	return r, nil
}

// checkForms checks the flags whose form only the CLI knows (the
// concurrency, the endpoint type, the export level, the live view).
func (p *profileFlags) checkForms() (concurrency int, typ ui.Type, err error) {
	if concurrency, err = concurrencyValue(p.concurrency); err != nil {
		return 0, typ, err
	}
	if p.endpointType != "chat" {
		return 0, typ, usagef("--endpoint-type %q: only chat is supported", p.endpointType)
	}
	switch p.exportLevel {
	case "records":
	case "summary":
		// aiperf's summary level leaves the per-request export out;
		// agentperf's report, merge, search and report.html are computed
		// from it, so it is always written: refused, never ignored.
		return 0, typ, usagef("--export-level summary is not supported: every run writes profile_export.jsonl (report, merge, search and report.html are computed from it); drop the flag or pass --export-level records")
	default:
		return 0, typ, usagef("--export-level %q%s: records (the only level agentperf writes; summary and raw are not supported)", p.exportLevel, suggest.DidYouMean(p.exportLevel, []string{"records", "summary", "raw"}))
	}
	typ, err = ui.ParseType(p.uiType)
	return concurrency, typ, asUsage(err)
}

// applyPresetAndGPU applies the environment and the --scenario preset to
// s, then resolves GPU telemetry under them.
func (r *profileRun) applyPresetAndGPU(s *run.Spec) error {
	noGPU := s.NoGPUTelemetry // --no-gpu-telemetry, before a preset fills it
	r.env.Apply(s)
	if err := r.applyScenario(s); err != nil {
		return err
	}
	gpu, err := gputelemetry.Resolve(gputelemetry.Choice{Given: r.fs.Changed("gpu-telemetry"), Values: r.p.gpuTelemetry,
		// The preset's soft default (agentx: no_gpu_telemetry) filled
		// s.NoGPUTelemetry when neither GPU telemetry flag was given.
		Off: noGPU, PresetOff: s.NoGPUTelemetry && !noGPU, Env: os.Getenv(gputelemetry.EnvURL)})
	if err != nil {
		return asUsage(err)
	}
	s.GPUTelemetry = run.GPUTelemetry{Off: gpu.Off, URLs: gpu.URLs, Probe: gpu.Probe}
	s.NoGPUTelemetry = gpu.Off // input_config's no_gpu_telemetry: what the run does
	return nil
}

// resolvedAPIKey is --api-key, else $OPENAI_API_KEY.
func (p *profileFlags) resolvedAPIKey() string {
	if p.apiKey != "" {
		return p.apiKey
	}
	return os.Getenv("OPENAI_API_KEY")
}

// warmupGrace is the bound of the whole warmup: --agentic-warmup-grace-period
// when given, else --warmup-grace-period (both 0 = unlimited).
func (r *profileRun) warmupGrace() time.Duration {
	if r.fs.Changed("agentic-warmup-grace-period") {
		return seconds(r.p.graceAgentic)
	}
	return seconds(r.p.graceWarmup)
}

// execute runs the Spec and maps its Outcome to the exit status: nil for
// a valid run, errRunFailed (exit 1) for an aborted or invalid one,
// context.Canceled (exit 130) for an interrupted one. Artifacts are
// written in every case once requests were sent.
func (r *profileRun) execute(ctx context.Context, io stdio) error {
	s := r.spec
	stop, err := selfprofile.Start(selfprofile.Options{CPUProfile: r.p.cpuProfile, MemProfile: r.p.memProfile, PprofAddr: r.p.pprofAddr, Log: io.err})
	if err != nil {
		return asUsage(err)
	}
	defer stop()
	// The second signal cuts the grace period short; the run still ends
	// with every artifact written.
	s.Replay.KillNow = claimKillSwitch(ctx)
	s.Signals = signalCount(ctx)
	s.ResetPrefixCache = r.p.resetCache
	switch r.p.output {
	case "", "text":
	case "json":
		if r.p.profileRuns != 1 {
			return usagef("--output json takes one run: drop --num-profile-runs, or read each run's profile_export_aiperf.json")
		}
	default:
		return usagef("--output %q: text or json%s", r.p.output, suggest.DidYouMean(r.p.output, []string{"text", "json"}))
	}
	repeat, err := repeatOptions(r.p, r.fs)
	if err != nil {
		return err
	}
	if repeat.Runs > 1 {
		return runRepeated(ctx, s, repeat, io)
	}
	if r.p.output == "json" {
		return runSpecJSON(ctx, s, io)
	}
	return runSpec(ctx, s, io)
}

// runSpecJSON is runSpec with --output json: the text summary goes to
// stderr, and stdout gets one JSON object (run.Outcome.JSON) once the run is
// finished, whatever its exit status.
func runSpecJSON(ctx context.Context, s run.Spec, io stdio) error {
	var out *run.Outcome
	err := runSpec(ctx, s, stdio{out: io.err, err: io.err, outcome: &out})
	if out != nil {
		b, jerr := out.JSON(flagNames)
		if jerr != nil {
			return fmt.Errorf("--output json: %w", jerr)
		}
		if _, werr := io.out.Write(append(b, '\n')); werr != nil {
			fmt.Fprintf(io.err, "agentperf: --output json: writing stdout: %v\n", werr)
		}
	}
	return err
}

// runRepeated runs s o.Runs times (--num-profile-runs) and maps the runs'
// worst outcome to the exit status, as runSpec does for one run.
func runRepeated(ctx context.Context, s run.Spec, o run.RepeatOptions, io stdio) error {
	out, err := run.RunRepeated(ctx, s, o)
	if err != nil {
		return err
	}
	for i, r := range out.Runs {
		fmt.Fprintf(io.out, "── profile run %d of %d ──\n", i+1, o.Runs)
		r.WriteSummary(io.out)
		for _, pr := range r.Problems {
			printPrefixed(io.err, flagNames(pr.Message))
		}
	}
	out.WriteSummary(io.out)
	switch out.ExitCode() {
	case run.ExitInterrupted:
		return fmt.Errorf("runs interrupted; artifacts written to %s: %w", out.Dir, context.Canceled)
	case run.ExitFailed:
		return errRunFailed
	}
	return nil
}

// runSpec runs s and maps its Outcome to the exit status (see execute).
func runSpec(ctx context.Context, s run.Spec, io stdio) error {
	out, err := run.Run(ctx, s)
	if err != nil {
		return err
	}
	if io.outcome != nil {
		*io.outcome = out
	}
	out.WriteSummary(io.out)
	forgiven := false
	for _, pr := range out.Problems {
		printPrefixed(io.err, flagNames(pr.Message))
		forgiven = forgiven || !out.Fatal(pr)
	}
	// The exit code is the library's rule (docs/artifacts.md).
	switch out.ExitCode() {
	case run.ExitInterrupted:
		return fmt.Errorf("run interrupted; artifacts written to %s: %w", out.Dir, context.Canceled)
	case run.ExitFailed:
		return errRunFailed
	}
	if forgiven {
		fmt.Fprintln(io.err, "agentperf: the run completed: under --scenario it exits 0 with submission_valid false, as the pinned aiperf does (--fail-on-invalid exits 1 instead)")
	}
	return nil
}

// discoverModel asks the server for its model when no --model was given
// and a --url was (without a URL, Validate says that both are missing):
// the one model of its /v1/models (run.DiscoverModel), with the
// run's --api-key and --header. Anything but exactly one model is a usage
// error naming the URL and saying to pass --model.
func (p *profileFlags) discoverModel(ctx context.Context) error {
	c := &p.spec.Replay
	if len(c.Models) > 0 || c.URL == "" {
		return nil
	}
	m, err := run.DiscoverModel(ctx, run.DiscoverOptions{URL: c.URL, APIKey: p.resolvedAPIKey(), Headers: c.Headers, Insecure: c.Insecure})
	if err != nil {
		return asUsage(fmt.Errorf("no --model given, so %w", err))
	}
	c.Models = []string{m}
	p.discovered = fmt.Sprintf("no --model: the server at %s serves %q (its /v1/models), the model of this run", c.URL, m)
	return nil
}
