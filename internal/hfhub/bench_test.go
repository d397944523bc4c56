package hfhub

import (
	"context"
	"testing"

	"github.com/agentperf/agentperf/internal/hfhub/hubtest"
)

// BenchmarkWarm measures a run whose files are all in the cache: the
// cache reader alone (what agentperf did before it could download) next
// to the client's Download, which must send no request and cost about
// the same.
func BenchmarkWarm(b *testing.B) {
	h := hubtest.New()
	defer h.Close()
	data := corpus(1 << 16)
	h.Add(&hubtest.Repo{Kind: KindDataset, ID: testRepo,
		Commits: map[string]map[string]hubtest.File{testCommit: {"traces.jsonl": {Data: data, LFS: true}}},
		Refs:    map[string]string{"main": testCommit}})
	cache := b.TempDir()
	c := New(Config{Endpoint: h.URL, CacheDir: cache})
	if _, err := c.Download(context.Background(), dsReq("traces.jsonl")); err != nil {
		b.Fatal(err)
	}
	h.Reset()
	b.Run("reader", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			dir, _, _, err := Snapshot(cache, KindDataset, testRepo, "main")
			if err != nil || !exists(dir+"/traces.jsonl") {
				b.Fatal(err)
			}
		}
	})
	b.Run("client", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Download(context.Background(), dsReq("traces.jsonl")); err != nil {
				b.Fatal(err)
			}
		}
	})
	if n := len(h.Requests()); n != 0 {
		b.Fatalf("warm runs sent %d requests", n)
	}
}
