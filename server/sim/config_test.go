package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	base := DefaultConfig()
	cfg, err := ParseURL("sim://?max-model-len=8192&zero-latency=true&fault-500-rate=0.01&fault-stall-every=5&fault-stall-for=2s&engines=3&model=org/m&overflow-wording=sglang", base)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxModelLen != 8192 || !cfg.ZeroLatency || cfg.Faults.HTTP500.Rate != 0.01 || cfg.Faults.Stall.Every != 5 ||
		cfg.Faults.StallFor != 2*time.Second || cfg.Engines != 3 || cfg.Model != "org/m" || cfg.OverflowWording != "sglang" {
		t.Errorf("ParseURL result = %+v", cfg)
	}
	if cfg.KVCapacityTokens != base.KVCapacityTokens || cfg.BlockSize != base.BlockSize {
		t.Errorf("untouched settings changed: %+v", cfg)
	}
	for _, raw := range []string{"sim://", "sim:", "sim:///", "sim://?zero-latency"} {
		c, err := ParseURL(raw, base)
		if err != nil {
			t.Errorf("ParseURL(%q): %v", raw, err)
		}
		if raw == "sim://?zero-latency" && !c.ZeroLatency {
			t.Errorf("bare boolean key did not set it")
		}
	}

	errCases := []struct{ raw, want string }{
		{"sim://?max-modle-len=5", `unknown setting "max-modle-len"`},
		{"sim://?max-model-len=abc", "max-model-len"},
		{"sim://?zero-latency=maybe", "zero-latency"},
		{"http://localhost:8000", "scheme must be sim"},
		{"sim://host:9/", "only a query"},
		{"sim://?fault-stall-for=5", "fault-stall-for"},
		{"sim://?a=%zz", "query"},
	}
	for _, c := range errCases {
		t.Run(c.raw, func(t *testing.T) {
			t.Parallel()
			_, err := ParseURL(c.raw, base)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("ParseURL(%q) error = %v, want one containing %q", c.raw, err, c.want)
			}
		})
	}
}

// TestFlagsAndURLShareNames: every flag is a valid URL key and the other
// way round, so `agentperf sim --x=v` and `sim://?x=v` mean the same.
func TestFlagsAndURLShareNames(t *testing.T) {
	t.Parallel()
	var c Config
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	RegisterFlags(fs, &c)
	n := 0
	fs.VisitAll(func(f *pflag.Flag) {
		n++
		if _, err := ParseURL("sim://?"+f.Name+"="+f.DefValue, DefaultConfig()); err != nil && f.DefValue != "" {
			t.Errorf("flag --%s (default %q) is not accepted as a URL key: %v", f.Name, f.DefValue, err)
		}
	})
	if n < 30 {
		t.Errorf("only %d flags registered", n)
	}
	// Defaults shown by the flags are DefaultConfig's.
	d := DefaultConfig()
	fs = pflag.NewFlagSet("t", pflag.ContinueOnError)
	RegisterFlags(fs, &d)
	if got := fs.Lookup("max-model-len").DefValue; got != "131072" {
		t.Errorf("--max-model-len default = %s", got)
	}
	if err := fs.Parse([]string{"--fault-429-every=3", "--kv-capacity-tokens=500000"}); err != nil {
		t.Fatal(err)
	}
	if d.Faults.HTTP429.Every != 3 || d.KVCapacityTokens != 500000 {
		t.Errorf("flags did not write into the config: %+v", d)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		set  func(c *Config)
		want string
	}{
		{"small KV", func(c *Config) { c.KVCapacityTokens = 1000; c.MaxModelLen = 4096 }, "--kv-capacity-tokens"},
		{"wording", func(c *Config) { c.OverflowWording = "vllm-9" }, "--overflow-wording"},
		{"rate", func(c *Config) { c.Faults.HTTP503.Rate = 1.5 }, "--fault-503-rate"},
		{"ratio", func(c *Config) { c.ReasoningRatio = 2 }, "--reasoning-ratio"},
		{"routing", func(c *Config) { c.Routing = "random" }, "--routing"},
		{"engines", func(c *Config) { c.Engines = -1 }, "--engines"},
		{"tokenizer", func(c *Config) { c.TokenizerName = "/no/such/tokenizer.json" }, "--tokenizer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{}
			c.set(&cfg)
			_, err := New(cfg)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("New error = %v, want one naming %s", err, c.want)
			}
		})
	}
	s, err := New(Config{})
	if err != nil {
		t.Fatalf("zero Config: %v", err)
	}
	if s.Config().Model != "agentperf-sim" {
		t.Errorf("default model = %q", s.Config().Model)
	}
	d := DefaultConfig()
	if d.Model != "" || d.BlockSize != 16 || d.MaxNumSeqs != 256 || d.OverflowWording != "vllm-2026-nested" || d.Faults.StallFor != 5*time.Second {
		t.Errorf("DefaultConfig = %+v", d)
	}
}
