package tokenizer

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/internal/hfhub"
	"github.com/agentperf/agentperf/internal/hfhub/hubtest"
)

const (
	hubMain = "1111111111111111111111111111111111111111"
	hubV2   = "2222222222222222222222222222222222222222"
)

// tokenizerHub serves org/tiny (tokenizer.json + tokenizer_config.json at
// main, tokenizer.json only at v2), org/kimi-like (tiktoken.model +
// tokenizer_config.json), org/spm (only a sentencepiece model) and a gated
// org/gated.
func tokenizerHub(t *testing.T) *hubtest.Hub {
	t.Helper()
	tj, err := os.ReadFile("testdata/tiny.tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	tk, err := os.ReadFile("testdata/tiny.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	cfg := []byte(`{"added_tokens_decoder": {"2000": {"content": "[EOS]", "special": true}}, "eos_token": "[EOS]"}`)
	h := hubtest.New()
	t.Cleanup(h.Close)
	model := func(id string, files map[string]hubtest.File, token string) {
		h.Add(&hubtest.Repo{Kind: hfhub.KindModel, ID: id, Token: token,
			Commits: map[string]map[string]hubtest.File{hubMain: files, hubV2: {"tokenizer.json": {Data: tj}}},
			Refs:    map[string]string{"main": hubMain, "v2": hubV2}})
	}
	model("org/tiny", map[string]hubtest.File{"tokenizer.json": {Data: tj, LFS: true}, "tokenizer_config.json": {Data: []byte(`{}`)}, "config.json": {Data: []byte(`{}`)}, "model.safetensors": {Data: []byte("weights"), LFS: true}}, "")
	model("org/kimi-like", map[string]hubtest.File{"tiktoken.model": {Data: tk, LFS: true}, "tokenizer_config.json": {Data: cfg}}, "")
	model("org/spm", map[string]hubtest.File{"tokenizer.model": {Data: []byte("spm"), LFS: true}, "config.json": {Data: []byte(`{}`)}}, "")
	model("org/gated", map[string]hubtest.File{"tokenizer.json": {Data: tj}}, "hf_right")
	return h
}

func hubOpts(h *hubtest.Hub, cache string, mod ...func(*hfhub.Config)) ResolveOptions {
	cfg := hfhub.Config{Endpoint: h.URL, CacheDir: cache, Backoff: time.Millisecond}
	for _, m := range mod {
		m(&cfg)
	}
	return ResolveOptions{Getenv: envOf(map[string]string{"HF_HUB_CACHE": cache}), Hub: hfhub.New(cfg)}
}

// TestResolveDownloads: a model id missing from the cache gets its
// tokenizer files (and only those) downloaded, names its commit, and is
// then found in the cache without a request.
func TestResolveDownloads(t *testing.T) {
	h := tokenizerHub(t)
	tiny, _ := loadTiny(t)
	cache := t.TempDir()
	opts := hubOpts(h, cache)
	tok, o, err := ResolveContext(context.Background(), "org/tiny", opts)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Name() != "org/tiny" || !slices.Equal(tok.Encode("the cat in the hat"), tiny.Encode("the cat in the hat")) {
		t.Fatalf("tokenizer %s differs from tiny", tok.Name())
	}
	if o.Kind != "hub" || o.Repo != "org/tiny" || o.Revision != "main" || o.Commit != hubMain || !slices.Equal(o.Downloaded, []string{"tokenizer.json", "tokenizer_config.json"}) {
		t.Fatalf("origin %+v", o)
	}
	if n := h.Count("", "model.safetensors") + h.Count("", "config.json") - h.Count("", "tokenizer_config.json"); n != 0 {
		t.Fatalf("downloaded more than the tokenizer: %v", h.Requests())
	}
	h.Reset()
	_, o, err = ResolveContext(context.Background(), "org/tiny", opts)
	if err != nil || len(h.Requests()) != 0 || o.Commit != hubMain || len(o.Downloaded) != 0 {
		t.Fatalf("warm: %+v %v, %d requests", o, err, len(h.Requests()))
	}
	if !strings.Contains(o.String(), "org/tiny@main (commit "+hubMain) {
		t.Errorf("Origin.String() = %q", o)
	}

	// --tokenizer-revision picks another revision; a conflicting one is refused.
	opts.Revision = "v2"
	if _, o, err = ResolveContext(context.Background(), "org/tiny", opts); err != nil || o.Commit != hubV2 || o.Revision != "v2" {
		t.Fatalf("revision v2: %+v %v", o, err)
	}
	if _, _, err = ResolveContext(context.Background(), "org/tiny@main", opts); err == nil || !strings.Contains(err.Error(), "ResolveOptions.Revision") {
		t.Fatalf("conflicting revisions: %v", err)
	}
}

// TestResolveDownloadsTiktoken: a tiktoken model gets its rank file and
// tokenizer_config.json, whose special tokens are used.
func TestResolveDownloadsTiktoken(t *testing.T) {
	h := tokenizerHub(t)
	tok, o, err := ResolveContext(context.Background(), "org/kimi-like", hubOpts(h, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(o.Downloaded, []string{"tiktoken.model", "tokenizer_config.json"}) || !strings.HasSuffix(o.Path, "tiktoken.model") {
		t.Fatalf("origin %+v", o)
	}
	if ids := tok.Encode("hello[EOS]"); !slices.Contains(ids, 2000) {
		t.Fatalf("special token from the downloaded config not used: %v", ids)
	}
}

func TestResolveHubErrors(t *testing.T) {
	h := tokenizerHub(t)
	ctx := context.Background()
	_, _, err := ResolveContext(ctx, "org/spm", hubOpts(h, t.TempDir()))
	if err == nil || !strings.Contains(err.Error(), "no tokenizer.json and no tiktoken file") || !strings.Contains(err.Error(), "tokenizer.model") {
		t.Errorf("sentencepiece-only model: %v", err)
	}
	_, _, err = ResolveContext(ctx, "org/absent", hubOpts(h, t.TempDir()))
	if !errors.Is(err, hfhub.ErrNotFound) || !strings.Contains(err.Error(), "model org/absent@main") || !strings.Contains(err.Error(), "the 'builtin' tokenizer") {
		t.Errorf("absent model: %v", err)
	}
	_, _, err = ResolveContext(ctx, "org/gated", hubOpts(h, t.TempDir()))
	if !errors.Is(err, hfhub.ErrAuth) || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("gated model: %v", err)
	}
	if _, _, err = ResolveContext(ctx, "org/gated", hubOpts(h, t.TempDir(), func(c *hfhub.Config) { c.Token = hfhub.NewSecret("hf_right") })); err != nil {
		t.Errorf("gated model with the token: %v", err)
	}
	cache := t.TempDir()
	h.Reset()
	_, _, err = ResolveContext(ctx, "org/tiny", hubOpts(h, cache, func(c *hfhub.Config) { c.Offline = true }))
	if !errors.Is(err, hfhub.ErrOffline) {
		t.Fatalf("offline: %v", err)
	}
	for _, w := range []string{"HF_HUB_OFFLINE", "agentperf tokenizer download org/tiny", "tried:", "models--org--tiny"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("offline error does not say %q: %v", w, err)
		}
	}
	if len(h.Requests()) != 0 {
		t.Errorf("offline sent %d requests", len(h.Requests()))
	}
}

// TestDownloadCommand: Download (agentperf tokenizer download) asks the
// hub even when the cache has the model, verifies what is cached, and
// works offline from the cache.
func TestDownloadCommand(t *testing.T) {
	h := tokenizerHub(t)
	cache := t.TempDir()
	opts := hubOpts(h, cache)
	if _, _, _, err := Download(context.Background(), opts.Hub, "org/tiny", opts); err != nil {
		t.Fatal(err)
	}
	h.Reset()
	_, o, res, err := Download(context.Background(), opts.Hub, "org/tiny", opts)
	if err != nil || len(o.Downloaded) != 0 || len(res.Files) != 2 || h.Count("GET", "/api/models/org/tiny/revision/main") != 1 || len(h.Requests()) != 1 {
		t.Fatalf("second download: %+v %v; requests %v", o, err, h.Requests())
	}
	off := hubOpts(h, cache, func(c *hfhub.Config) { c.Offline = true })
	h.Reset()
	if _, o, _, err = Download(context.Background(), off.Hub, "org/tiny", off); err != nil || o.Commit != hubMain || len(h.Requests()) != 0 {
		t.Fatalf("offline download from the cache: %+v %v", o, err)
	}
	if _, _, _, err = Download(context.Background(), off.Hub, "org/kimi-like", off); !errors.Is(err, hfhub.ErrOffline) {
		t.Fatalf("offline, not cached: %v", err)
	}
}

// BenchmarkResolveWarm compares resolving a cached hub model's tokenizer
// without a hub client (the cache reader, as before downloads existed) and
// with one; neither sends a request.
func BenchmarkResolveWarm(b *testing.B) {
	h := hubtest.New()
	defer h.Close()
	tj, err := os.ReadFile("testdata/tiny.tokenizer.json")
	if err != nil {
		b.Fatal(err)
	}
	h.Add(&hubtest.Repo{Kind: hfhub.KindModel, ID: "org/tiny", Commits: map[string]map[string]hubtest.File{hubMain: {"tokenizer.json": {Data: tj}}}, Refs: map[string]string{"main": hubMain}})
	cache := b.TempDir()
	with := ResolveOptions{Getenv: envOf(map[string]string{"HF_HUB_CACHE": cache}), Hub: hfhub.New(hfhub.Config{Endpoint: h.URL, CacheDir: cache})}
	if _, _, err := ResolveContext(context.Background(), "org/tiny", with); err != nil {
		b.Fatal(err)
	}
	without := with
	without.Hub = nil
	h.Reset()
	for _, bc := range []struct {
		name string
		opts ResolveOptions
	}{{"cache-reader", without}, {"with-hub-client", with}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := ResolveContext(context.Background(), "org/tiny", bc.opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	if len(h.Requests()) != 0 {
		b.Fatal("warm resolution sent requests")
	}
}
