package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/internal/cliflags"
)

// profileFlagSet is `agentperf profile`'s flag set, its command line
// parsed from args (without the config file).
func profileFlagSet(t testing.TB, args ...string) (*pflag.FlagSet, *profileFlags) {
	t.Helper()
	fs := newFlagSet("profile", "profile", "", io.Discard)
	p := addProfileFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs, p
}

// maskMeasured replaces what differs between two runs of the same
// settings in a decoded aggregate: every number (a measured value or a
// count of what the timing let happen), the per-run strings, and the
// server's derived figures (which of them exist depends on the scrapes).
func maskMeasured(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "benchmark_id", "start_time", "end_time", "timestamp", "started_at", "ended_at",
				"corpus_cache_hit": // the second run finds the first one's tokenized prompt corpus in the cache
				x[k] = "<per-run>"
			case "server_derived": // which figures exist depends on what the scrapes of a 1 s run caught
				x[k] = "<measured>"
			default:
				x[k] = maskMeasured(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = maskMeasured(e)
		}
	case float64:
		return "<number>"
	}
	return v
}

// TestConfigFileReproducesCommandLine: a run from --config run.yaml and
// the same run from the command line write the same input_config, byte
// for byte, and aggregates of the same shape: the same keys everywhere,
// the same strings (every number, the per-run id and times, whether the
// prompt corpus came from its cache, and the server's derived figures
// masked: they are what the run measured). Flags on the command line win over
// the file.
func TestConfigFileReproducesCommandLine(t *testing.T) {
	clearAIPerfEnv(t)
	root := t.TempDir()
	out := filepath.Join(root, "artifacts") // both runs write here, one after the other
	cli := []string{"profile", "--url", "sim://?zero-latency=true", "--public-dataset", "synthetic:traces=8", "--model", "demo",
		"--concurrency", "2", "--benchmark-duration", "1", "--streaming", "--use-server-token-count",
		"--trace-idle-gap-cap-seconds", "0.01", "--random-seed", "7", "--header", "X-Run: a", "--header", "X-Team: b",
		"--ui-type", "none", "--no-plot", "--output-artifact-dir", out}
	yml := `# the same run as the command line
url: "sim://?zero-latency=true"
public-dataset: synthetic:traces=8
model: [demo]
concurrency: 4            # the command line's --concurrency 2 wins
benchmark-duration: 1
streaming: true
use-server-token-count: true
trace-idle-gap-cap-seconds: 0.01
random-seed: 7
header:
  - "X-Run: a"
  - "X-Team: b"
ui-type: none
no-plot: true
output-artifact-dir: ` + out + "\n"
	cfg := filepath.Join(root, "run.yaml")
	if err := os.WriteFile(cfg, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	read := func() []byte {
		b, err := os.ReadFile(filepath.Join(out, "profile_export_aiperf.json"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if code, stdout, stderr := runProfileCLI(context.Background(), t, cli...); code != exitOK {
		t.Fatalf("command line: exit %d\n%s\n%s", code, stdout, stderr)
	}
	fromCLI := read()
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runProfileCLI(context.Background(), t, "profile", "--config", cfg, "--concurrency", "2"); code != exitOK {
		t.Fatalf("--config: exit %d\n%s\n%s", code, stdout, stderr)
	}
	fromFile := read()

	raw := func(b []byte) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := raw(fromCLI)["input_config"], raw(fromFile)["input_config"]
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("input_config differs:\ncommand line: %s\n--config:     %s", a, b)
	}
	if !bytes.Contains(a, []byte(`"concurrency": 2`)) {
		t.Errorf("the command line's --concurrency 2 did not win over the file's 4: %s", a)
	}
	shape := func(b []byte) string {
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		s, _ := json.MarshalIndent(maskMeasured(v), "", " ")
		return string(s)
	}
	if sa, sb := shape(fromCLI), shape(fromFile); sa != sb {
		t.Errorf("the aggregates differ beyond their measured values:\ncommand line:\n%s\n--config:\n%s", sa, sb)
	}
}

// TestConfigFileErrors: through the command, a config file's mistake is
// a usage error (exit 2) naming the file and line. The cases of every
// kind of mistake are cliflags.TestConfigErrors.
func TestConfigFileErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "run.yaml")
	os.WriteFile(cfg, []byte("concurency: 4\n"), 0o644)
	var out, errb bytes.Buffer
	if code := runMain(context.Background(), []string{"profile", "--config", cfg}, &out, &errb); code != exitUsage ||
		!regexp.MustCompile(regexp.QuoteMeta(cfg)+`:1: unknown key "concurency"`).MatchString(errb.String()) {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	// An alias of a profile flag counts as that flag.
	fs, _ := profileFlagSet(t)
	if err := cliflags.ApplyConfig(fs, "run.yaml", []byte("model: [a]\nmodel-names: [b]\n")); err == nil ||
		!strings.Contains(err.Error(), `run.yaml:2: "model-names" sets --model again (line 1 set it already)`) {
		t.Errorf("model twice through its alias: %v", err)
	}
}

// TestConfigFileTakesEveryProfileFlag: every flag of `agentperf profile`
// is a key (its own default as the value is accepted), and the command
// line wins over the file for every one of them.
func TestConfigFileTakesEveryProfileFlag(t *testing.T) {
	t.Parallel()
	fs, _ := profileFlagSet(t)
	var keys []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != cliflags.ConfigFlag {
			keys = append(keys, f.Name)
		}
	})
	if len(keys) < 60 {
		t.Fatalf("only %d profile flags", len(keys))
	}
	for _, k := range keys {
		fs, _ := profileFlagSet(t)
		f := fs.Lookup(k)
		val := f.DefValue
		var yml string
		switch {
		case cliflags.Repeatable(f):
			yml = k + ": []\n"
		case val == "":
			yml = k + ": \"\"\n"
		default:
			yml = k + ": " + "\"" + val + "\"\n"
		}
		if err := cliflags.ApplyConfig(fs, "run.yaml", []byte(yml)); err != nil {
			t.Errorf("key %s: %v", k, err)
		}
	}
	// The command line wins: --concurrency 2 over the file's 4.
	fs2, p := profileFlagSet(t, "--concurrency", "2", "--streaming=false")
	if err := cliflags.ApplyConfig(fs2, "run.yaml", []byte("concurrency: 4\nstreaming: true\nrandom-seed: 9\n")); err != nil {
		t.Fatal(err)
	}
	if p.concurrency != "2" || p.spec.Replay.Streaming || fs2.Lookup("random-seed").Value.String() != "9" {
		t.Errorf("concurrency %q streaming %v random-seed %s: want the command line's 2 and false, the file's 9", p.concurrency, p.spec.Replay.Streaming, fs2.Lookup("random-seed").Value)
	}
}
