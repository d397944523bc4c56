package chattemplate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ardanlabs/jinja"
)

// ErrNoTemplate is returned when a tokenizer_config.json has no
// chat_template (or no "default" one among named templates).
var ErrNoTemplate = errors.New("no chat_template")

// Message is one chat message: a role (system, user, assistant) and its
// text.
type Message struct {
	Role, Content string
}

// Template is a compiled chat template with the special tokens it is
// rendered with. It is safe for concurrent use.
type Template struct {
	// Source is the template's Jinja text.
	Source string
	// Path is the tokenizer_config.json it came from ("" when parsed from
	// bytes).
	Path string
	// Special maps the special-token variables the template sees
	// (bos_token, eos_token, pad_token, unk_token) to their text; a token
	// the config does not set is absent.
	Special map[string]string

	tmpl *jinja.Template
}

// Parse reads the chat template and special tokens of a
// tokenizer_config.json's contents and compiles the template. A
// chat_template given as a list of {"name", "template"} entries uses the one
// named "default", as transformers does. No template is ErrNoTemplate.
func Parse(config []byte) (*Template, error) {
	var raw struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
		PAD          json.RawMessage `json:"pad_token"`
		UNK          json.RawMessage `json:"unk_token"`
	}
	if err := json.Unmarshal(config, &raw); err != nil {
		return nil, fmt.Errorf("parse tokenizer_config.json: %w", err)
	}
	src, err := templateSource(raw.ChatTemplate)
	if err != nil {
		return nil, err
	}
	t := &Template{Source: src, Special: map[string]string{}}
	for name, v := range map[string]json.RawMessage{"bos_token": raw.BOS, "eos_token": raw.EOS, "pad_token": raw.PAD, "unk_token": raw.UNK} {
		s, set, err := tokenText(v)
		if err != nil {
			return nil, fmt.Errorf("tokenizer_config.json %s: %w", name, err)
		}
		if set {
			t.Special[name] = s
		}
	}
	if t.tmpl, err = compile(src); err != nil {
		return nil, fmt.Errorf("chat_template: %w", err)
	}
	return t, nil
}

// Load reads the tokenizer_config.json at path (Parse).
func Load(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read chat template: %w", err)
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t.Path = path
	return t, nil
}

// ConfigBeside is the tokenizer_config.json that goes with a tokenizer
// file: the one in the same folder (a hub snapshot or a model folder), or,
// for a file named PREFIX.tokenizer.json[.zst], PREFIX.tokenizer_config.json
// beside it when that exists. It does not check that the result exists
// beyond choosing between the two.
func ConfigBeside(tokenizerPath string) string {
	dir, base := filepath.Split(tokenizerPath)
	base = strings.TrimSuffix(base, ".zst")
	if prefix, ok := strings.CutSuffix(base, ".tokenizer.json"); ok && prefix != "" {
		p := filepath.Join(dir, prefix+".tokenizer_config.json")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return filepath.Join(dir, "tokenizer_config.json")
}

// Render renders msgs as transformers' apply_chat_template(msgs,
// tokenize=False, add_generation_prompt=addGenerationPrompt) does. A
// template's raise_exception (e.g. a role it does not take) is an error.
func (t *Template) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		list[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	data := make(map[string]any, len(t.Special)+3)
	for k, v := range t.Special {
		data[k] = v
	}
	data["messages"] = list
	data["add_generation_prompt"] = addGenerationPrompt
	data["tools"] = nil
	out, err := render(t.tmpl, data)
	if err != nil {
		return "", fmt.Errorf("render chat template: %w", err)
	}
	return out, nil
}

// templateSource is the chat_template field: a string, or a list of named
// templates of which "default" is used.
func templateSource(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", ErrNoTemplate
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if strings.TrimSpace(s) == "" {
			return "", ErrNoTemplate
		}
		return s, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return "", errors.New(`chat_template: neither a string nor a list of {"name", "template"}`)
	}
	var names []string
	for _, n := range named {
		if n.Name == "default" {
			return n.Template, nil
		}
		names = append(names, n.Name)
	}
	return "", fmt.Errorf("%w named \"default\" among %q", ErrNoTemplate, names)
}

// tokenText reads a special token given as a string, as an object with
// "content" (transformers' AddedToken), or null (not set).
func tokenText(raw json.RawMessage) (string, bool, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, true, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", false, errors.New(`neither a string nor an object with "content"`)
	}
	return *obj.Content, true, nil
}

// LoadBeside loads the chat template of the tokenizer file at
// tokenizerPath (the file a tokenizer was loaded from, such as
// tokenizer.Origin.Path): the tokenizer_config.json ConfigBeside names. A
// missing config, or one without a chat_template, is an error wrapping
// ErrNoTemplate.
func LoadBeside(tokenizerPath string) (*Template, error) {
	p := ConfigBeside(tokenizerPath)
	if _, err := os.Stat(p); err != nil {
		return nil, fmt.Errorf("%w: no tokenizer_config.json beside the tokenizer %s (looked for %s)", ErrNoTemplate, tokenizerPath, p)
	}
	return Load(p)
}

// compile and render call the Jinja engine, turning a panic in it (a
// template is outside input) into an error.
func compile(src string) (t *jinja.Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("the template engine failed: %v", r)
		}
	}()
	return jinja.Compile(src)
}

func render(t *jinja.Template, data map[string]any) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("the template engine failed: %v", r)
		}
	}()
	return t.Render(data)
}
