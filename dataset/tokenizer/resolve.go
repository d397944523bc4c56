package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentperf/agentperf/internal/hfhub"
	"os"
	"path/filepath"
	"strings"
)

// ResolveOptions are the optional inputs of [ResolveWith].
type ResolveOptions struct {
	// Getenv reads the environment (HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE,
	// HF_HOME, HOME); nil means no variables are set.
	Getenv func(string) string
	// TiktokenPattern is the pre-tokenizer pattern of a tiktoken rank file:
	// a preset name ([TiktokenPreset]) or a regular expression. Empty
	// means: guess from the file name ([TiktokenPresetForFile]).
	TiktokenPattern string
}

// Resolve returns the tokenizer named by spec; see [ResolveWith].
func Resolve(spec string, getenv func(string) string) (Tokenizer, error) {
	return ResolveWith(spec, ResolveOptions{Getenv: getenv})
}

// ResolveWith returns the tokenizer named by spec:
//
//   - "" or "builtin": [Builtin];
//   - a file: tokenizer.json (plain or .zst) via [LoadHF], or a tiktoken rank
//     file (*.tiktoken, tiktoken.model) via [LoadTiktoken];
//   - a folder holding tokenizer.json[.zst] or tiktoken.model (or one
//     *.tiktoken file); a tokenizer_config.json beside a tiktoken file gives
//     its special tokens;
//   - else a Hugging Face model id "org/name" (optionally "@revision"),
//     found in the local hub cache as
//     <cache>/models--org--name/snapshots/<refs/revision>/ with the folder
//     rules above. The cache is HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE,
//     else $HF_HOME/hub, else ~/.cache/huggingface/hub. Nothing is
//     downloaded.
//
// When nothing is found the error names every path tried and how to fetch
// the files.
func ResolveWith(spec string, opts ResolveOptions) (Tokenizer, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if spec == "" || spec == "builtin" {
		return Builtin(), nil
	}
	if fi, err := os.Stat(spec); err == nil {
		if fi.IsDir() {
			var tried []string
			t, err := loadFromDir(spec, spec, opts, &tried)
			if err == nil && t == nil {
				err = fmt.Errorf("folder %s holds no tokenizer; looked for:\n  %s", spec, strings.Join(tried, "\n  "))
			}
			return t, err
		}
		return loadFile(spec, spec, opts)
	}
	repo, rev, ok := parseModelID(spec)
	if !ok {
		return nil, fmt.Errorf("tokenizer %q: no such file or folder, and not a Hugging Face model id (org/name); pass a tokenizer.json, a folder, a model id in the local hub cache, or 'builtin'", spec)
	}
	root := hfhub.CacheDir(getenv)
	snap, _, tried, err := hfhub.Snapshot(root, hfhub.KindModel, repo, rev)
	if err != nil && !errors.Is(err, hfhub.ErrNotCached) {
		return nil, fmt.Errorf("tokenizer for %s: %w; fetch again with: hf download %s tokenizer.json tokenizer_config.json", repo, err, repo)
	}
	if err == nil {
		t, err := loadFromDir(snap, spec, opts, &tried)
		if err != nil || t != nil {
			return t, err
		}
	}
	return nil, fmt.Errorf("tokenizer %s: no such file or folder, and model %s@%s is not in the Hugging Face hub cache %s; tried:\n  %s\nfetch it with:\n  HF_HUB_CACHE=%s hf download %s tokenizer.json tokenizer_config.json\nor run with --tokenizer builtin (approximate token counts)",
		spec, repo, rev, root, strings.Join(tried, "\n  "), root, repo)
}

// loadFromDir loads the tokenizer in dir, or returns (nil, nil) after adding
// the paths it looked at to tried.
func loadFromDir(dir, name string, opts ResolveOptions, tried *[]string) (Tokenizer, error) {
	for _, f := range []string{"tokenizer.json", "tokenizer.json.zst", "tiktoken.model"} {
		p := filepath.Join(dir, f)
		*tried = append(*tried, p)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return loadFile(p, name, opts)
		}
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*.tiktoken"))
	*tried = append(*tried, filepath.Join(dir, "*.tiktoken"))
	switch len(matches) {
	case 0:
		return nil, nil
	case 1:
		return loadFile(matches[0], name, opts)
	}
	return nil, fmt.Errorf("folder %s holds several tiktoken files (%s): pass the one to use", dir, strings.Join(matches, ", "))
}

