package run

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/internal/testshared"
	"github.com/agentperf/agentperf/text/chattemplate"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// TestTemplateOverhead: what a real chat template adds to a prompt, in the
// project's tokenizer's count, equals transformers' count of the same
// rendering (text/chattemplate/testdata/expected/overhead.json, made by
// gen_expected.py).
func TestTemplateOverhead(t *testing.T) {
	dir := testshared.Path(t, "tokenizers")
	b, err := os.ReadFile("../text/chattemplate/testdata/expected/overhead.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]Overhead
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for model, w := range want {
		path := filepath.Join(dir, model+".tokenizer.json.zst")
		tok, err := tokenizer.Resolve(path, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		tmpl, err := chattemplate.LoadBeside(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := TemplateOverhead(tmpl, tok)
		if err != nil || got != w {
			t.Errorf("%s: TemplateOverhead = %+v, %v; transformers counts %+v", model, got, err, w)
		}
	}
}

// TestLoadChatTemplate: with Spec.Tokenizer.ApplyChatTemplate, Load reads
// the template beside the tokenizer and logs its overhead; with a
// tokenizer that has none (builtin) the flag has no effect and the log
// says so; without the flag nothing is read.
func TestLoadChatTemplate(t *testing.T) {
	dir := testshared.Path(t, "tokenizers")
	traces := []dataset.Trace{{ID: "t", Requests: []dataset.Request{{In: 100, Out: 10}}}}
	for _, tc := range []struct {
		name, tokenizer string
		apply           bool
		wantTemplate    bool
		wantLog         string
	}{
		{"qwen3", filepath.Join(dir, "qwen3.tokenizer.json.zst"), true, true, "adds 13 tokens to a system + user prompt and 10 per further assistant + user turn"},
		{"builtin", "builtin", true, false, "the builtin tokenizer has no chat template; the flag has no effect"},
		{"off", filepath.Join(dir, "qwen3.tokenizer.json.zst"), false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSpec()
			s.Replay.URL, s.Replay.Models, s.Replay.Concurrency, s.Replay.BenchmarkDuration = "http://127.0.0.1:1", []string{"m"}, 1, 1e9
			s.OutputDir = t.TempDir()
			s.Corpus.Traces = traces
			s.Tokenizer.Name, s.Tokenizer.ApplyChatTemplate = tc.tokenizer, tc.apply
			var log strings.Builder
			s.Log = &log
			l, err := Load(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if (l.ChatTemplate != nil) != tc.wantTemplate {
				t.Errorf("ChatTemplate = %v, want one: %v", l.ChatTemplate, tc.wantTemplate)
			}
			if tc.wantLog != "" && !strings.Contains(log.String(), tc.wantLog) {
				t.Errorf("the log does not say %q:\n%s", tc.wantLog, log.String())
			}
			if !tc.apply && strings.Contains(log.String(), "apply-chat-template") {
				t.Errorf("the log mentions the chat template without the flag:\n%s", log.String())
			}
		})
	}
}
