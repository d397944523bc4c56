package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestGPUTelemetryTakesZeroOrMoreValues: --gpu-telemetry reads as aiperf's
// (zero or more values up to the next flag), and the values reach the
// flag.
func TestGPUTelemetryTakesZeroOrMoreValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args  []string
		given bool
		want  []string
	}{
		{[]string{"--concurrency", "2"}, false, nil},
		{[]string{"--gpu-telemetry", "--concurrency", "2"}, true, []string{}},
		{[]string{"--gpu-telemetry", "localhost:9400", "--concurrency", "2"}, true, []string{"localhost:9400"}},
		{[]string{"--gpu-telemetry", "a:1", "b:2", "dashboard"}, true, []string{"a:1", "b:2", "dashboard"}},
		{[]string{"--gpu-telemetry=a:1,b:2"}, true, []string{"a:1", "b:2"}},
		{[]string{"--concurrency", "2", "--gpu-telemetry"}, true, []string{}},
	} {
		fs := pflag.NewFlagSet("profile", pflag.ContinueOnError)
		p := addProfileFlags(fs)
		if err := parseFlags(fs, tc.args); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if fs.Changed("gpu-telemetry") != tc.given || (tc.given && !reflect.DeepEqual(append([]string{}, p.gpuTelemetry...), tc.want)) {
			t.Errorf("%q: given %v values %q; want %v %q", tc.args, fs.Changed("gpu-telemetry"), p.gpuTelemetry, tc.given, tc.want)
		}
		if len(fs.Args()) != 0 {
			t.Errorf("%q: left positional %q", tc.args, fs.Args())
		}
	}
}

// TestSweepRefusesRepeats: sweep and search do not repeat their points
// yet, so the repeated-run flags are refused rather than ignored.
func TestSweepRefusesRepeats(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"sweep", "search"} {
		fs := pflag.NewFlagSet(cmd, pflag.ContinueOnError)
		addProfileFlags(fs)
		if err := parseFlags(fs, []string{"--num-profile-runs", "3"}); err != nil {
			t.Fatal(err)
		}
		if err := rejectRepeats(fs, cmd); err == nil || !strings.Contains(err.Error(), "--num-profile-runs") {
			t.Errorf("%s: %v", cmd, err)
		}
	}
}
