package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/internal/testshared"
)

// writeReliabilityCorpus writes traces as a JSONL corpus file and returns its path.
func writeReliabilityCorpus(t *testing.T, dir string, traces []dataset.Trace) string {
	t.Helper()
	p := filepath.Join(dir, "corpus.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := dataset.WriteJSONL(f, traces); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}

// fastRunArgs are the flags of a short, quiet profile run.
func fastRunArgs(out string) []string {
	return []string{"--model", "demo", "--concurrency", "2", "--benchmark-duration", "1",
		"--streaming", "--trace-idle-gap-cap-seconds", "0.01", "--ui-type", "none", "--no-plot",
		"--output-artifact-dir", out}
}

// TestProfileBadInput: every kind of bad input stops with the documented
// exit code and a message that names the problem and where it is.
func TestProfileBadInput(t *testing.T) {
	traces := dataset.Synthesize(dataset.SynthOptions{Seed: 5, Traces: 3, MinTurns: 4, MaxTurns: 6, TimeScale: 0.001})
	cases := []struct {
		name string
		// args returns the arguments after "profile"; dir is a scratch
		// directory, out the artifact directory.
		args     func(t *testing.T, dir, out string) []string
		wantCode int
		want     []string // substrings of stderr
		// artifacts: the run started, so the artifact set must be complete.
		artifacts bool
	}{
		{
			name: "empty corpus file",
			args: func(t *testing.T, dir, out string) []string {
				p := filepath.Join(dir, "empty.jsonl")
				os.WriteFile(p, nil, 0o644)
				return append([]string{"--url", "sim://?zero-latency=true", "--input-file", p}, fastRunArgs(out)...)
			},
			wantCode: exitUsage, want: []string{"no traces"},
		},
		{
			name: "corpus filtered to nothing",
			args: func(t *testing.T, dir, out string) []string {
				return append([]string{"--url", "sim://?zero-latency=true", "--input-file", writeReliabilityCorpus(t, dir, traces), "--max-context-length", "10"}, fastRunArgs(out)...)
			},
			wantCode: exitUsage, want: []string{"--max-context-length 10 drops all 3 traces", "raise the limit"},
		},
		{
			name: "malformed trace line",
			args: func(t *testing.T, dir, out string) []string {
				return append([]string{"--url", "sim://?zero-latency=true", "--input-file", writeMalformedCorpus(t, dir, traces)}, fastRunArgs(out)...)
			},
			wantCode: exitUsage, want: []string{"bad.jsonl:2", `trace "broken"`, "malformed JSON"},
		},
		{
			name: "malformed trace line skipped",
			args: func(t *testing.T, dir, out string) []string {
				return append([]string{"--url", "sim://?zero-latency=true", "--input-file", writeMalformedCorpus(t, dir, traces), "--skip-invalid-traces"}, fastRunArgs(out)...)
			},
			wantCode: exitOK, want: []string{"1 invalid skipped", "skipped: ", "bad.jsonl:2"}, artifacts: true,
		},
		{
			name: "truncated gzip corpus",
			args: func(t *testing.T, dir, out string) []string {
				return append([]string{"--url", "sim://?zero-latency=true", "--input-file", writeTruncated(t, dir, traces, "gz")}, fastRunArgs(out)...)
			},
			wantCode: exitUsage, want: []string{"corpus.jsonl.gz", "(gzip)", "unexpected EOF"},
		},
		{
			name: "truncated zstd corpus",
			args: func(t *testing.T, dir, out string) []string {
				return append([]string{"--url", "sim://?zero-latency=true", "--input-file", writeTruncated(t, dir, traces, "zst")}, fastRunArgs(out)...)
			},
			wantCode: exitUsage, want: []string{"corpus.jsonl.zst", "(zstd)", "unexpected EOF"},
		},
		{
			name: "directory with an invalid trace",
			args: func(t *testing.T, dir, out string) []string {
				d := filepath.Join(dir, "traces")
				os.Mkdir(d, 0o755)
				var b bytes.Buffer
				dataset.WriteJSONL(&b, traces[:1])
				os.WriteFile(filepath.Join(d, "a.json"), b.Bytes(), 0o644)
				os.WriteFile(filepath.Join(d, "b.json"), []byte(`{"id":"neg","requests":[{"t":0,"type":"n","in":-5}]}`), 0o644)
				return append([]string{"--url", "sim://?zero-latency=true", "--input-file", d}, fastRunArgs(out)...)
			},
			wantCode: exitUsage, want: []string{"b.json:1", `trace "neg"`, "requests[0].in", "got -5"},
		},
		{
			name: "missing tokenizer",
			args: func(t *testing.T, dir, out string) []string {
				return append([]string{"--url", "sim://?zero-latency=true", "--input-file", writeReliabilityCorpus(t, dir, traces), "--tokenizer", "/nope"}, fastRunArgs(out)...)
			},
			wantCode: exitUsage, want: []string{"--tokenizer /nope", `"/nope": no such file or folder`, "'builtin'"},
		},
		{
			name: "tokenizer model id not in the hub cache",
			args: func(t *testing.T, dir, out string) []string {
				t.Setenv("HF_HUB_CACHE", "")
				t.Setenv("HF_HOME", filepath.Join(dir, "hf"))
				return append([]string{"--url", "sim://?zero-latency=true", "--input-file", writeReliabilityCorpus(t, dir, traces), "--tokenizer", "nosuchorg/nosuchmodel"}, fastRunArgs(out)...)
			},
			wantCode: exitUsage, want: []string{"not in the Hugging Face hub cache", "tried:", filepath.Join("hf", "hub", "models--nosuchorg--nosuchmodel"), "hf download nosuchorg/nosuchmodel", "--tokenizer builtin"},
		},
		{
			name: "wrong url: connection refused fails the warmup",
			args: func(t *testing.T, dir, out string) []string {
				// A real server needs a real tokenizer (the model name "demo" is none): builtin by name.
				return append([]string{"--url", "http://127.0.0.1:1", "--input-file", writeReliabilityCorpus(t, dir, traces), "--connect-timeout-seconds", "5", "--tokenizer", "builtin"}, fastRunArgs(out)...)
			},
			wantCode: exitRunFailed, want: []string{"run aborted (warmup_failed)", "connection refused", "the server must answer warmup requests"}, artifacts: true,
		},
		{
			name: "url without a scheme",
			args: func(t *testing.T, dir, out string) []string {
				return append([]string{"--url", "localhost:8000", "--input-file", writeReliabilityCorpus(t, dir, traces)}, fastRunArgs(out)...)
			},
			wantCode: exitUsage, want: []string{`--url "localhost:8000"`, "http(s)://host[:port]"},
		},
		{
			name: "unusable dataset cache directory falls back to memory",
			args: func(t *testing.T, dir, out string) []string {
				f := filepath.Join(dir, "a-file")
				os.WriteFile(f, []byte("x"), 0o644)
				return append([]string{"--url", "sim://?zero-latency=true", "--input-file", writeReliabilityCorpus(t, dir, traces),
					"--dataset-cache-dir", filepath.Join(f, "cache")}, fastRunArgs(out)...)
			},
			wantCode: exitOK, want: []string{"dataset cache disabled", "loading into memory", "continuing without it"}, artifacts: true,
		},
		{
			name: "conflicting datasets",
			args: func(t *testing.T, dir, out string) []string {
				return append([]string{"--url", "sim://?zero-latency=true", "--input-file", writeReliabilityCorpus(t, dir, traces), "--public-dataset", "synthetic"}, fastRunArgs(out)...)
			},
			wantCode: exitUsage, want: []string{"more than one dataset given", "pass exactly one"},
		},
		{
			name: "conflicting start ratios",
			args: func(t *testing.T, dir, out string) []string {
				return append([]string{"--url", "sim://?zero-latency=true", "--public-dataset", "synthetic:traces=3",
					"--trajectory-start-min-ratio", "0.8", "--trajectory-start-max-ratio", "0.2"}, fastRunArgs(out)...)
			},
			wantCode: exitUsage, want: []string{"--trajectory-start-min-ratio 0.8 / --trajectory-start-max-ratio 0.2", "min ≤ max"},
		},
		{
			name: "unwritable output directory",
			args: func(t *testing.T, dir, out string) []string {
				// A path below a regular file cannot be created, also for
				// root (a read-only directory would not stop root).
				f := filepath.Join(dir, "a-file")
				os.WriteFile(f, []byte("x"), 0o644)
				return append([]string{"--url", "sim://?zero-latency=true", "--public-dataset", "synthetic:traces=3"}, fastRunArgs(filepath.Join(f, "out"))...)
			},
			wantCode: exitUsage, want: []string{"create --output-artifact-dir", "a-file/out", "not a directory"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clearAIPerfEnv(t)
			dir := t.TempDir()
			out := filepath.Join(dir, "artifacts")
			args := append([]string{"profile"}, tc.args(t, dir, out)...)
			code, stdout, stderr := runProfileCLI(context.Background(), t, args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, stderr)
				}
			}
			if tc.artifacts {
				checkArtifacts(t, out)
			} else if ents, err := os.ReadDir(out); err == nil {
				for _, e := range ents {
					if strings.HasPrefix(e.Name(), "profile_export") || strings.HasPrefix(e.Name(), "context_overflow") {
						t.Errorf("an input error left %s behind", e.Name())
					}
				}
			}
		})
	}
}

