package replay

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/timing"
)

// TestDefaultConfig: DefaultConfig holds the one table of defaults (the
// constants of replay and timing, the scenario's default generation).
func TestDefaultConfig(t *testing.T) {
	g, err := timing.LookupGeneration(timing.DefaultGeneration)
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	want := Config{
		Endpoint: DefaultEndpoint, Generation: g, LiveAssistant: g.LiveAssistant,
		SystemIdleGapCap: timing.DefaultSystemIdleCap, StartMinRatio: timing.DefaultStartMinRatio, StartMaxRatio: timing.DefaultStartMaxRatio,
		GracePeriod: DefaultGracePeriod, InterTurnDelayCap: timing.DefaultInterTurnDelayCap,
		RequestTimeout: DefaultRequestTimeout, ConnectTimeout: DefaultConnectTimeout, fromDefaults: true,
	}
	if c.Endpoint != want.Endpoint || c.Generation != want.Generation || c.LiveAssistant != want.LiveAssistant ||
		c.SystemIdleGapCap != want.SystemIdleGapCap || c.StartMinRatio != want.StartMinRatio || c.StartMaxRatio != want.StartMaxRatio ||
		c.GracePeriod != want.GracePeriod || c.InterTurnDelayCap != want.InterTurnDelayCap ||
		c.RequestTimeout != want.RequestTimeout || c.ConnectTimeout != want.ConnectTimeout || !c.fromDefaults {
		t.Fatalf("DefaultConfig() = %+v, want %+v", c, want)
	}
	if c.Generation != timing.V10 {
		t.Errorf("default generation %v, want v1.0 (what InferenceX runs today)", c.Generation)
	}
}

// TestConfigZeroValues: in a Config literal (written before DefaultConfig)
// zero values still mean the defaults; in a Config from DefaultConfig they
// mean zero.
func TestConfigZeroValues(t *testing.T) {
	type resolved struct {
		endpoint                      string
		grace, delayCap, req, connect time.Duration
		minR, maxR                    float64
		gen                           timing.Generation
	}
	get := func(c Config) resolved {
		d := c.withDefaults()
		return resolved{d.Endpoint, d.GracePeriod, d.InterTurnDelayCap, d.RequestTimeout, d.ConnectTimeout, d.StartMinRatio, d.StartMaxRatio, d.Generation}
	}
	zeroed := DefaultConfig()
	zeroed.Endpoint, zeroed.GracePeriod, zeroed.InterTurnDelayCap, zeroed.RequestTimeout, zeroed.ConnectTimeout = "", 0, 0, 0, 0
	zeroed.StartMinRatio, zeroed.StartMaxRatio = 0, 0
	negative := DefaultConfig()
	negative.GracePeriod, negative.InterTurnDelayCap = -time.Second, -time.Second
	for _, tc := range []struct {
		name string
		c    Config
		want resolved
	}{
		{"literal zero", Config{}, resolved{DefaultEndpoint, DefaultGracePeriod, timing.DefaultInterTurnDelayCap, DefaultRequestTimeout, DefaultConnectTimeout,
			timing.DefaultStartMinRatio, timing.DefaultStartMaxRatio, timing.V02}},
		{"literal negative = none", Config{GracePeriod: -1, InterTurnDelayCap: -1}, resolved{DefaultEndpoint, 0, 0, DefaultRequestTimeout, DefaultConnectTimeout,
			timing.DefaultStartMinRatio, timing.DefaultStartMaxRatio, timing.V02}},
		{"literal one ratio set", Config{StartMaxRatio: 0.5}, resolved{DefaultEndpoint, DefaultGracePeriod, timing.DefaultInterTurnDelayCap, DefaultRequestTimeout, DefaultConnectTimeout,
			0, 0.5, timing.V02}},
		{"DefaultConfig", DefaultConfig(), resolved{DefaultEndpoint, DefaultGracePeriod, timing.DefaultInterTurnDelayCap, DefaultRequestTimeout, DefaultConnectTimeout,
			timing.DefaultStartMinRatio, timing.DefaultStartMaxRatio, timing.V10}},
		{"DefaultConfig zeroed", zeroed, resolved{"", 0, 0, 0, 0, 0, 0, timing.V10}},
		{"DefaultConfig negative", negative, resolved{DefaultEndpoint, 0, 0, DefaultRequestTimeout, DefaultConnectTimeout,
			timing.DefaultStartMinRatio, timing.DefaultStartMaxRatio, timing.V10}},
	} {
		if got := get(tc.c); got != tc.want {
			t.Errorf("%s: resolved to %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestConfigErrorsNameFields: Validate and ParseExtraInput report
// *FieldError values naming the Config field, so a caller (the CLI) can
// name its own setting instead.
func TestConfigErrorsNameFields(t *testing.T) {
	fields := func(err error) map[string]bool {
		out := map[string]bool{}
		var walk func(error)
		walk = func(err error) {
			var fe *FieldError
			if errors.As(err, &fe) {
				out[fe.Field] = true
			}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				for _, e := range j.Unwrap() {
					walk(e)
				}
			}
		}
		walk(err)
		return out
	}
	c := DefaultConfig()
	c.URL = "ftp://u:secret@host"
	got := fields(c.Validate())
	for _, f := range []string{"Config.URL", "Config.Models", "Config.Traces", "Config.Synth", "Config.Concurrency", "Config.BenchmarkDuration", "Config.Sink"} {
		if !got[f] {
			t.Errorf("Validate of an empty config: no *FieldError for %s (got %v)", f, got)
		}
	}
	if err := c.Validate(); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("Validate() = %v: must not show the URL's password", err)
	}
	for _, in := range []string{"{not json", "novalue"} {
		_, err := ParseExtraInput(in)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "Config.ExtraInputs" {
			t.Errorf("ParseExtraInput(%q) = %v, want a *FieldError for Config.ExtraInputs", in, err)
		}
	}
}
