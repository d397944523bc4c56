package cliflags

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// configFlagSet is a command's flag set with a flag of each kind a config
// file sets (one value, a bool, a repeatable flag, an alias), its command
// line parsed from args.
func configFlagSet(t testing.TB, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("url", "", "server URL")
	fs.Int("concurrency", 1, "sessions at once")
	fs.Bool("streaming", false, "stream responses")
	fs.Float64("rate", 0, "requests per second")
	fs.Duration("timeout", 0, "request timeout")
	fs.StringSlice("model", nil, "model names")
	fs.StringSlice("model-names", nil, "alias of --model")
	fs.StringArray("header", nil, "a header (repeatable)")
	fs.String("secret", "", "hidden")
	fs.Lookup("secret").Hidden = true
	AddConfigFlag(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestConfigErrors: what a config file gets wrong is an error with
// file:line that says what to do.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, yml, want string }{
		{"unknown key", "url: sim://\nconcurency: 4\n", `run.yaml:2: unknown key "concurency": the keys are this command's flag names (see --help) (did you mean "concurrency"?)`},
		{"list for one value", "url: sim://\nconcurrency:\n  - 4\n  - 8\n", "run.yaml:3: --concurrency takes one value, not a list"},
		{"bad value", "streaming: maybe\n", `run.yaml:1: --streaming "maybe": `},
		{"twice through an alias", "model: [a]\nmodel-names: [b]\n", `run.yaml:2: "model-names" sets --model again (line 1 set it already)`},
		{"twice", "url: a\nurl: b\n", `run.yaml:2: "url" sets --url again (line 1 set it already)`},
		{"not a mapping", "- concurrency\n", "run.yaml:1: want a mapping of flag names to values (e.g. concurrency: 8), not a list"},
		{"nested config", "config: other.yaml\n", `run.yaml:1: unknown key "config": a config file cannot name another one`},
		{"no value", "url:\n", "run.yaml:1: url has no value"},
		{"mapping value", "url: {a: b}\n", "run.yaml:1: --url: want a value or a list of values, not a mapping"},
		{"list of lists", "header: [[a]]\n", "run.yaml:1: --header: a list item must be a single value, not a list"},
		{"key not a name", "[a]: 1\n", "run.yaml:1: a key must be a flag name, not a list"},
		{"syntax", "url: [\n", "run.yaml: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := ApplyConfig(configFlagSet(t), "run.yaml", []byte(c.yml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
	if err := ApplyConfigFile(configFlagSet(t), "/nonexistent/run.yaml"); err == nil || !strings.HasPrefix(err.Error(), "--config: open /nonexistent/run.yaml") {
		t.Errorf("missing file: %v", err)
	}
}

// TestConfigSetsUnderCommandLine: the file's values are set as if given
// on the command line (a list once per item, a key with dashes too), and
// a flag the command line gave, or its alias, keeps the command line's
// value.
func TestConfigSetsUnderCommandLine(t *testing.T) {
	t.Parallel()
	fs := configFlagSet(t, "--concurrency", "2", "--model-names", "cli")
	yml := "concurrency: 4\nstreaming: true\n--rate: 1.5\ntimeout: 3s\nmodel: [file]\nheader:\n  - \"A: b\"\n  - \"C: d\"\n"
	if err := ApplyConfig(fs, "run.yaml", []byte(yml)); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"concurrency": "2", "streaming": "true", "rate": "1.5", "timeout": "3s",
		"model": "[]", "model-names": "[cli]", "header": "[A: b,C: d]",
	} {
		if got := fs.Lookup(name).Value.String(); got != want {
			t.Errorf("--%s = %q, want %q", name, got, want)
		}
	}
	if !fs.Lookup("streaming").Changed || fs.Lookup("url").Changed {
		t.Error("a value from the file must mark its flag changed, and only those the file sets")
	}
	if err := ApplyConfig(configFlagSet(t), "empty.yaml", nil); err != nil {
		t.Errorf("an empty file sets nothing: %v", err)
	}
}

// FuzzApplyConfig: any file either is refused with an error naming it or
// sets flags; nothing panics.
func FuzzApplyConfig(f *testing.F) {
	for _, s := range []string{"url: sim://\nconcurrency: 4\n", "header: [\"A: b\", \"C: d\"]\n", "- x\n", "a: &x 1\nb: *x\n", "{url: [1, {a: b}]}", "", "streaming: !!bool true\n", "model: [a]\nmodel-names: [b]\n", "timeout: 1s\nrate: .5\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := ApplyConfig(configFlagSet(t), "run.yaml", data); err != nil && !strings.HasPrefix(err.Error(), "run.yaml") {
			t.Errorf("error %q does not name the file", err)
		}
	})
}