// writeMalformedCorpus writes a corpus whose second line is a truncated
// trace and returns its path (named bad.jsonl).
func writeMalformedCorpus(t *testing.T, dir string, traces []dataset.Trace) string {
	t.Helper()
	var b bytes.Buffer
	if err := dataset.WriteJSONL(&b, traces); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(b.String(), "\n")
	bad := lines[0] + `{"id":"broken","requests":[` + "\n" + strings.Join(lines[1:], "")
	p := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeTruncated writes the corpus compressed with gzip or zstd (ext) and
// cuts it in half.
func writeTruncated(t *testing.T, dir string, traces []dataset.Trace, ext string) string {
	t.Helper()
	var plain, packed bytes.Buffer
	if err := dataset.WriteJSONL(&plain, traces); err != nil {
		t.Fatal(err)
	}
	switch ext {
	case "gz":
		w := gzip.NewWriter(&packed)
		w.Write(plain.Bytes())
		w.Close()
	case "zst":
		w, err := zstd.NewWriter(&packed)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(plain.Bytes())
		w.Close()
	}
	p := filepath.Join(dir, "corpus.jsonl."+ext)
	if err := os.WriteFile(p, packed.Bytes()[:packed.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProfileExportWriteErrorExitsNonZero: when an artifact cannot be put
// in place (here its final name is taken by a directory, which stops root
// too), the run reports the write error and exits 1; the other artifacts
// are still written. Write errors of the per-record file during the run
// are covered in the metrics package (TestCollectorWriteErrorIsReturned).
func TestProfileExportWriteErrorExitsNonZero(t *testing.T) {
	for _, name := range []string{"profile_export.jsonl", "profile_export_aiperf.json"} {
		t.Run(name, func(t *testing.T) {
			clearAIPerfEnv(t)
			out := t.TempDir()
			if err := os.MkdirAll(filepath.Join(out, name, "occupied"), 0o755); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"profile", "--url", "sim://?zero-latency=true", "--public-dataset", "synthetic:traces=3"}, fastRunArgs(out)...)
			code, stdout, stderr := runProfileCLI(context.Background(), t, args...)
			if code != exitRunFailed {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitRunFailed, stdout, stderr)
			}
			if !strings.Contains(stderr, "writing the request exports failed") || !strings.Contains(stderr, name) {
				t.Fatalf("stderr does not report the failed write of %s:\n%s", name, stderr)
			}
			if _, err := os.Stat(filepath.Join(out, "logs", "aiperf.log")); err != nil {
				t.Fatalf("log missing: %v", err)
			}
		})
	}
}

// TestProfileNeverLeaksSecrets extends TestProfileNeverLeaksTheAPIKey to
// Hugging Face tokens in the environment and credentials passed with
// --header: none may appear in stdout, stderr, any artifact or the log,
// also when requests fail.
func TestProfileNeverLeaksSecrets(t *testing.T) {
	const (
		hfToken   = "hf_TESTTOKEN0123456789abcdefSECRET"
		hubToken  = "hf_HUBTOKEN0123456789abcdefSECRET"
		bearer    = "bearer-0123456789-HEADERSECRET"
		apiKeyArg = "sk-argv-0123456789-APIKEYSECRET"
		urlPass   = "urlpass-0123456789-SECRET"
	)
	secrets := []string{hfToken, hubToken, bearer, apiKeyArg, urlPass}
	cases := []struct {
		name string
		url  string
		code int
		// bearerless: no --api-key and no -H Authorization (a password in
		// the URL is the Authorization header then).
		bearerless bool
	}{
		{"run with faults", "sim://?zero-latency=true&fault-500-every=5&fault-reset-mid-stream-every=7", exitOK, false},
		{"failed warmup", "http://127.0.0.1:1", exitRunFailed, false},
		{"password in the url", "http://user:" + urlPass + "@127.0.0.1:1", exitRunFailed, true},
		// Two sources of Authorization: refused before anything runs.
		{"password in the url and a key", "http://user:" + urlPass + "@127.0.0.1:1", exitUsage, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clearAIPerfEnv(t)
			t.Setenv("HF_TOKEN", hfToken)
			t.Setenv("HUGGING_FACE_HUB_TOKEN", hubToken)
			dir := t.TempDir()
			args := []string{"profile", "--url", tc.url, "--public-dataset", "synthetic:traces=4", "--header", "X-Api-Token: " + bearer}
			if !tc.bearerless {
				args = append(args, "--header", "Authorization: Bearer "+bearer, "--api-key", apiKeyArg)
			}
			args = append(args, fastRunArgs(dir)...)
			args = append(args, "--ui-type", "simple") // live lines on stderr, too
			if !strings.HasPrefix(tc.url, "sim:") {
				args = append(args, "--tokenizer", "builtin") // "demo" is no model id a real server's tokenizer could come from
			}
			code, stdout, stderr := runProfileCLI(context.Background(), t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, stdout, stderr)
			}
			for _, s := range secrets {
				if strings.Contains(stdout, s) || strings.Contains(stderr, s) {
					t.Errorf("secret %s… was printed", s[:8])
				}
			}
			if tc.code == exitUsage {
				if !strings.Contains(stderr, "pass one of them") {
					t.Errorf("the refusal does not say why:\n%s", stderr)
				}
				return
			}
			files := 0
			filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
				if err != nil || fi.IsDir() {
					return err
				}
				files++
				b, err := os.ReadFile(p)
				if err != nil {
					t.Error(err)
				}
				for _, s := range secrets {
					if bytes.Contains(b, []byte(s)) {
						t.Errorf("%s contains secret %s…", p, s[:8])
					}
				}
				return nil
			})
			if files < 4 {
				t.Fatalf("only %d files were written; the check greps nothing", files)
			}
			agg := readAggregate(t, dir)
			ic, _ := agg["input_config"].(map[string]any)
			if ic == nil || ic["key_supplied"] != !tc.bearerless {
				t.Fatalf("input_config does not record whether a key was set: %v", agg["input_config"])
			}
			if names := strings.Join(toStrings(ic["header_names"]), ","); !strings.Contains(names, "X-Api-Token") {
				t.Fatalf("input_config.header_names = %v, want the header names (without values)", ic["header_names"])
			}
		})
	}
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// TestProfileSignals runs the real binary and interrupts it: SIGINT and
// SIGTERM during the warmup and during profiling each leave a complete,
// parseable artifact set marked cancelled and exit 130. A second and a
// third signal: signals_test.go.
func TestProfileSignals(t *testing.T) {
	testshared.SkipIfShort(t, "builds and runs the binary")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH; cannot build the binary")
	}
	bin := filepath.Join(t.TempDir(), "agentperf")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cacheDir := t.TempDir()

	cases := []struct {
		name  string
		url   string
		grace string
		// waitFor is the log line after which the signals are sent.
		waitFor string
		signals []os.Signal
	}{
		{name: "SIGINT during warmup", url: "sim://?prefill-tokens-per-sec=2000", grace: "1",
			waitFor: "warmup: ", signals: []os.Signal{os.Interrupt}},
		{name: "SIGTERM during warmup", url: "sim://?prefill-tokens-per-sec=2000", grace: "1",
			waitFor: "warmup: ", signals: []os.Signal{syscall.SIGTERM}},
		{name: "SIGINT during profiling", url: "sim://?zero-latency=true", grace: "2",
			waitFor: "profiling: started", signals: []os.Signal{os.Interrupt}},
		{name: "SIGTERM during profiling", url: "sim://?zero-latency=true", grace: "2",
			waitFor: "profiling: started", signals: []os.Signal{syscall.SIGTERM}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "artifacts")
			cmd := exec.Command(bin, "profile", "--url", tc.url, "--public-dataset", "synthetic:traces=6",
				"--model", "demo", "--concurrency", "4", "--benchmark-duration", "600",
				"--streaming", "--use-server-token-count", "--trace-idle-gap-cap-seconds", "0.01",
				"--benchmark-grace-period", tc.grace, "--output-artifact-dir", out, "--ui-type", "none", "--no-plot")
			cmd.Env = cleanEnv(cacheDir)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// done is closed once the process exited; werr is then its
			// exit status (stdout and stderr are complete).
			var werr error
			done := make(chan struct{})
			go func() { werr = cmd.Wait(); close(done) }()
			t.Cleanup(func() {
				select {
				case <-done:
				default:
					cmd.Process.Kill()
					<-done
				}
			})
			logPath := filepath.Join(out, "logs", "aiperf.log")
			if !waitForLog(logPath, tc.waitFor, done, 60*time.Second) {
				select {
				case <-done:
					t.Fatalf("exited (%v) before %q appeared in %s\nstderr:\n%s", werr, tc.waitFor, logPath, stderr.String())
				default:
					t.Fatalf("%q never appeared in %s", tc.waitFor, logPath)
				}
			}
			time.Sleep(300 * time.Millisecond) // let requests be in flight
			exited := false
			for i, s := range tc.signals {
				if err := cmd.Process.Signal(s); err != nil {
					t.Fatal(err)
				}
				if i < len(tc.signals)-1 {
					// The first signal must not end a stalled run by itself.
					select {
					case <-done:
						t.Fatalf("exited after the first signal although requests are stalled and the grace period is long: %v\nstderr:\n%s", werr, stderr.String())
					case <-time.After(time.Second):
					}
				}
			}
			// Generous bound, only to turn a hang into a failure.
			select {
			case <-done:
				exited = true
			case <-time.After(90 * time.Second):
			}
			if !exited {
				t.Fatalf("still running 90 s after the signal")
			}
			var ee *exec.ExitError
			if !errors.As(werr, &ee) || ee.ExitCode() != exitInterrupted {
				t.Fatalf("exit %v, want %d\nstderr:\n%s", werr, exitInterrupted, stderr.String())
			}
			if !strings.Contains(stderr.String(), "stopping gracefully") {
				t.Errorf("stderr does not acknowledge the signal:\n%s", stderr.String())
			}
			agg := checkArtifacts(t, out)
			if agg["was_cancelled"] != true {
				t.Fatalf("was_cancelled = %v", agg["was_cancelled"])
			}
			acct := agg["metadata"].(map[string]any)["request_accounting"].(map[string]any)
			total := 0.0
			for _, k := range []string{"profiling_ok", "profiling_errors", "warmup_ok", "warmup_errors", "context_overflows", "cancelled"} {
				total += num(acct, k)
			}
			if total != num(acct, "sent") {
				t.Fatalf("accounting does not add up: %v", acct)
			}
			if strings.Contains(tc.name, "warmup") {
				if num(acct, "profiling_ok") != 0 || num(acct, "cancelled") < 1 {
					t.Fatalf("interrupted warmup: want cancelled warmup requests and no profiling, got %v", acct)
				}
			} else if num(acct, "profiling_ok") < 1 {
				t.Fatalf("interrupted profiling: no profiling record: %v", acct)
			}
		})
	}
}

