package replay

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/timing"
)

// TestDefaultConfig: DefaultConfig holds the one table of defaults (the
// constants of replay and timing, the default generation).
func TestDefaultConfig(t *testing.T) {
	g, err := timing.LookupGeneration(timing.DefaultGeneration)
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	type table struct {
		endpoint                                    string
		gen                                         timing.Generation
		live                                        bool
		sysCap, grace, delayCap, req, conn, backoff time.Duration
		liveness                                    time.Duration
		minR, maxR                                  float64
		retries                                     int
	}
	got := table{c.Endpoint, c.Generation, c.LiveAssistant, c.SystemIdleGapCap, c.GracePeriod, c.InterTurnDelayCap, c.RequestTimeout, c.ConnectTimeout,
		c.WarmupRetryBackoff, c.LivenessInterval, c.StartMinRatio, c.StartMaxRatio, c.WarmupRetries}
	want := table{DefaultEndpoint, g, g.LiveAssistant, timing.DefaultSystemIdleCap, DefaultGracePeriod, timing.DefaultInterTurnDelayCap, DefaultRequestTimeout, DefaultConnectTimeout,
		DefaultWarmupRetryBackoff, DefaultLivenessInterval, timing.DefaultStartMinRatio, timing.DefaultStartMaxRatio, DefaultWarmupRetries}
	if got != want {
		t.Fatalf("DefaultConfig() = %+v,\nwant %+v", got, want)
	}
	if c.Generation != timing.V10 {
		t.Errorf("default generation %v, want v1.0 (what InferenceX runs today)", c.Generation)
	}
	if c.Chains != dataset.DefaultChainOptions() {
		t.Errorf("default chain switches %+v, want the pinned loader's %+v", c.Chains, dataset.DefaultChainOptions())
	}
}

// TestConfigMeansWhatItHolds: Run reads every field as it is (a zero is
// never a default), with a negative grace period, retry budget or backoff
// read as none; nil collaborators are none, except Overflows (the Sink)
// and an empty BenchmarkID (a new one); a literal without a generation is
// refused, pointing at DefaultConfig.
func TestConfigMeansWhatItHolds(t *testing.T) {
	type resolved struct {
		endpoint                            string
		grace, delayCap, req, conn, backoff time.Duration
		liveness                            time.Duration
		minR, maxR                          float64
		retries                             int
	}
	get := func(c Config) resolved {
		d := c.normalize()
		return resolved{d.Endpoint, d.GracePeriod, d.InterTurnDelayCap, d.RequestTimeout, d.ConnectTimeout, d.WarmupRetryBackoff,
			d.LivenessInterval, d.StartMinRatio, d.StartMaxRatio, d.WarmupRetries}
	}
	zeroed := DefaultConfig()
	zeroed.Endpoint, zeroed.GracePeriod, zeroed.InterTurnDelayCap, zeroed.RequestTimeout, zeroed.ConnectTimeout = "", 0, 0, 0, 0
	zeroed.StartMinRatio, zeroed.StartMaxRatio, zeroed.WarmupRetries, zeroed.WarmupRetryBackoff, zeroed.LivenessInterval = 0, 0, 0, 0, 0
	negative := DefaultConfig()
	negative.GracePeriod, negative.InterTurnDelayCap, negative.WarmupRetries, negative.WarmupRetryBackoff, negative.LivenessInterval = -time.Second, -time.Second, -1, -time.Second, -time.Second
	for _, tc := range []struct {
		name string
		c    Config
		want resolved
	}{
		{"DefaultConfig", DefaultConfig(), resolved{DefaultEndpoint, DefaultGracePeriod, timing.DefaultInterTurnDelayCap, DefaultRequestTimeout, DefaultConnectTimeout,
			DefaultWarmupRetryBackoff, DefaultLivenessInterval, timing.DefaultStartMinRatio, timing.DefaultStartMaxRatio, DefaultWarmupRetries}},
		{"zeroed", zeroed, resolved{}},
		{"literal", Config{Generation: timing.V02}, resolved{}},
		{"negative", negative, resolved{DefaultEndpoint, 0, -time.Second, DefaultRequestTimeout, DefaultConnectTimeout,
			0, -time.Second, timing.DefaultStartMinRatio, timing.DefaultStartMaxRatio, 0}},
	} {
		if got := get(tc.c); got != tc.want {
			t.Errorf("%s: resolved to %+v, want %+v", tc.name, got, tc.want)
		}
	}

	sink := &memSink{}
	c := DefaultConfig()
	c.URL, c.Headers, c.Sink = "http://u:p@host:8000", map[string]string{"X-A": "1"}, sink
	a, b := c.normalize(), c.normalize()
	if a.Overflows != sink || a.Logf == nil || a.Progress == nil || a.Classifier == nil || a.Classifier.IsOverflow([]byte("maximum context length")) {
		t.Errorf("nil collaborators: Overflows %v (want the Sink), Logf set %v, Progress %v, Classifier %v (want one that recognises nothing)", a.Overflows, a.Logf != nil, a.Progress, a.Classifier)
	}
	if a.BenchmarkID == "" || a.BenchmarkID == b.BenchmarkID {
		t.Errorf("empty BenchmarkID: made %q and %q, want a new id each run", a.BenchmarkID, b.BenchmarkID)
	}
	if a.URL != "http://host:8000" || a.Headers["Authorization"] == "" || len(c.Headers) != 1 {
		t.Errorf("URL user info: %s with headers %v (the caller's now %v): want it moved to Authorization, the caller's map untouched", a.URL, a.Headers, c.Headers)
	}
	c.BenchmarkID = "run-1"
	if got := c.normalize().BenchmarkID; got != "run-1" {
		t.Errorf("BenchmarkID %q kept as %q", "run-1", got)
	}

	lit := Config{URL: "http://localhost:8000", Models: []string{"m"}, Concurrency: 1, BenchmarkDuration: time.Second}
	err := lit.ValidateSettings()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "Config.Generation" || !strings.Contains(err.Error(), "DefaultConfig") {
		t.Errorf("a literal without a generation: ValidateSettings() = %v, want a Config.Generation error naming DefaultConfig", err)
	}
}

