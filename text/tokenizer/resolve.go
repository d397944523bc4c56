package tokenizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentperf/agentperf/internal/hfhub"
)

// ResolveOptions are the optional inputs of [ResolveWith].
type ResolveOptions struct {
	// Getenv reads the environment (HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE,
	// HF_HOME, XDG_CACHE_HOME, HOME); nil means no variables are set.
	Getenv func(string) string
	// TiktokenPattern is the pre-tokenizer pattern of a tiktoken rank file:
	// a preset name ([TiktokenPreset]) or a regular expression. Empty
	// means: guess from the file name ([TiktokenPresetForFile]).
	TiktokenPattern string
	// Revision is the revision of a hub model id given without
	// "@revision"; "" means "main". An id with
	// "@revision" and a different Revision is an error.
	Revision string
	// Hub, when set, downloads the tokenizer files of a hub model id that
	// the hub cache lacks (tokenizer.json or a tiktoken file, and
	// tokenizer_config.json when the model has one). nil: the cache only,
	// nothing touches the network. A tokenizer in the cache is used
	// without a request either way.
	Hub *hfhub.Client
}

// Origin says where a resolved tokenizer came from.
type Origin struct {
	// Kind is "builtin", "path" (a file or folder given by path) or "hub".
	Kind string
	// Path is the file loaded ("" for the builtin tokenizer).
	Path string
	// Repo, Revision and Commit name the hub snapshot it came from (Kind
	// "hub").
	Repo, Revision, Commit string
	// Downloaded lists the files fetched from the hub by this call.
	Downloaded []string
}

// String describes o in a few words: "org/name@main (commit abc…)",
// "path /x/tokenizer.json", "builtin".
func (o Origin) String() string {
	switch o.Kind {
	case "hub":
		s := fmt.Sprintf("%s@%s (commit %s)", o.Repo, o.Revision, o.Commit)
		if len(o.Downloaded) > 0 {
			s += ", downloaded " + strings.Join(o.Downloaded, ", ")
		}
		return s
	case "path":
		return "file " + o.Path
	}
	return o.Kind
}

// Resolve returns the tokenizer named by spec; see [ResolveWith].
func Resolve(spec string, getenv func(string) string) (Tokenizer, error) {
	return ResolveWith(spec, ResolveOptions{Getenv: getenv})
}

// ResolveWith is [ResolveContext] without a context or the origin.
func ResolveWith(spec string, opts ResolveOptions) (Tokenizer, error) {
	t, _, err := ResolveContext(context.Background(), spec, opts)
	return t, err
}

// IsHubModelID reports whether spec has the form of a Hugging Face model
// id, "org/name" or "org/name@revision" (whether or not such a model
// exists, and whether or not a file of that name exists too).
func IsHubModelID(spec string) bool {
	_, _, ok := parseModelID(spec)
	return ok
}

