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

// TestPointRepeatFlags: sweep and search take the repeated-run flags as
// profile does: --num-profile-runs 1 to 10, and the flags that go with it
// only beside 2 or more (refused, not ignored).
func TestPointRepeatFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string // "" accepted
	}{
		{[]string{"--num-profile-runs", "3", "--confidence-level", "0.9", "--convergence-metric", "time_to_first_token.p50"}, ""},
		{[]string{"--num-profile-runs", "11"}, "--num-profile-runs 11: want 1 to 10"},
		{[]string{"--num-profile-runs", "0"}, "--num-profile-runs 0: want 1 to 10"},
		{[]string{"--confidence-level", "0.9"}, "--confidence-level applies to --num-profile-runs 2 or more"},
		{[]string{"--profile-run-cooldown-seconds", "1"}, "--profile-run-cooldown-seconds applies to --num-profile-runs 2 or more"},
	} {
		fs := pflag.NewFlagSet("sweep", pflag.ContinueOnError)
		p := addProfileFlags(fs)
		if err := parseFlags(fs, tc.args); err != nil {
			t.Fatal(err)
		}
		o, err := repeatOptions(p, fs)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.want == "" && (o.Runs != 3 || o.Confidence != 0.9 || o.ConvergenceMetric != "time_to_first_token.p50"):
			t.Errorf("%q: options %+v", tc.args, o)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}
