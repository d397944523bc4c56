package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/replay"
)

func TestFlagNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"select traces: SelectOptions.MaxContextLength: 10 drops all 3 traces", "select traces: --max-context-length 10 drops all 3 traces"},
		{"Config.URL: parse \"x\": bad", "--url parse \"x\": bad"},
		{"no dataset given: set Source.InputFile, Source.PublicDataset (e.g. synthetic) or Source.HFDataset",
			"no dataset given: set --input-file, --public-dataset (e.g. synthetic) or --hf-dataset"},
		{"Config.Concurrency: 9 exceeds the corpus's 4 traces; set Config.AllowDatasetWrap or a Config.CacheBust marker",
			"--concurrency 9 exceeds the corpus's 4 traces; set --allow-dataset-wrap or a --cache-bust marker"},
		{"or use the 'builtin' tokenizer (approximate token counts)", "or use --tokenizer builtin (approximate token counts)"},
		// Only whole names: a longer identifier, or one qualified by a
		// package, is left alone.
		{"Config.URLs and replay.Config.URL", "Config.URLs and replay.Config.URL"},
		{"nothing to rename", "nothing to rename"},
	} {
		if got := flagNames(tc.in); got != tc.want {
			t.Errorf("flagNames(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

// TestLibraryFieldErrorsHaveFlagNames: every field a replay or dataset
// *FieldError names, for a setting the CLI has a flag for, is in
// libraryNames, so no error the CLI prints names a Go field.
func TestLibraryFieldErrorsHaveFlagNames(t *testing.T) {
	t.Parallel()
	var fields []string
	var collect func(error)
	collect = func(err error) {
		var rf *replay.FieldError
		var df *dataset.FieldError
		switch {
		case errors.As(err, &rf):
			fields = append(fields, rf.Field)
		case errors.As(err, &df):
			fields = append(fields, df.Field)
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				collect(e)
			}
		}
	}
	c := replay.DefaultConfig()
	c.URL, c.WarmupRequestsPerLane, c.AgenticCacheWarmupDuration = "ftp://x", 1, time.Second
	c.StartMinRatio = 2
	collect(c.Validate())
	c = replay.DefaultConfig()
	c.URL, c.APIKey = "http://u:p@host", "k"
	collect(c.Validate())
	_, err := replay.ParseExtraInput("{bad")
	collect(err)
	traces := []dataset.Trace{{ID: "a", Requests: []dataset.Request{{In: 100, Out: 10}}}}
	for _, opt := range []dataset.SelectOptions{{MaxContextLength: 1}, {MaxOSL: -1}, {NumEntries: -1}} {
		_, _, err := dataset.Select(traces, opt)
		collect(err)
	}
	_, err = dataset.Open(t.Context(), dataset.Source{InputFile: filepath.Join(t.TempDir(), "absent")}, dataset.Options{})
	collect(err)

	noFlag := map[string]bool{"Config.Traces": true, "Config.Synth": true, "Config.Sink": true}
	for _, f := range fields {
		if _, ok := libraryNames[f]; !ok && !noFlag[f] {
			t.Errorf("library field %s has no entry in libraryNames", f)
		}
	}
	if len(fields) < 10 {
		t.Fatalf("only %d field errors collected (%v): the fixture no longer provokes them", len(fields), fields)
	}
}

// TestProfileErrorsNameFlags: a bad value that the library rejects is
// reported with the flag's name, not the Config field's.
func TestProfileErrorsNameFlags(t *testing.T) {
	code, _, errOut := runCLI(t, "profile", "--url", "sim://", "--model", "m", "--concurrency", "1", "--benchmark-duration", "1",
		"--public-dataset", "synthetic", "--extra-inputs", "{bad")
	if code != exitUsage || !strings.Contains(errOut, "--extra-inputs") || strings.Contains(errOut, "Config.") {
		t.Fatalf("exit %d, stderr %q: want a usage error naming --extra-inputs and no Config field", code, errOut)
	}
}
