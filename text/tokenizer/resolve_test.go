package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// fakeHub lays out a hub cache with models--org--tiny at commit sha.
func fakeHub(t *testing.T) (root, sha string) {
	t.Helper()
	return fakeHubAt(t, t.TempDir())
}

func fakeHubAt(t *testing.T, root string) (string, string) {
	t.Helper()
	sha := strings.Repeat("ab", 20)
	repo := filepath.Join(root, "models--org--tiny")
	copyFile(t, "testdata/tiny.tokenizer.json", filepath.Join(repo, "snapshots", sha, "tokenizer.json"))
	if err := os.MkdirAll(filepath.Join(repo, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "refs", "main"), []byte(sha+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, sha
}

func TestResolve(t *testing.T) {
	t.Parallel()
	tiny, _ := loadTiny(t)
	want := tiny.Encode("the cat in the hat")
	hub, sha := fakeHub(t)
	hfHome := t.TempDir()
	fakeHubAt(t, filepath.Join(hfHome, "hub"))

	dir := t.TempDir()
	copyFile(t, "testdata/tiny.tokenizer.json", filepath.Join(dir, "tokenizer.json"))

	kimiDir := t.TempDir()
	copyFile(t, "testdata/tiny.tiktoken", filepath.Join(kimiDir, "tiktoken.model"))
	if err := os.WriteFile(filepath.Join(kimiDir, "tokenizer_config.json"), []byte(`{"added_tokens_decoder": {"2000": {"content": "[EOS]", "special": true}}, "eos_token": "[EOS]"}`), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, spec string
		env        map[string]string
		wantName   string
		wantBPE    bool // same ids as the tiny tokenizer
	}{
		{"builtin", "builtin", nil, "builtin", false},
		{"empty", "", nil, "builtin", false},
		{"file", "testdata/tiny.tokenizer.json", nil, "testdata/tiny.tokenizer.json", true},
		{"folder", dir, nil, dir, true},
		{"hub HF_HUB_CACHE", "org/tiny", map[string]string{"HF_HUB_CACHE": hub, "HF_HOME": "/nonexistent"}, "org/tiny", true},
		{"hub HUGGINGFACE_HUB_CACHE", "org/tiny", map[string]string{"HUGGINGFACE_HUB_CACHE": hub}, "org/tiny", true},
		{"hub HF_HOME", "org/tiny", map[string]string{"HF_HOME": hfHome}, "org/tiny", true},
		{"hub HOME", "org/tiny", map[string]string{"HOME": "/nonexistent-home", "HF_HOME": hfHome}, "org/tiny", true},
		{"hub commit", "org/tiny@" + sha, map[string]string{"HF_HUB_CACHE": hub}, "org/tiny@" + sha, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := Resolve(tc.spec, envOf(tc.env))
			if err != nil {
				t.Fatalf("Resolve(%q): %v", tc.spec, err)
			}
			if tok.Name() != tc.wantName {
				t.Errorf("Name() = %q, want %q", tok.Name(), tc.wantName)
			}
			if got := tok.Encode("the cat in the hat"); tc.wantBPE != slices.Equal(got, want) {
				t.Errorf("Encode = %v; tiny tokenizer gives %v (want same: %v)", got, want, tc.wantBPE)
			}
		})
	}

	t.Run("kimi folder", func(t *testing.T) {
		tok, err := Resolve(kimiDir, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids := tok.Encode("hello[EOS]")
		if !slices.Contains(ids, 2000) || tok.Decode(ids) != "hello[EOS]" {
			t.Errorf("special from tokenizer_config.json: ids %v decode %q", ids, tok.Decode(ids))
		}
	})
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	hub, _ := fakeHub(t)
	empty := t.TempDir()
	bad := t.TempDir()
	copyFile(t, "testdata/tiny.tiktoken", filepath.Join(bad, "vocab.tiktoken"))
	damaged := t.TempDir()
	copyFile(t, "testdata/tiny.tokenizer.json", filepath.Join(damaged, "models--org--tiny", "refs", "main"))
	for _, tc := range []struct {
		name, spec string
		env        map[string]string
		wantErrs   []string
	}{
		{"missing model", "org/absent", map[string]string{"HF_HUB_CACHE": hub},
			[]string{filepath.Join(hub, "models--org--absent", "refs", "main"), "hf download org/absent tokenizer.json tokenizer_config.json", "the 'builtin' tokenizer"}},
		{"missing revision", "org/tiny@v2", map[string]string{"HF_HUB_CACHE": hub},
			[]string{filepath.Join(hub, "models--org--tiny", "refs", "v2")}},
		{"missing commit", "org/tiny@" + strings.Repeat("cd", 20), map[string]string{"HF_HUB_CACHE": hub},
			[]string{filepath.Join(hub, "models--org--tiny", "snapshots", strings.Repeat("cd", 20), "tokenizer.json"), "tiktoken.model"}},
		{"default cache", "org/absent", map[string]string{"HOME": "/home/u"},
			[]string{"/home/u/.cache/huggingface/hub/models--org--absent/refs/main"}},
		{"not a model id", "no-such-file.json", nil, []string{"not a Hugging Face model id"}},
		{"empty folder", empty, nil, []string{"holds no tokenizer", "tokenizer.json"}},
		{"unknown tiktoken", filepath.Join(bad, "vocab.tiktoken"), nil, []string{"cannot tell its pre-tokenizer pattern"}},
		{"unknown file type", "testdata/README.md", nil, []string{"not a tokenizer.json"}},
		{"damaged ref", "org/tiny", map[string]string{"HF_HUB_CACHE": damaged}, []string{"not a 40-hex commit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resolve(tc.spec, envOf(tc.env))
			if err == nil {
				t.Fatalf("Resolve(%q) succeeded", tc.spec)
			}
			for _, w := range tc.wantErrs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	// A pattern given explicitly makes the unknown tiktoken file usable.
	if _, err := ResolveWith(filepath.Join(bad, "vocab.tiktoken"), ResolveOptions{TiktokenPattern: `\S+|\s+`}); err != nil {
		t.Errorf("ResolveWith(TiktokenPattern): %v", err)
	}
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"qwen3", "deepseek_v3"} {
		t.Run(name, func(t *testing.T) { checkSharedConfig(t, name) })
	}
	for _, bad := range []string{`{`, `{"added_tokens_decoder": {"x": {"content": "a"}}}`, `{"added_tokens_decoder": {"1": {}}}`, `{"bos_token": 3}`} {
		if _, err := ParseConfig([]byte(bad)); err == nil {
			t.Errorf("ParseConfig(%s) succeeded", bad)
		}
	}
	cfg, err := ParseConfig([]byte(`{"bos_token": {"content": "<s>"}, "eos_token": "</s>", "tokenizer_class": "X", "added_tokens_decoder": {"7": {"content": "<x>"}}}`))
	if err != nil || cfg.BOSToken != "<s>" || cfg.EOSToken != "</s>" || cfg.TokenizerClass != "X" || cfg.AddedTokens["<x>"] != 7 {
		t.Errorf("ParseConfig = %+v, %v", cfg, err)
	}
}

// checkSharedConfig checks a real tokenizer_config.json against its
// tokenizer.json.
func checkSharedConfig(t *testing.T, name string) {
	t.Helper()
	p := filepath.Join(filepath.Dir(sharedTokenizer(t, name)), name+".tokenizer_config.json")
	cfg, err := LoadConfig(p)
	if err != nil {
		t.Fatalf("LoadConfig(%s): %v", p, err)
	}
	tok := loadShared(t, name)
	if id, ok := tok.TokenID(cfg.EOSToken); !ok || tok.Decode([]uint32{id}) != cfg.EOSToken {
		t.Errorf("%s: eos_token %q is not a token of tokenizer.json", name, cfg.EOSToken)
	}
	// Every added token of the config is an added token of tokenizer.json.
	for content, id := range cfg.AddedTokens {
		if got, ok := tok.TokenID(content); !ok || got != id {
			t.Errorf("%s: config says %q = %d, tokenizer.json says %d (%v)", name, content, id, got, ok)
		}
	}
}
