package dataset

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/internal/hfhub"
	"github.com/agentperf/agentperf/internal/hfhub/hubtest"
)

const fetchCommit = "1111111111111111111111111111111111111111"

// fakeHubServer serves repo with traces as an LFS traces.jsonl on main.
func fakeHubServer(t testing.TB, repo string, traces []Trace) (*hubtest.Hub, []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, traces); err != nil {
		t.Fatal(err)
	}
	h := hubtest.New()
	t.Cleanup(h.Close)
	h.Add(&hubtest.Repo{Kind: hfhub.KindDataset, ID: repo,
		Commits: map[string]map[string]hubtest.File{fetchCommit: {"traces.jsonl": {Data: buf.Bytes(), LFS: true}, "README.md": {Data: []byte("x")}}},
		Refs:    map[string]string{"main": fetchCommit}})
	return h, buf.Bytes()
}

func hubClient(h *hubtest.Hub, cache string, logs *strings.Builder) *hfhub.Client {
	return hfhub.New(hfhub.Config{Endpoint: h.URL, CacheDir: cache, Backoff: time.Millisecond,
		Logf: func(f string, a ...any) {
			if logs != nil {
				logs.WriteString(strings.TrimSpace(f) + "\n")
			}
		}})
}

// TestOpenDownloadsMissingCorpus: --public-dataset and --hf-dataset on an
// empty hub cache download the corpus (verified, standard layout), the
// identity records the commit and the blob's SHA-256, and the next open
// sends no request.
func TestOpenDownloadsMissingCorpus(t *testing.T) {
	const repo = "semianalysisai/cc-traces-weka-062126"
	traces := Synthesize(SynthOptions{Seed: 5, Traces: 5})
	h, body := fakeHubServer(t, repo, traces)
	for _, src := range []Source{{PublicDataset: "semianalysis_cc_traces_weka_062126"}, {HFDataset: repo + "@main"}} {
		t.Run(src.PublicDataset+src.HFDataset, func(t *testing.T) {
			hub := t.TempDir()
			getenv := envFrom(map[string]string{"HF_HUB_CACHE": hub})
			opt := Options{CacheEnabled: true, CacheDir: t.TempDir(), Getenv: getenv, Hub: hubClient(h, hub, nil)}
			h.Reset()
			c, err := Open(context.Background(), src, opt)
			if err != nil {
				t.Fatal(err)
			}
			id := c.Identity()
			c.Close()
			if id.HFRepo != repo || id.HFCommit != fetchCommit || id.SHA256 != hubtest.SHA256(body) || id.Traces != 5 {
				t.Fatalf("identity %+v", id)
			}
			if h.Count("GET", "/blobs/") != 1 {
				t.Fatalf("requests %v", h.Requests())
			}
			// The existing cache reader finds what was downloaded.
			if p, cm, err := ResolveHF(HFRef{Repo: repo}, getenv); err != nil || cm != fetchCommit || !strings.HasSuffix(p, "traces.jsonl") {
				t.Fatalf("ResolveHF after download: %s %s %v", p, cm, err)
			}
			h.Reset()
			c, err = Open(context.Background(), src, opt)
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			if n := len(h.Requests()); n != 0 || !c.FromCache() {
				t.Fatalf("second open: %d requests, from cache %v", n, c.FromCache())
			}
		})
	}
}

// TestFetchAliasPrefersCachedCandidates: an older repository an alias
// named, present in the cache, is used without a request; with nothing
// cached the current mapping is downloaded, not an older one.
func TestFetchAliasPrefersCachedCandidates(t *testing.T) {
	const alias = "semianalysis_cc_traces_weka"
	cands, _ := AliasCandidates(alias)
	traces := Synthesize(SynthOptions{Seed: 2, Traces: 3})
	h, _ := fakeHubServer(t, cands[0].Repo, traces)
	hub, _ := fakeHub(t, cands[1].Repo, fetchCommit, traces)
	getenv := envFrom(map[string]string{"HF_HUB_CACHE": hub})
	ref, _, _, err := FetchAliasHF(context.Background(), alias, getenv, hubClient(h, hub, nil))
	if err != nil || ref.Repo != cands[1].Repo || len(h.Requests()) != 0 {
		t.Fatalf("%+v %v; %d requests", ref, err, len(h.Requests()))
	}
	empty := t.TempDir()
	ref, path, _, err := FetchAliasHF(context.Background(), alias, envFrom(map[string]string{"HF_HUB_CACHE": empty}), hubClient(h, empty, nil))
	if err != nil || ref.Repo != cands[0].Repo || !strings.HasPrefix(path, empty) {
		t.Fatalf("%+v %s %v", ref, path, err)
	}
}

// TestFetchHFErrors: errors of the hub reach the caller matchable and
// with the dataset named.
func TestFetchHFErrors(t *testing.T) {
	h, _ := fakeHubServer(t, "org/name", Synthesize(SynthOptions{Seed: 1, Traces: 2}))
	cache := t.TempDir()
	getenv := envFrom(map[string]string{"HF_HUB_CACHE": cache})
	_, _, err := FetchHF(context.Background(), HFRef{Repo: "org/missing"}, getenv, hubClient(h, cache, nil))
	if !errors.Is(err, hfhub.ErrNotFound) || !strings.Contains(err.Error(), "org/missing") {
		t.Fatalf("%v", err)
	}
	_, _, err = FetchHF(context.Background(), HFRef{Repo: "org/name", File: "nope.jsonl"}, getenv, hubClient(h, cache, nil))
	if !errors.Is(err, hfhub.ErrNotFound) || !strings.Contains(err.Error(), "README.md, traces.jsonl") {
		t.Fatalf("%v", err)
	}
	off := hfhub.New(hfhub.Config{Endpoint: h.URL, CacheDir: cache, Offline: true})
	_, err = Open(context.Background(), Source{HFDataset: "org/name"}, Options{Getenv: getenv, Hub: off})
	if !errors.Is(err, hfhub.ErrOffline) {
		t.Fatalf("offline: %v", err)
	}
	if n := h.Count("", "/"); n != 2 {
		t.Fatalf("%d requests; want one per failing lookup and none offline", n)
	}
}

// BenchmarkResolveWarm compares the warm resolution of a cached HF corpus
// without a hub client (the cache reader, as before downloads existed)
// and with one: both read the cache only.
func BenchmarkResolveWarm(b *testing.B) {
	const repo = "semianalysisai/cc-traces-weka-062126"
	traces := Synthesize(SynthOptions{Seed: 5, Traces: 5})
	h, _ := fakeHubServer(b, repo, traces)
	hub := b.TempDir()
	getenv := envFrom(map[string]string{"HF_HUB_CACHE": hub})
	client := hubClient(h, hub, nil)
	if _, _, err := FetchHF(context.Background(), HFRef{Repo: repo}, getenv, client); err != nil {
		b.Fatal(err)
	}
	h.Reset()
	for _, bc := range []struct {
		name string
		c    *hfhub.Client
	}{{"cache-reader", nil}, {"with-hub-client", client}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := FetchAliasHF(context.Background(), "semianalysis_cc_traces_weka_062126", getenv, bc.c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	if n := len(h.Requests()); n != 0 {
		b.Fatalf("warm resolution sent %d requests", n)
	}
}