// cleanEnv is the test process's environment without AIPERF_* and API
// keys, with the dataset cache in cacheDir.
func cleanEnv(cacheDir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AIPERF_") || k == "OPENAI_API_KEY" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "AIPERF_DATASET_MMAP_CACHE_DIR="+cacheDir)
}

// waitForLog polls path until it contains want; false when the process
// exited first or the time ran out.
func waitForLog(path, want string, exited <-chan struct{}, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(want)) {
			return true
		}
		select {
		case <-exited:
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
	return false
}

// TestProfileFullDiskExitsNonZero writes the artifacts to a 256 KiB tmpfs
// that fills up during the run: the write errors are reported ("no space
// left on device") and the exit code is 1. It needs mount(8) and the right
// to mount (root in a container that allows it); otherwise it is skipped.
func TestProfileFullDiskExitsNonZero(t *testing.T) {
	testshared.SkipIfShort(t, "mounts a tmpfs")
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v: %s)", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	// Fill the file system up to its last few KiB, so the run's exports
	// fail however many records it produces.
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free > 8<<10 {
		if err := os.WriteFile(filepath.Join(mnt, "filler"), make([]byte, free-8<<10), 0o644); err != nil {
			t.Fatalf("fill the tmpfs: %v", err)
		}
	}
	clearAIPerfEnv(t)
	out := filepath.Join(mnt, "artifacts")
	args := append([]string{"profile", "--url", "sim://?zero-latency=true", "--public-dataset", "synthetic:traces=3"}, fastRunArgs(out)...)
	args = append(args, "--benchmark-duration", "2")
	code, stdout, stderr := runProfileCLI(context.Background(), t, args...)
	if code != exitRunFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitRunFailed, stdout, stderr)
	}
	if !strings.Contains(stderr, "writing the request exports failed") || !strings.Contains(stderr, "no space left on device") {
		t.Fatalf("stderr does not report the full disk:\n%s", stderr)
	}
	// Temporary files of the atomic writes are not left behind.
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}
