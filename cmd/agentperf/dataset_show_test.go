package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/text/prompttext"
)

// showTestCorpus writes a two-trace JSONL corpus and returns its path.
func showTestCorpus(t *testing.T) string {
	t.Helper()
	ids := func(lo, hi int) string {
		var s []string
		for i := lo; i <= hi; i++ {
			s = append(s, itoa(i))
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	line := func(id string, tool int, reqs ...string) string {
		return `{"id":"` + id + `","models":["claude-x"],"block_size":64,"hash_id_scope":"local","tool_tokens":` + itoa(tool) + `,"system_tokens":20,"requests":[` +
			strings.Join(reqs, ",") + `]}`
	}
	r := func(t float64, in, out int, hashes string) string {
		return `{"t":` + ftoa(t) + `,"type":"n","model":"claude-x","in":` + itoa(in) + `,"out":` + itoa(out) +
			`,"hash_ids":` + hashes + `,"input_types":["text"],"output_types":["text"],"stop":"end_turn","api_time":1.0,"think_time":null}`
	}
	data := line("trace_a", 1000, r(0, 20*64+10, 100, ids(1, 20)), r(5, 24*64+3, 50, ids(1, 24)), r(9, 22*64, 10, ids(1, 22))) + "\n" +
		line("trace_b", 100, r(0, 3*64, 10, ids(1, 3))) + "\n"
	p := filepath.Join(t.TempDir(), "traces.jsonl")
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func ftoa(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

func TestDatasetShow(t *testing.T) {
	corpusFile := showTestCorpus(t)
	cacheDir := t.TempDir()
	// corpus holds the source and cache flags every case passes (the
	// dataset and synth corpus caches go to a temporary directory).
	src := func(args ...string) []string {
		return append([]string{"dataset", "show", "--input-file", corpusFile, "--dataset-cache-dir", cacheDir}, args...)
	}
	t.Run("json", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := runMain(context.Background(), src("--trace", "trace_a", "--turn", "1"), &out, &errb)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		var rep prompttext.TurnReport
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, out.String())
		}
		if rep.RecordedIn != 24*64+3 || rep.BuiltTokens != rep.RecordedIn || !rep.Exact {
			t.Errorf("recorded %d, built %d, exact %v", rep.RecordedIn, rep.BuiltTokens, rep.Exact)
		}
		roles := []string{}
		sum := 0
		for _, m := range rep.Messages {
			roles = append(roles, m.Role)
			if m.Content == "" || m.Tokens != m.Expected {
				t.Errorf("message %s: %d tokens, built for %d, %d bytes", m.Role, m.Tokens, m.Expected, len(m.Content))
			}
			sum += m.Tokens
		}
		if got := strings.Join(roles, ","); got != "system,user,assistant,user" || sum != rep.BuiltTokens {
			t.Errorf("roles %s (sum %d)", got, sum)
		}
		if !rep.TokenizerApproximate || rep.Tokenizer != "builtin" || !rep.Reconstruction.ResetContext {
			t.Errorf("metadata: %+v", rep)
		}
		if files, _ := filepath.Glob(filepath.Join(cacheDir, "synth-corpus-*.bin")); len(files) != 1 {
			t.Errorf("the tokenized prompt corpus is not cached beside the dataset cache: %v", files)
		}
	})
	t.Run("text", func(t *testing.T) {
		args := src("--trace", "trace_a", "--turn", "2", "--format", "text", "--random-seed", "42")
		var out, errb bytes.Buffer
		if code := runMain(context.Background(), args, &out, &errb); code != exitOK {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		for _, want := range []string{"trace trace_a  turn 2 of 3", "seed 42", "recorded in 1408", ": exact", "] system  1024 tokens", "] user", "more bytes; --full shows all"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("text output lacks %q:\n%s", want, out.String())
			}
		}
		var fullOut bytes.Buffer
		if code := runMain(context.Background(), append(args, "--full"), &fullOut, &errb); code != exitOK {
			t.Fatalf("--full: exit %d: %s", code, errb.String())
		}
		if strings.Contains(fullOut.String(), "more bytes") || fullOut.Len() <= out.Len() {
			t.Error("--full still truncates")
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"missing trace flag", src(), "--trace is required"},
		{"unknown trace", src("--trace", "nope"), "trace_a, trace_b"},
		{"turn out of range", src("--trace", "trace_b", "--turn", "1"), "has 1 parent turns"},
		{"bad format", src("--trace", "trace_b", "--format", "yaml"), "want json or text"},
		{"bad tokenizer", src("--trace", "trace_b", "--tokenizer", "/nonexistent/tok.json"), "--tokenizer"},
		{"no dataset", []string{"dataset", "show", "--trace", "trace_b"}, "no dataset given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := runMain(context.Background(), tc.args, &out, &errb)
			if code != exitUsage || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, errb.String(), exitUsage, tc.want)
			}
		})
	}
}

// TestDatasetShowTextOnATerminal: `dataset show` without --format prints
// text to a terminal (tmux here; it printed a 273 KB JSON dump before) and
// JSON into a pipe, so a script gets what it always got.
func TestDatasetShowTextOnATerminal(t *testing.T) {
	x := newTmux(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	show := fmt.Sprintf("%s=1 AIPERF_DATASET_MMAP_CACHE_DIR=%s %s dataset show --public-dataset synthetic:traces=2 --trace synth_0000 --turn 1",
		envAsMain, filepath.Join(dir, "cache"), exe)
	x.run("new-session", "-d", "-s", "ap", "-x", "160", "-y", "50",
		fmt.Sprintf("%s; %s | head -c 1 > %s/piped; echo SHOW-DONE; sleep 60", show, show, dir))
	screen := x.waitFor("dataset show's output", 60*time.Second, true, func(s string) bool { return strings.Contains(s, "SHOW-DONE") })
	if strings.Contains(screen, `"messages"`) || strings.HasPrefix(strings.TrimSpace(screen), "{") || !strings.Contains(screen, "trace synth_0000  turn 1 of") {
		t.Errorf("a terminal did not get the text format:\n%s", screen)
	}
	piped, err := os.ReadFile(filepath.Join(dir, "piped"))
	if err != nil || string(piped) != "{" {
		t.Errorf("a pipe got %q (%v), want JSON", piped, err)
	}
}