// loadFile loads a tokenizer.json or tiktoken file and names it name.
func loadFile(path, name string, opts ResolveOptions) (Tokenizer, error) {
	base := strings.TrimSuffix(filepath.Base(path), ".zst")
	var t *BPE
	var err error
	switch {
	case strings.HasSuffix(base, ".json"):
		t, err = LoadHF(path)
	case strings.HasSuffix(base, ".tiktoken") || base == "tiktoken.model":
		pattern := opts.TiktokenPattern
		if pattern == "" {
			pattern = TiktokenPresetForFile(base)
		}
		if pattern == "" {
			return nil, fmt.Errorf("tiktoken file %s: cannot tell its pre-tokenizer pattern from the name: give a pattern preset (cl100k, o200k, kimi, qwen2) or a regular expression", path)
		}
		var specials map[string]uint32
		cfgPath := filepath.Join(filepath.Dir(path), "tokenizer_config.json")
		if _, serr := os.Stat(cfgPath); serr == nil {
			cfg, cerr := LoadConfig(cfgPath)
			if cerr != nil {
				return nil, cerr
			}
			specials = cfg.AddedTokens
		}
		t, err = LoadTiktoken(path, pattern, specials)
	default:
		return nil, fmt.Errorf("tokenizer file %s: not a tokenizer.json (plain or .zst) or a tiktoken rank file (*.tiktoken, tiktoken.model)", path)
	}
	if err != nil {
		return nil, err
	}
	t.name = name
	return t, nil
}

// parseModelID splits "org/name[@revision]"; the revision defaults to
// "main".
func parseModelID(spec string) (repo, rev string, ok bool) {
	repo, rev, hasRev := strings.Cut(spec, "@")
	if !hasRev {
		rev = "main"
	}
	org, name, found := strings.Cut(repo, "/")
	if !found || !validHubName(org) || !validHubName(name) || rev == "" || strings.Contains(rev, "..") {
		return "", "", false
	}
	return repo, rev, true
}

func validHubName(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Config is the part of a tokenizer_config.json this package reads.
type Config struct {
	// AddedTokens maps the content of every entry of added_tokens_decoder
	// to its id.
	AddedTokens map[string]uint32
	// BOSToken and EOSToken are the bos_token and eos_token contents ("" when
	// absent).
	BOSToken, EOSToken string
	// TokenizerClass is tokenizer_class (such as "Qwen2Tokenizer").
	TokenizerClass string
}

// LoadConfig reads a tokenizer_config.json.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tokenizer config: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig parses the contents of a tokenizer_config.json.
func ParseConfig(data []byte) (*Config, error) {
	var raw struct {
		AddedTokensDecoder map[string]struct {
			Content string `json:"content"`
		} `json:"added_tokens_decoder"`
		BOSToken       json.RawMessage `json:"bos_token"`
		EOSToken       json.RawMessage `json:"eos_token"`
		TokenizerClass string          `json:"tokenizer_class"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("parse tokenizer_config.json: %w", err)
	}
	cfg := &Config{AddedTokens: make(map[string]uint32, len(raw.AddedTokensDecoder)), TokenizerClass: raw.TokenizerClass}
	for key, tok := range raw.AddedTokensDecoder {
		var id uint32
		if _, err := fmt.Sscan(key, &id); err != nil || fmt.Sprint(id) != key {
			return nil, fmt.Errorf("added_tokens_decoder key %q is not a token id", key)
		}
		if tok.Content == "" {
			return nil, fmt.Errorf("added_tokens_decoder[%s] has no content", key)
		}
		cfg.AddedTokens[tok.Content] = id
	}
	var err error
	if cfg.BOSToken, err = tokenContent(raw.BOSToken); err != nil {
		return nil, fmt.Errorf("bos_token: %w", err)
	}
	if cfg.EOSToken, err = tokenContent(raw.EOSToken); err != nil {
		return nil, fmt.Errorf("eos_token: %w", err)
	}
	return cfg, nil
}

// tokenContent reads a token given as a string, as {"content": ...}, or null.
func tokenContent(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", errors.New("neither a string nor an object with content")
	}
	return *obj.Content, nil
}