// ResolveContext returns the tokenizer named by spec and where it came
// from:
//
//   - "" or "builtin": [Builtin];
//   - a file: tokenizer.json (plain or .zst) via [LoadHF], or a tiktoken rank
//     file (*.tiktoken, tiktoken.model) via [LoadTiktoken];
//   - a folder holding tokenizer.json[.zst] or tiktoken.model (or one
//     *.tiktoken file); a tokenizer_config.json beside a tiktoken file gives
//     its special tokens;
//   - else a Hugging Face model id "org/name" (optionally "@revision", else
//     opts.Revision), found in the local hub cache as
//     <cache>/models--org--name/snapshots/<refs/revision>/ with the folder
//     rules above. The cache is HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE,
//     else $HF_HOME/hub, else ~/.cache/huggingface/hub. When the cache
//     lacks it and opts.Hub is set, its tokenizer files are downloaded
//     into the cache first.
//
// When nothing is found the error names every path tried and how to fetch
// the files.
func ResolveContext(ctx context.Context, spec string, opts ResolveOptions) (Tokenizer, Origin, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	if spec == "" || spec == "builtin" {
		return Builtin(), Origin{Kind: "builtin"}, nil
	}
	if fi, err := os.Stat(spec); err == nil {
		if fi.IsDir() {
			var tried []string
			t, p, err := loadFromDir(spec, spec, opts, &tried)
			if err == nil && t == nil {
				err = fmt.Errorf("folder %s holds no tokenizer; looked for:\n  %s", spec, strings.Join(tried, "\n  "))
			}
			return t, Origin{Kind: "path", Path: p}, err
		}
		t, err := loadFile(spec, spec, opts)
		return t, Origin{Kind: "path", Path: spec}, err
	}
	repo, rev, ok := parseModelID(spec)
	if !ok {
		return nil, Origin{}, fmt.Errorf("tokenizer %q: no such file or folder, and not a Hugging Face model id (org/name); pass a tokenizer.json, a folder, a model id (downloaded into the hub cache when missing), or 'builtin'", spec)
	}
	if strings.Contains(spec, "@") {
		if opts.Revision != "" && opts.Revision != rev {
			return nil, Origin{}, fmt.Errorf("tokenizer %s names revision %s, and ResolveOptions.Revision says %s: give one", spec, rev, opts.Revision)
		}
	} else if opts.Revision != "" {
		rev = opts.Revision
		if _, _, ok := parseModelID(repo + "@" + rev); !ok {
			return nil, Origin{}, fmt.Errorf("tokenizer revision %q: not a branch, tag or commit", rev)
		}
	}
	origin := Origin{Kind: "hub", Repo: repo, Revision: rev}
	root := hfhub.CacheDir(getenv)
	snap, commit, tried, err := hfhub.Snapshot(root, hfhub.KindModel, repo, rev)
	if err != nil && !errors.Is(err, hfhub.ErrNotCached) && opts.Hub == nil {
		return nil, Origin{}, fmt.Errorf("tokenizer for %s: %w; fetch again with: agentperf tokenizer download %s (or hf download %s tokenizer.json tokenizer_config.json)", repo, err, spec, repo)
	}
	if err == nil {
		t, p, err := loadFromDir(snap, spec, opts, &tried)
		if err != nil || t != nil {
			origin.Path, origin.Commit = p, commit
			return t, origin, err
		}
	}
	fetch := fmt.Sprintf("HF_HUB_CACHE=%s agentperf tokenizer download %s\n  (or: HF_HUB_CACHE=%s hf download %s tokenizer.json tokenizer_config.json)", root, spec, root, repo)
	if opts.Hub == nil {
		return nil, Origin{}, fmt.Errorf("tokenizer %s: no such file or folder, and model %s@%s is not in the Hugging Face hub cache %s; tried:\n  %s\nfetch it with:\n  %s\nor use the 'builtin' tokenizer (approximate token counts)",
			spec, repo, rev, root, strings.Join(tried, "\n  "), fetch)
	}
	t, origin, err := download(ctx, opts.Hub, spec, repo, rev, opts)
	if errors.Is(err, hfhub.ErrOffline) {
		return nil, Origin{}, fmt.Errorf("tokenizer %s: model %s@%s is not in the Hugging Face hub cache %s and %w; tried:\n  %s\npre-download it where the hub is reachable, into the same cache:\n  %s\nor unset HF_HUB_OFFLINE, or use the 'builtin' tokenizer (approximate token counts)",
			spec, repo, rev, root, hfhub.ErrOffline, strings.Join(tried, "\n  "), fetch)
	}
	if errors.Is(err, hfhub.ErrUnreachable) {
		return nil, Origin{}, fmt.Errorf("tokenizer %s: model %s@%s is not in the Hugging Face hub cache %s, and %w; tried:\n  %s\npre-download it where the hub is reachable, into the same cache:\n  %s\nand set HF_HUB_OFFLINE=1 here; or fix the network or proxy settings (HTTPS_PROXY, NO_PROXY); or use the 'builtin' tokenizer (approximate token counts)",
			spec, repo, rev, root, err, strings.Join(tried, "\n  "), fetch)
	}
	if err != nil {
		return nil, Origin{}, fmt.Errorf("tokenizer %s (not in the hub cache %s, so it was looked up on the hub): %w\nor use the 'builtin' tokenizer (approximate token counts)", spec, root, err)
	}
	return t, origin, nil
}

// TokenizerFiles picks the files of a hub model's listing that make its
// tokenizer: tokenizer.json, else tiktoken.model, else the top-level
// *.tiktoken files; plus tokenizer_config.json when present. None when
// the model has neither a tokenizer.json nor a tiktoken file.
func TokenizerFiles(files []string) []string {
	have := map[string]bool{}
	var tiktoken []string
	for _, f := range files {
		have[f] = true
		if !strings.Contains(f, "/") && strings.HasSuffix(f, ".tiktoken") {
			tiktoken = append(tiktoken, f)
		}
	}
	var out []string
	switch {
	case have["tokenizer.json"]:
		out = []string{"tokenizer.json"}
	case have["tiktoken.model"]:
		out = []string{"tiktoken.model"}
	default:
		out = tiktoken
	}
	if len(out) > 0 && have["tokenizer_config.json"] {
		out = append(out, "tokenizer_config.json")
	}
	return out
}

