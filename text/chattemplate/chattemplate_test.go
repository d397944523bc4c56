package chattemplate

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/internal/testshared"
	"github.com/agentperf/agentperf/text/tokenizer"
)

// models are the real templates of ../shared/tokenizers the expected files
// were rendered with (testdata/gen_expected.py).
var models = []string{"qwen3", "deepseek_v3"}

type testCase struct {
	Name                string    `json:"name"`
	AddGenerationPrompt bool      `json:"add_generation_prompt"`
	Messages            []Message `json:"messages"`
}

func loadCases(t testing.TB) []testCase {
	t.Helper()
	b, err := os.ReadFile("testdata/messages.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []testCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Cases
}

// TestRenderMatchesTransformers renders every hand-written conversation of
// testdata/messages.json with the real chat templates of two models and
// compares the text byte for byte with what transformers'
// apply_chat_template rendered from the same tokenizer_config.json.
func TestRenderMatchesTransformers(t *testing.T) {
	dir := testshared.Path(t, "tokenizers")
	cases := loadCases(t)
	for _, model := range models {
		tmpl, err := LoadBeside(filepath.Join(dir, model+".tokenizer.json.zst"))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			t.Run(model+"/"+c.Name, func(t *testing.T) {
				want, err := os.ReadFile(filepath.Join("testdata", "expected", model+"."+c.Name+".txt"))
				if err != nil {
					t.Fatal(err)
				}
				got, err := tmpl.Render(c.Messages, c.AddGenerationPrompt)
				if err != nil {
					t.Fatal(err)
				}
				if got != string(want) {
					t.Errorf("rendered %q\ntransformers %q", got, want)
				}
			})
		}
	}
}

// TestRenderProbeMatchesTransformers renders the conversations with a
// hand-written template (testdata/probe.tokenizer_config.json) that
// exercises trim_blocks and lstrip_blocks as transformers sets them,
// namespace, loop controls, filters, slicing, tojson and the special
// tokens, against transformers' rendering of the same template.
func TestRenderProbeMatchesTransformers(t *testing.T) {
	tmpl, err := Load("testdata/probe.tokenizer_config.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range loadCases(t) {
		want, err := os.ReadFile(filepath.Join("testdata", "expected", "probe."+c.Name+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := tmpl.Render(c.Messages, c.AddGenerationPrompt)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if got != string(want) {
			t.Errorf("%s: rendered %q\ntransformers %q", c.Name, got, want)
		}
	}
}

// TestTemplateFromHubCache finds the chat template through the project's
// tokenizer resolution in a Hugging Face hub-cache layout
// (models--org--name/snapshots/COMMIT/, refs/main): beside the tokenizer
// file resolution loaded.
func TestTemplateFromHubCache(t *testing.T) {
	dir := testshared.Path(t, "tokenizers")
	root := t.TempDir()
	sha := strings.Repeat("5e", 20)
	snap := filepath.Join(root, "models--org--qwen", "snapshots", sha)
	copyFile(t, filepath.Join(dir, "qwen3.tokenizer.json.zst"), filepath.Join(snap, "tokenizer.json.zst"))
	copyFile(t, filepath.Join(dir, "qwen3.tokenizer_config.json"), filepath.Join(snap, "tokenizer_config.json"))
	if err := os.MkdirAll(filepath.Join(root, "models--org--qwen", "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "models--org--qwen", "refs", "main"), []byte(sha+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HF_HUB_CACHE": root, "HF_HUB_OFFLINE": "1"}
	_, origin, err := tokenizer.ResolveContext(context.Background(), "org/qwen", tokenizer.ResolveOptions{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := LoadBeside(origin.Path)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(snap, "tokenizer_config.json"); tmpl.Path != want {
		t.Errorf("template from %s, want %s", tmpl.Path, want)
	}
	c := loadCases(t)[0]
	got, err := tmpl.Render(c.Messages, c.AddGenerationPrompt)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(filepath.Join("testdata", "expected", "qwen3."+c.Name+".txt"))
	if got != string(want) {
		t.Errorf("rendered %q, want %q", got, want)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestParse covers the forms of a tokenizer_config.json: special tokens as
// strings, AddedToken objects or null; named templates; no template;
// raise_exception and loop controls inside a template.
func TestParse(t *testing.T) {
	t.Parallel()
	tmpl, err := Parse([]byte(`{"chat_template":[{"name":"tool_use","template":"T"},{"name":"default","template":"{{ bos_token }}{% for m in messages %}{% if m.role == 'tool' %}{{ raise_exception('no tools') }}{% endif %}{% if loop.index > 2 %}{% break %}{% endif %}[{{ m.role }}:{{ m.content }}]{% endfor %}{% if add_generation_prompt %}{{ eos_token }}{% endif %}{% if tools %}T{% endif %}"}],
		"bos_token":{"__type":"AddedToken","content":"<s>"},"eos_token":"</s>","unk_token":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tmpl.Special["unk_token"]; ok {
		t.Errorf("a null unk_token is set: %v", tmpl.Special)
	}
	got, err := tmpl.Render([]Message{{"system", "s"}, {"user", "u"}, {"assistant", "a"}}, true)
	if err != nil || got != "<s>[system:s][user:u]</s>" {
		t.Errorf("Render = %q, %v", got, err)
	}
	if _, err := tmpl.Render([]Message{{"tool", "x"}}, false); err == nil || !strings.Contains(err.Error(), "no tools") {
		t.Errorf("raise_exception: %v", err)
	}
	for _, cfg := range []string{`{}`, `{"chat_template":null}`, `{"chat_template":""}`, `{"chat_template":[{"name":"tool_use","template":"T"}]}`} {
		if _, err := Parse([]byte(cfg)); !errors.Is(err, ErrNoTemplate) {
			t.Errorf("Parse(%s) = %v, want ErrNoTemplate", cfg, err)
		}
	}
	for _, cfg := range []string{`[`, `{"chat_template":5}`, `{"chat_template":"{% if %}"}`, `{"chat_template":"x","bos_token":5}`} {
		if _, err := Parse([]byte(cfg)); err == nil || errors.Is(err, ErrNoTemplate) {
			t.Errorf("Parse(%s) = %v, want a parse error", cfg, err)
		}
	}
}

// FuzzParse: no tokenizer_config.json, template source or conversation
// makes Parse or Render panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"chat_template":"{% for m in messages %}{{ m.role }}{{ m.content }}{% endfor %}","eos_token":"e"}`), "hi")
	f.Add([]byte(`{"chat_template":[{"name":"default","template":"{{ messages[::-1] | tojson }}"}]}`), "x")
	if b, err := os.ReadFile(filepath.Join("testdata", "messages.json")); err == nil {
		f.Add(b, "")
	}
	f.Fuzz(func(t *testing.T, config []byte, content string) {
		tmpl, err := Parse(config)
		if err != nil {
			return
		}
		_, _ = tmpl.Render([]Message{{"system", content}, {"user", content}}, true)
	})
}
