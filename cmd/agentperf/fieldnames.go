package main

import (
	"maps"

	"github.com/agentperf/agentperf/internal/cliflags"
	"github.com/agentperf/agentperf/run"
)

// libraryNames maps how the library names a setting in its errors (a Go
// field such as Config.URL, the field of a *replay.FieldError or
// *dataset.FieldError, or a phrase around one) to how the CLI names it: the
// flag, or the environment variable, that sets it. It is the one place
// where field names become flag names; flagNames applies it. The fields
// of the settings table (run.Settings) come from the table.
var libraryNames = func() map[string]string {
	m := maps.Clone(otherLibraryNames)
	for _, st := range run.Settings() {
		m[st.Field] = "--" + st.Flag
	}
	for _, t := range run.TextSettings() {
		m[t.Field] = "--" + t.Flag
	}
	return m
}()

// otherLibraryNames are the names of the settings outside
// run.Settings and run.TextSettings.
var otherLibraryNames = map[string]string{
	// replay.Config
	"Config.APIKey":         "--api-key",
	"Config.Concurrency":    "--concurrency",
	"Config.Shard":          "--shard",
	"Config.CacheBust":      "--cache-bust",
	"Config.LiveAssistant":  "AIPERF_DATASET_WEKA_LIVE_ASSISTANT_RESPONSES",
	"Config.TCPUserTimeout": "AIPERF_HTTP_TCP_USER_TIMEOUT",
	// dataset.Source, dataset.Options, dataset.SelectOptions
	"Source.InputFile":               "--input-file",
	"Source.PublicDataset":           "--public-dataset",
	"Source.HFDataset":               "--hf-dataset",
	"SelectOptions.MaxContextLength": "--max-context-length",
	"SelectOptions.MaxOSL":           "--synthesis-max-osl",
	"SelectOptions.NumEntries":       "--num-dataset-entries",
	"Options.CacheDir":               "--dataset-cache-dir (or " + envCacheDir + ")",
	// run.Spec, run.Input
	"Spec.ResetPrefixCache":            "--reset-prefix-cache",
	"Input.RequiredServerMetricPrefix": "AIPERF_REQUIRED_SERVER_METRIC_PREFIX",
	// run.RepeatOptions, run.PointOptions
	"RepeatOptions.Runs":                 "--num-profile-runs",
	"RepeatOptions.Confidence":           "--confidence-level",
	"RepeatOptions.ConvergenceMetric":    "--convergence-metric",
	"RepeatOptions.ConvergenceThreshold": "--convergence-threshold",
	"PointOptions.DrainTimeout":          "--drain-timeout",
	// tokenizer
	"the 'builtin' tokenizer":               "--tokenizer builtin",
	"give the path of one as the tokenizer": "pass one with --tokenizer PATH",
}

// flagNames rewrites a library message in the CLI's terms: every setting
// libraryNames knows becomes its flag (cliflags.Renamer: a field error's
// "Field: what is wrong" reads "--flag what is wrong"; only whole names
// are replaced, not Config.URL inside Config.URLs).
func flagNames(msg string) string { return libraryRenamer.Rename(msg) }

var libraryRenamer = cliflags.NewRenamer(libraryNames)