// Download fetches the tokenizer files of hub model repo at rev into the
// hub cache, asking the hub what rev names now and verifying cached files
// against their checksums, and loads the result; it is what `agentperf
// tokenizer download` runs.
func Download(ctx context.Context, hub *hfhub.Client, spec string, opts ResolveOptions) (Tokenizer, Origin, *hfhub.Result, error) {
	repo, rev, ok := parseModelID(spec)
	if !ok {
		return nil, Origin{}, nil, fmt.Errorf("tokenizer download %q: want a Hugging Face model id org/name[@revision]", spec)
	}
	if !strings.Contains(spec, "@") && opts.Revision != "" {
		rev = opts.Revision
	}
	return fetch(ctx, hub, spec, repo, rev, opts, true)
}

func download(ctx context.Context, hub *hfhub.Client, spec, repo, rev string, opts ResolveOptions) (Tokenizer, Origin, error) {
	t, o, _, err := fetch(ctx, hub, spec, repo, rev, opts, false)
	return t, o, err
}

func fetch(ctx context.Context, hub *hfhub.Client, spec, repo, rev string, opts ResolveOptions, refresh bool) (Tokenizer, Origin, *hfhub.Result, error) {
	origin := Origin{Kind: "hub", Repo: repo, Revision: rev}
	var req hfhub.Request
	if hub.Offline() && refresh {
		// Check what the cache has; nothing to list.
		snap, _, _, err := hfhub.Snapshot(hub.CacheDir(), hfhub.KindModel, repo, rev)
		if err != nil {
			return nil, origin, nil, fmt.Errorf("model %s@%s: %w, and %w: pre-download it where the hub is reachable", repo, rev, err, hfhub.ErrOffline)
		}
		entries, _ := os.ReadDir(snap)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		req = hfhub.Request{Kind: hfhub.KindModel, Repo: repo, Revision: rev, Files: TokenizerFiles(names), Verify: true}
	} else {
		info, err := hub.List(ctx, hfhub.KindModel, repo, rev)
		if err != nil {
			return nil, origin, nil, err
		}
		files := TokenizerFiles(info.Files)
		if len(files) == 0 {
			return nil, origin, nil, fmt.Errorf("model %s@%s (commit %s) has no tokenizer.json and no tiktoken file (it holds: %s); agentperf reads Hugging Face tokenizer.json and tiktoken rank files: give the path of one as the tokenizer", repo, rev, info.Commit, strings.Join(info.Files, ", "))
		}
		req = hfhub.Request{Kind: hfhub.KindModel, Repo: repo, Revision: rev, Commit: info.Commit, Files: files, Verify: refresh}
	}
	if len(req.Files) == 0 {
		return nil, origin, nil, fmt.Errorf("model %s@%s: the cached snapshot holds no tokenizer files, and %w", repo, rev, hfhub.ErrOffline)
	}
	res, err := hub.Download(ctx, req)
	if err != nil {
		return nil, origin, nil, err
	}
	origin.Commit = res.Commit
	for _, f := range res.Downloaded() {
		origin.Downloaded = append(origin.Downloaded, f.Name)
	}
	var tried []string
	t, p, err := loadFromDir(res.Dir, spec, opts, &tried)
	if err == nil && t == nil {
		err = fmt.Errorf("model %s@%s: the downloaded files hold no tokenizer (looked for %s)", repo, rev, strings.Join(tried, ", "))
	}
	origin.Path = p
	return t, origin, res, err
}

// loadFromDir loads the tokenizer in dir and returns the file it loaded,
// or returns (nil, "", nil) after adding the paths it looked at to tried.
func loadFromDir(dir, name string, opts ResolveOptions, tried *[]string) (Tokenizer, string, error) {
	for _, f := range []string{"tokenizer.json", "tokenizer.json.zst", "tiktoken.model"} {
		p := filepath.Join(dir, f)
		*tried = append(*tried, p)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			t, err := loadFile(p, name, opts)
			return t, p, err
		}
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*.tiktoken"))
	*tried = append(*tried, filepath.Join(dir, "*.tiktoken"))
	switch len(matches) {
	case 0:
		return nil, "", nil
	case 1:
		t, err := loadFile(matches[0], name, opts)
		return t, matches[0], err
	}
	return nil, "", fmt.Errorf("folder %s holds several tiktoken files (%s): pass the one to use", dir, strings.Join(matches, ", "))
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
