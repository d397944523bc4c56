package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/agentperf/agentperf/internal/testshared"
)

// cacheTestCorpus returns ../shared/traces/<name> next to the module root,
// skipping when it is absent.
func cacheTestCorpus(t *testing.T, name string) string {
	t.Helper()
	return testshared.Path(t, filepath.Join("traces", name))
}

// TestDatasetCacheCommands walks the cache subcommands through a build, a
// hit, a locate, a verify, and a verify of a damaged file.
func TestDatasetCacheCommands(t *testing.T) {
	input := cacheTestCorpus(t, "dir-sample")
	dir := t.TempDir()
	t.Setenv(envCacheDir, dir)
	t.Setenv(envCacheEnabled, "")

	code, out, errOut := runCLI(t, "dataset", "cache", "build", "--input-file", input)
	if code != 0 || !strings.HasPrefix(out, "built: ") || !strings.Contains(errOut, "loaded 5 of 5 traces") || !strings.Contains(errOut, "cache miss") {
		t.Fatalf("first build: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	path := strings.TrimSpace(strings.SplitN(strings.TrimPrefix(out, "built: "), "\n", 2)[0])
	if filepath.Dir(path) != dir {
		t.Errorf("cache file %s is not in %s=%s", path, envCacheDir, dir)
	}
	code, out, errOut = runCLI(t, "dataset", "cache", "build", "--input-file", input)
	if code != 0 || !strings.HasPrefix(out, "already cached: "+path) || !strings.Contains(errOut, "cache hit") {
		t.Fatalf("second build: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "dataset", "cache", "locate", "--input-file", input)
	if code != 0 || !strings.HasPrefix(out, path+"\n") || !strings.Contains(out, "exists") {
		t.Fatalf("locate: code %d\n%s", code, out)
	}
	// Other selection flags map to another, not yet built, file.
	code, out, _ = runCLI(t, "dataset", "cache", "locate", "--input-file", input, "--num-dataset-entries", "2")
	if code != 0 || strings.HasPrefix(out, path) || !strings.Contains(out, "missing") {
		t.Fatalf("locate with other flags: code %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "dataset", "cache", "verify", "--input-file", input)
	if code != 0 || !strings.HasPrefix(out, "ok: "+path) {
		t.Fatalf("verify: code %d\n%s", code, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x20
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "dataset", "cache", "verify", path)
	if code != exitRunFailed || !strings.Contains(out, "BAD: ") || !strings.Contains(out, "corrupt") {
		t.Fatalf("verify of a damaged file: code %d, want %d\n%s", code, exitRunFailed, out)
	}
	// A run rebuilds it with a warning.
	code, out, errOut = runCLI(t, "dataset", "cache", "build", "--input-file", input)
	if code != 0 || !strings.HasPrefix(out, "built: "+path) || !strings.Contains(errOut, "rebuilding") {
		t.Fatalf("build over a damaged file: code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestDatasetCacheUsageErrors(t *testing.T) {
	input := cacheTestCorpus(t, "dir-sample")
	t.Setenv(envCacheDir, t.TempDir())
	cases := []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"no action", "", []string{}, "an action is required"},
		{"unknown action", "", []string{"purge"}, "unknown action"},
		{"no dataset", "", []string{"build"}, "no dataset given"},
		{"two datasets", "", []string{"build", "--input-file", input, "--hf-dataset", "a/b"}, "more than one dataset"},
		{"synthetic", "", []string{"build", "--public-dataset", "synthetic"}, "never cached"},
		{"other custom type", "", []string{"build", "--input-file", input, "--custom-dataset-type", "mooncake_trace"}, "only weka_trace"},
		{"cache off by flag", "", []string{"build", "--input-file", input, "--no-dataset-cache"}, "cache is off"},
		{"cache off by env", "false", []string{"locate", "--input-file", input}, "cache is off"},
		{"bad env value", "maybe", []string{"locate", "--input-file", input}, envCacheEnabled},
		{"missing input", "", []string{"build", "--input-file", filepath.Join(t.TempDir(), "nope.jsonl")}, "no such file"},
		{"negative limit", "", []string{"build", "--input-file", input, "--max-context-length", "-1"}, "--max-context-length -1"},
		{"stray argument", "", []string{"locate", "x", "--input-file", input}, "unexpected argument"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(envCacheEnabled, tc.env)
			code, _, errOut := runCLI(t, append([]string{"dataset", "cache"}, tc.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tc.want) {
				t.Errorf("code %d, want %d with %q; stderr:\n%s", code, exitUsage, tc.want, errOut)
			}
		})
	}
}

// TestDatasetFlagsOpen checks the flag and environment plumbing of
// datasetFlags.open: the cache directory precedence, the loaded-line, and
// that the flags are registered under the names profile's argv uses.
func TestDatasetFlagsOpen(t *testing.T) {
	input := cacheTestCorpus(t, "dir-sample")
	envDir, flagDir := t.TempDir(), t.TempDir()
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		wantDir string // "" = no cache
		wantLog string
	}{
		{"env dir", map[string]string{envCacheDir: envDir}, nil, envDir, "cache miss"},
		{"flag beats env", map[string]string{envCacheDir: envDir}, []string{"--dataset-cache-dir", flagDir}, flagDir, "cache"},
		{"env disables", map[string]string{envCacheDir: envDir, envCacheEnabled: "0"}, nil, "", "dataset cache off"},
		{"flag disables", map[string]string{envCacheDir: envDir}, []string{"--no-dataset-cache"}, "", "dataset cache off"},
		{"explicit dir re-enables", map[string]string{envCacheEnabled: "false"}, []string{"--dataset-cache-dir", flagDir}, flagDir, "cache"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
			d := addDatasetFlags(fs)
			d.getenv = func(k string) string { return tc.env[k] }
			if err := fs.Parse(append([]string{"--input-file", input, "--num-dataset-entries", "3"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			var o, e strings.Builder
			c, err := d.open(t.Context(), stdio{out: &o, err: &e})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := filepath.Dir(c.CachePath()); (tc.wantDir == "") != (c.CachePath() == "") || (tc.wantDir != "" && got != tc.wantDir) {
				t.Errorf("cache file %q, want one in %q", c.CachePath(), tc.wantDir)
			}
			if !regexp.MustCompile(`loaded 3 of 5 traces \(.*5 eligible, capped by --num-dataset-entries 3`).MatchString(e.String()) || !strings.Contains(e.String(), tc.wantLog) {
				t.Errorf("stderr:\n%s\nwant the loaded line and %q", e.String(), tc.wantLog)
			}
		})
	}
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	addDatasetFlags(fs)
	for _, name := range []string{"input-file", "public-dataset", "hf-dataset", "custom-dataset-type", "max-context-length", "synthesis-max-osl", "num-dataset-entries", "skip-invalid-traces", "dataset-cache-dir", "no-dataset-cache"} {
		if fs.Lookup(name) == nil {
			t.Errorf("flag --%s is not registered", name)
		}
	}
}