// TestValidateSettings: ValidateSettings is Validate without the checks of
// the corpus, the synthesizer and the sink; both check the start ratios.
func TestValidateSettings(t *testing.T) {
	c := DefaultConfig()
	c.URL, c.Models, c.Concurrency, c.BenchmarkDuration = "http://localhost:8000", []string{"m"}, 4, time.Minute
	if err := c.ValidateSettings(); err != nil {
		t.Fatalf("ValidateSettings() = %v, want nil for complete settings", err)
	}
	err := c.Validate()
	for _, f := range []string{"Config.Traces", "Config.Synth", "Config.Sink"} {
		if err == nil || !strings.Contains(err.Error(), f) {
			t.Errorf("Validate() = %v: want a %s error", err, f)
		}
	}
	for _, r := range [][2]float64{{0.8, 0.2}, {-0.1, 0.5}, {0.5, 1.5}} {
		c.StartMinRatio, c.StartMaxRatio = r[0], r[1]
		want := fmt.Sprintf("Config.StartMinRatio: %g / Config.StartMaxRatio %g: need 0 ≤ min ≤ max ≤ 1", r[0], r[1])
		if err := c.ValidateSettings(); err == nil || err.Error() != want {
			t.Errorf("ratios %v: ValidateSettings() = %v, want %q", r, err, want)
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

// TestTCPUserTimeoutBounds: DefaultConfig holds aiperf's 30 s, and a value
// outside aiperf's bounds (1 ms to 1,000,000 ms) is an error naming the
// field; 0 (the kernel's default) is accepted.
func TestTCPUserTimeoutBounds(t *testing.T) {
	if d := DefaultConfig().TCPUserTimeout; d != 30*time.Second {
		t.Errorf("DefaultConfig().TCPUserTimeout = %v, want 30s", d)
	}
	for _, tc := range []struct {
		d  time.Duration
		ok bool
	}{{0, true}, {time.Millisecond, true}, {1000 * time.Second, true}, {-time.Second, false}, {time.Microsecond, false}, {1001 * time.Second, false}} {
		c := DefaultConfig()
		c.URL, c.Models, c.Concurrency, c.BenchmarkDuration = "http://127.0.0.1:1", []string{"m"}, 1, time.Minute
		c.TCPUserTimeout = tc.d
		err := c.ValidateSettings()
		if tc.ok != (err == nil) {
			t.Errorf("TCPUserTimeout %v: ValidateSettings() = %v, want ok=%v", tc.d, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "Config.TCPUserTimeout") {
			t.Errorf("TCPUserTimeout %v: error %q does not name Config.TCPUserTimeout", tc.d, err)
		}
	}
}
