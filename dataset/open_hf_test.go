package dataset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// fakeHub lays out a hub cache holding repo at commit with traces as
// traces.jsonl, the way the hf CLI stores it (snapshot file → blob named by
// its SHA-256), and returns the hub directory and the blob's SHA-256.
func fakeHub(t *testing.T, repo, commit string, traces []Trace) (hub, blobSHA string) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, traces); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	blobSHA = hex.EncodeToString(sum[:])
	hub = t.TempDir()
	org, name, _ := bytesCut(repo)
	root := filepath.Join(hub, "datasets--"+org+"--"+name)
	for _, d := range []string{"blobs", "refs", filepath.Join("snapshots", commit)} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "blobs", blobSHA), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "refs", "main"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "..", "blobs", blobSHA), filepath.Join(root, "snapshots", commit, "traces.jsonl")); err != nil {
		t.Fatal(err)
	}
	return hub, blobSHA
}

func bytesCut(repo string) (string, string, bool) {
	for i := range repo {
		if repo[i] == '/' {
			return repo[:i], repo[i+1:], true
		}
	}
	return repo, "", false
}

// TestOpenHFCached checks an HF source: the key comes from the snapshot
// commit and file (no hashing, no stat index), the identity records repo,
// revision, commit and the blob's SHA-256, and a second open is a hit.
func TestOpenHFCached(t *testing.T) {
	const repo, commit = "semianalysisai/cc-traces-weka-062126", "0123456789abcdef0123456789abcdef01234567"
	traces := Synthesize(SynthOptions{Seed: 3, Traces: 6, Subagents: true})
	hub, blob := fakeHub(t, repo, commit, traces)
	getenv := func(k string) string {
		if k == "HF_HUB_CACHE" {
			return hub
		}
		return ""
	}
	cache := t.TempDir()
	opt := Options{CacheEnabled: true, CacheDir: cache, Getenv: getenv}
	for _, src := range []Source{{HFDataset: repo}, {PublicDataset: "semianalysis_cc_traces_weka_062126"}} {
		loc, err := Locate(context.Background(), src, opt)
		if err != nil {
			t.Fatal(err)
		}
		if loc.Hashed {
			t.Errorf("%+v: Locate hashed an HF snapshot file; its commit identifies it", src)
		}
		c := cacheMustOpen(t, src, opt)
		id := c.Identity()
		if id.SourceType != "hf" || id.HFRepo != repo || id.HFRevision != "main" || id.HFCommit != commit || id.SHA256 != blob || id.Traces != 6 {
			t.Errorf("%+v: Identity = %+v", src, id)
		}
		if c.CachePath() != loc.Path {
			t.Errorf("%+v: cache file %s, Locate said %s", src, c.CachePath(), loc.Path)
		}
		want, _, err := ReadPath(id.Path, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d := cacheDiffTraces(want, c.Traces()); d != "" {
			t.Fatal(d)
		}
	}
	// Both sources name the same snapshot: the second was a hit.
	if _, err := os.Stat(filepath.Join(cache, "sources")); err == nil {
		t.Error("an HF source wrote the stat index; it needs none")
	}
	c := cacheMustOpen(t, Source{HFDataset: repo + "@" + commit}, opt)
	if !c.FromCache() {
		t.Error("the same commit named by hash was not served from the cache")
	}
}

// TestOpenSynthetic checks that synthetic corpora are generated in memory
// with the requested options, selected, and never cached.
func TestOpenSynthetic(t *testing.T) {
	cache := t.TempDir()
	c := cacheMustOpen(t, Source{PublicDataset: "synthetic:seed=5,traces=7"}, Options{CacheEnabled: true, CacheDir: cache, Select: SelectOptions{NumEntries: 4}})
	if c.Len() != 4 || c.CachePath() != "" || c.Identity().SourceType != "synthetic" {
		t.Errorf("Len %d CachePath %q Identity %+v", c.Len(), c.CachePath(), c.Identity())
	}
	if d := cacheDiffTraces(Synthesize(SynthOptions{Seed: 5, Traces: 7})[:4], c.Traces()); d != "" {
		t.Error(d)
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 0 {
		t.Errorf("synthetic corpus wrote %d entries to the cache dir", len(ents))
	}
	for _, bad := range []string{"synthetic:seed=x", "synthetic:traces=0", "synthetic:colour=red"} {
		if _, err := Open(context.Background(), Source{PublicDataset: bad}, Options{}); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestOpenKeepsLoadStats checks that a warm open reports what the cold
// build saw: skipped invalid traces (with their reasons) and the selection
// counts, though it never reads the source.
func TestOpenKeepsLoadStats(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, Synthesize(SynthOptions{Seed: 9, Traces: 4})); err != nil {
		t.Fatal(err)
	}
	buf.WriteString("{\"id\": \"broken\"\n")
	src := filepath.Join(t.TempDir(), "traces.jsonl")
	if err := os.WriteFile(src, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	opt := Options{Read: ReadOptions{SkipInvalid: true}, Select: SelectOptions{NumEntries: 3}, CacheEnabled: true, CacheDir: t.TempDir()}
	cold := cacheMustOpen(t, Source{InputFile: src}, opt)
	warm := cacheMustOpen(t, Source{InputFile: src}, opt)
	if !warm.FromCache() {
		t.Fatal("second open was not a hit")
	}
	c, w := cold.LoadStats(), warm.LoadStats()
	if c.Read.Skipped != 1 || len(c.Read.Errors) != 1 {
		t.Fatalf("cold read stats %+v, want one skipped trace with its reason", c.Read)
	}
	if w.Read.Skipped != 1 || len(w.Read.Errors) != 1 || w.Read.Errors[0].Error() != c.Read.Errors[0].Error() {
		t.Errorf("warm read stats %+v, want those of the cold build %+v", w.Read, c.Read)
	}
	if w.Select != c.Select || w.Select != (SelectStats{Loaded: 4, Eligible: 4, Total: 3}) {
		t.Errorf("warm selection %+v, cold %+v, want {Loaded:4 Eligible:4 Total:3}", w.Select, c.Select)
	}
}
