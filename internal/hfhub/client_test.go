package hfhub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentperf/agentperf/internal/hfhub/hubtest"
	"github.com/agentperf/agentperf/internal/testshared"
)

const (
	testRepo   = "semianalysisai/cc-traces-test"
	testCommit = "0123456789abcdef0123456789abcdef01234567"
	oldCommit  = "fedcba9876543210fedcba9876543210fedcba98"
	testToken  = "hf_SeCrEtTokenValue0123456789"
)

// corpus is a deterministic file of n bytes.
func corpus(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = 'a' + byte(x%26)
		if i%61 == 60 {
			b[i] = '\n'
		}
	}
	return b
}

// testHub serves a dataset with an LFS traces.jsonl (1 MiB), a git
// README.md and a Xet file at testCommit (branch main), and an older
// commit (tag v1).
func testHub(t *testing.T) (*hubtest.Hub, []byte) {
	t.Helper()
	h := hubtest.New()
	t.Cleanup(h.Close)
	data := corpus(1 << 20)
	h.Add(&hubtest.Repo{
		Kind: KindDataset, ID: testRepo,
		Commits: map[string]map[string]hubtest.File{
			testCommit: {
				"traces.jsonl":    {Data: data, LFS: true},
				"README.md":       {Data: []byte("# test corpus\n")},
				"plots/stats.txt": {Data: []byte("n=1\n"), Xet: true},
			},
			oldCommit: {"traces.jsonl": {Data: data[:1000], LFS: true}},
		},
		Refs: map[string]string{"main": testCommit, "v1": oldCommit},
	})
	return h, data
}

// logBuf collects log lines and progress output.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) logf(format string, args ...any) { fmt.Fprintf(l, format+"\n", args...) }

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newTestClient(t *testing.T, endpoint, cache string, mod ...func(*Config)) (*Client, *logBuf) {
	t.Helper()
	lb := &logBuf{}
	cfg := Config{Endpoint: endpoint, CacheDir: cache, Backoff: time.Millisecond, Retries: 3,
		Logf: lb.logf, Progress: NewProgressWriter(lb, false), ReadTimeout: 5 * time.Second, TokenPath: filepath.Join(cache, "..", "token")}
	for _, m := range mod {
		m(&cfg)
	}
	return New(cfg), lb
}

func dsReq(files ...string) Request {
	return Request{Kind: KindDataset, Repo: testRepo, Files: files}
}

func readPtr(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDownloadFirstThenWarm: the first download fills the standard layout
// (blobs named by ETag, relative symlinks, refs/main), follows the LFS and
// Xet redirects to the CDN without the token, and a second run sends no
// request at all.
func TestDownloadFirstThenWarm(t *testing.T) {
	h, data := testHub(t)
	cache := t.TempDir()
	c, lb := newTestClient(t, h.URL, cache, func(c *Config) { c.Token, c.TokenFrom = NewSecret(testToken), "HF_TOKEN" })
	res, err := c.Download(context.Background(), dsReq("traces.jsonl", "README.md", "plots/stats.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit != testCommit || res.FromCache || len(res.Downloaded()) != 3 {
		t.Fatalf("result = %+v", res)
	}
	storage := RepoDir(cache, KindDataset, testRepo)
	for _, f := range []struct {
		name, etag string
		data       []byte
	}{
		{"traces.jsonl", hubtest.SHA256(data), data},
		{"README.md", hubtest.GitBlobSHA1([]byte("# test corpus\n")), []byte("# test corpus\n")},
		{"plots/stats.txt", hubtest.SHA256([]byte("n=1\n")), []byte("n=1\n")},
	} {
		ptr := filepath.Join(storage, "snapshots", testCommit, filepath.FromSlash(f.name))
		tgt, err := os.Readlink(ptr)
		if err != nil {
			t.Fatalf("%s is not a symlink: %v", f.name, err)
		}
		if filepath.IsAbs(tgt) || filepath.Clean(filepath.Join(filepath.Dir(ptr), tgt)) != filepath.Join(storage, "blobs", f.etag) {
			t.Errorf("%s -> %s, want a relative link to blobs/%s", f.name, tgt, f.etag)
		}
		if !bytes.Equal(readPtr(t, ptr), f.data) {
			t.Errorf("%s: content differs", f.name)
		}
	}
	if ref := readPtr(t, filepath.Join(storage, "refs", "main")); string(ref) != testCommit {
		t.Errorf("refs/main = %q", ref)
	}
	if n := h.Count("GET", "/blobs/"); n != 2 {
		t.Errorf("%d CDN downloads, want 2 (the LFS and the Xet file)", n)
	}
	if h.CDNAuthHeaders() != 0 {
		t.Errorf("the token was sent to the CDN %d times", h.CDNAuthHeaders())
	}
	for _, r := range h.Requests() {
		if r.Host == "hub" && !r.Auth {
			t.Errorf("request to the hub without the token: %+v", r)
		}
	}
	if !strings.Contains(lb.String(), "Xet") {
		t.Errorf("the Xet file was not named as such in the log:\n%s", lb)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(storage, "blobs", "*.incomplete")); len(leftovers) > 0 {
		t.Errorf("partial files left: %v", leftovers)
	}

	h.Reset()
	res, err = c.Download(context.Background(), dsReq("traces.jsonl", "README.md", "plots/stats.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.Requests()); n != 0 || !res.FromCache || len(res.Downloaded()) != 0 {
		t.Fatalf("warm run: %d requests (%v), result %+v; want none", n, h.Requests(), res)
	}

	// The cache reader agentperf had before the client resolves it.
	dir, commit, _, err := Snapshot(cache, KindDataset, testRepo, "main")
	if err != nil || commit != testCommit {
		t.Fatalf("Snapshot: %q %v", commit, err)
	}
	if !bytes.Equal(readPtr(t, filepath.Join(dir, "traces.jsonl")), data) {
		t.Fatal("Snapshot's traces.jsonl differs")
	}
}

// TestDownloadRevisions: a tag and a commit revision resolve to their
// commit; a commit revision writes no ref; the same blob is shared.
func TestDownloadRevisions(t *testing.T) {
	h, data := testHub(t)
	cache := t.TempDir()
	c, _ := newTestClient(t, h.URL, cache)
	ctx := context.Background()
	r := dsReq("traces.jsonl")
	r.Revision = "v1"
	res, err := c.Download(ctx, r)
	if err != nil || res.Commit != oldCommit || !bytes.Equal(readPtr(t, res.Files[0].Path), data[:1000]) {
		t.Fatalf("v1: %+v %v", res, err)
	}
	r.Revision = testCommit
	if res, err = c.Download(ctx, r); err != nil || res.Commit != testCommit {
		t.Fatalf("commit: %+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(RepoDir(cache, KindDataset, testRepo), "refs", testCommit)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a commit revision wrote a ref: %v", err)
	}
	h.Reset()
	r.Revision = "main" // the blob is there; only the metadata is asked
	if res, err = c.Download(ctx, r); err != nil || res.Commit != testCommit || len(res.Downloaded()) != 0 {
		t.Fatalf("main: %+v %v", res, err)
	}
	if n := h.Count("GET", "/blobs/"); n != 0 {
		t.Errorf("main downloaded the blob again (%d GETs) though commit %s was cached", n, testCommit)
	}
}

// writeHFLayout lays a file out the way huggingface_hub does (blob named
// by ETag, relative symlink, refs/main).
func writeHFLayout(t *testing.T, cache, kind, repo, commit, file string, data []byte, etag string) {
	t.Helper()
	storage := RepoDir(cache, kind, repo)
	ptr := filepath.Join(storage, "snapshots", commit, filepath.FromSlash(file))
	for _, d := range []string{filepath.Join(storage, "blobs"), filepath.Join(storage, "refs"), filepath.Dir(ptr)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(storage, "blobs", etag), data, 0o644); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(filepath.Dir(ptr), filepath.Join(storage, "blobs", etag))
	if err := os.Symlink(rel, ptr); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(storage, "refs", "main"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHuggingFaceLayoutNotDownloadedAgain: a cache laid out by
// huggingface_hub is used as it is: no request without Refresh, only the
// revision lookup with it, and nothing downloaded either way.
func TestHuggingFaceLayoutNotDownloadedAgain(t *testing.T) {
	h, data := testHub(t)
	cache := t.TempDir()
	writeHFLayout(t, cache, KindDataset, testRepo, testCommit, "traces.jsonl", data, hubtest.SHA256(data))
	c, _ := newTestClient(t, h.URL, cache)
	res, err := c.Download(context.Background(), dsReq("traces.jsonl"))
	if err != nil || !res.FromCache || len(h.Requests()) != 0 {
		t.Fatalf("%+v %v; requests %v", res, err, h.Requests())
	}
	r := dsReq("traces.jsonl")
	r.Refresh, r.Verify = true, true
	res, err = c.Download(context.Background(), r)
	if err != nil || len(res.Downloaded()) != 0 {
		t.Fatalf("refresh: %+v %v", res, err)
	}
	if got := h.Requests(); len(got) != 1 || !strings.Contains(got[0].Path, "/api/datasets/"+testRepo+"/revision/main") {
		t.Fatalf("refresh sent %v; want only the revision lookup", got)
	}
}

// TestResumeAfterCut: a connection cut at half the file is resumed with
// a Range request for the rest, in the same run; a partial file left by a
// killed run is resumed by the next one.
func TestResumeAfterCut(t *testing.T) {
	h, data := testHub(t)
	half := int64(len(data) / 2)
	t.Run("same run", func(t *testing.T) {
		cache := t.TempDir()
		c, lb := newTestClient(t, h.URL, cache)
		h.Reset()
		h.Inject(hubtest.Fault{Method: "GET", Path: "/blobs/", CutAfter: half})
		res, err := c.Download(context.Background(), dsReq("traces.jsonl"))
		if err != nil {
			t.Fatalf("%v\n%s", err, lb)
		}
		if !bytes.Equal(readPtr(t, res.Files[0].Path), data) {
			t.Fatal("resumed file differs")
		}
		var ranges []string
		for _, r := range h.Requests() {
			if r.Host == "cdn" {
				ranges = append(ranges, r.Range)
			}
		}
		if len(ranges) != 2 || ranges[0] != "" || ranges[1] != fmt.Sprintf("bytes=%d-", half) {
			t.Fatalf("CDN requests' Range headers = %q, want one full GET then bytes=%d-", ranges, half)
		}
	})
	t.Run("next run", func(t *testing.T) {
		cache := t.TempDir()
		blobs := filepath.Join(RepoDir(cache, KindDataset, testRepo), "blobs")
		os.MkdirAll(blobs, 0o755)
		inc := filepath.Join(blobs, hubtest.SHA256(data)+".incomplete")
		if err := os.WriteFile(inc, data[:half], 0o644); err != nil {
			t.Fatal(err)
		}
		c, lb := newTestClient(t, h.URL, cache)
		h.Reset()
		res, err := c.Download(context.Background(), dsReq("traces.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if res.Files[0].Resumed != half || !bytes.Equal(readPtr(t, res.Files[0].Path), data) {
			t.Fatalf("resumed %d, want %d; content equal %v", res.Files[0].Resumed, half, bytes.Equal(readPtr(t, res.Files[0].Path), data))
		}
		if got := h.Requests(); got[len(got)-1].Range != fmt.Sprintf("bytes=%d-", half) {
			t.Fatalf("last request %+v, want a Range from %d", got[len(got)-1], half)
		}
		if !strings.Contains(lb.String(), "resuming at 512.0 KiB") {
			t.Errorf("the log does not say it resumed:\n%s", lb)
		}
		if _, err := os.Stat(inc); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the .incomplete file is still there: %v", err)
		}
	})
	t.Run("server ignores the range", func(t *testing.T) {
		cache := t.TempDir()
		c, _ := newTestClient(t, h.URL, cache)
		h.Inject(hubtest.Fault{Method: "GET", Path: "/blobs/", CutAfter: half}, hubtest.Fault{Method: "GET", Path: "/blobs/", IgnoreRange: true})
		res, err := c.Download(context.Background(), dsReq("traces.jsonl"))
		if err != nil || !bytes.Equal(readPtr(t, res.Files[0].Path), data) {
			t.Fatalf("%v", err)
		}
	})
}

// TestRetries: 5xx answers and resets are retried with backoff until
// they succeed; 4xx answers are not retried.
func TestRetries(t *testing.T) {
	h, data := testHub(t)
	cache := t.TempDir()
	c, lb := newTestClient(t, h.URL, cache)
	h.Inject(
		hubtest.Fault{Path: "/api/", Status: 503, Times: 2},
		hubtest.Fault{Method: "HEAD", Path: "/resolve/", Status: 502},
		hubtest.Fault{Method: "GET", Path: "/blobs/", Status: 500},
		hubtest.Fault{Method: "GET", Path: "/blobs/", CutAfter: 1000},
	)
	res, err := c.Download(context.Background(), dsReq("traces.jsonl"))
	if err != nil {
		t.Fatalf("%v\n%s", err, lb)
	}
	if !bytes.Equal(readPtr(t, res.Files[0].Path), data) {
		t.Fatal("content differs")
	}
	if a, hd, g := h.Count("GET", "/api/"), h.Count("HEAD", "/resolve/"), h.Count("GET", "/blobs/"); a != 3 || hd != 2 || g != 3 {
		t.Errorf("attempts: api %d, head %d, cdn %d; want 3, 2, 3", a, hd, g)
	}
	if !strings.Contains(lb.String(), "retry 1 of 3") {
		t.Errorf("retries are not logged:\n%s", lb)
	}

	t.Run("5xx forever", func(t *testing.T) {
		c, _ := newTestClient(t, h.URL, t.TempDir())
		h.Reset()
		h.Inject(hubtest.Fault{Path: "/api/", Status: 503, Times: 10})
		_, err := c.Download(context.Background(), dsReq("traces.jsonl"))
		if !errors.Is(err, ErrUnreachable) || h.Count("GET", "/api/") != 4 {
			t.Fatalf("%v after %d attempts; want ErrUnreachable after 4", err, h.Count("GET", "/api/"))
		}
		h.Inject(hubtest.Fault{Path: "/api/", Status: 503, Times: -1}) // consume leftovers
	})
}

// TestNotFound: a missing repository, revision or file is one request,
// an error matching ErrNotFound, and names what was sent.
func TestNotFound(t *testing.T) {
	h, _ := testHub(t)
	c, _ := newTestClient(t, h.URL, t.TempDir())
	for _, tc := range []struct {
		name string
		req  Request
		want []string
	}{
		{"repo", Request{Kind: KindDataset, Repo: "semianalysisai/no-such-corpus", Files: []string{"traces.jsonl"}}, []string{"dataset semianalysisai/no-such-corpus@main", "404", "RepoNotFound", "/api/datasets/semianalysisai/no-such-corpus/revision/main"}},
		{"revision", Request{Kind: KindDataset, Repo: testRepo, Revision: "v9", Files: []string{"traces.jsonl"}}, []string{"@v9", "RevisionNotFound"}},
		{"kind", Request{Kind: KindModel, Repo: testRepo, Files: []string{"traces.jsonl"}}, []string{"model " + testRepo, "/api/models/"}},
		{"file", dsReq("traces.jsonl.zst"), []string{`no file "traces.jsonl.zst"`, "README.md, plots/stats.txt, traces.jsonl"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.Reset()
			_, err := c.Download(context.Background(), tc.req)
			if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnreachable) {
				t.Fatalf("err = %v, want ErrNotFound", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q: %v", w, err)
				}
			}
			if n := len(h.Requests()); n != 1 {
				t.Errorf("%d requests, want 1 (no retry on 4xx)", n)
			}
		})
	}
}

// TestGated: without a token the error says one is needed and where it is
// read from; with a wrong one that it was refused; with the right one the
// download works and the CDN never sees it.
func TestGated(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	data := corpus(5000)
	h.Add(&hubtest.Repo{Kind: KindModel, ID: "meta-llama/Gated-1B", Token: testToken,
		Commits: map[string]map[string]hubtest.File{testCommit: {"tokenizer.json": {Data: data, LFS: true}}},
		Refs:    map[string]string{"main": testCommit}})
	req := Request{Kind: KindModel, Repo: "meta-llama/Gated-1B", Files: []string{"tokenizer.json"}}
	cache := t.TempDir()

	c, _ := newTestClient(t, h.URL, cache, func(c *Config) { c.TokenPath = "/home/u/.cache/huggingface/token" })
	_, err := c.Download(context.Background(), req)
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("no token: %v", err)
	}
	for _, w := range []string{"401", "GatedRepo", "no token was sent", "HF_TOKEN", "/home/u/.cache/huggingface/token", h.URL + "/meta-llama/Gated-1B"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("no-token error does not say %q: %v", w, err)
		}
	}
	c, _ = newTestClient(t, h.URL, cache, func(c *Config) { c.Token, c.TokenFrom = NewSecret("hf_wrong"), "HF_TOKEN" })
	if _, err = c.Download(context.Background(), req); !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "token from HF_TOKEN was not accepted") {
		t.Fatalf("wrong token: %v", err)
	}
	c, _ = newTestClient(t, h.URL, cache, func(c *Config) { c.Token, c.TokenFrom = NewSecret(testToken), "HF_TOKEN" })
	res, err := c.Download(context.Background(), req)
	if err != nil || !bytes.Equal(readPtr(t, res.Files[0].Path), data) {
		t.Fatalf("right token: %v", err)
	}
	if h.CDNAuthHeaders() != 0 {
		t.Fatal("the token went to the CDN")
	}
}

// TestOffline: offline, a cached snapshot is used and a missing one is an
// error naming HF_HUB_OFFLINE and the pre-download; no request either way.
func TestOffline(t *testing.T) {
	h, data := testHub(t)
	cache := t.TempDir()
	c, _ := newTestClient(t, h.URL, cache, func(c *Config) { c.Offline = true })
	_, err := c.Download(context.Background(), dsReq("traces.jsonl"))
	if !errors.Is(err, ErrOffline) {
		t.Fatalf("empty cache: %v", err)
	}
	for _, w := range []string{"HF_HUB_OFFLINE", "agentperf dataset download " + testRepo, "HF_HUB_CACHE=" + cache, "no ref"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("offline error does not say %q: %v", w, err)
		}
	}
	writeHFLayout(t, cache, KindDataset, testRepo, testCommit, "traces.jsonl", data, hubtest.SHA256(data))
	r := dsReq("traces.jsonl")
	r.Refresh, r.Verify = true, true
	res, err := c.Download(context.Background(), r)
	if err != nil || res.Commit != testCommit {
		t.Fatalf("cached: %+v %v", res, err)
	}
	if _, err := c.List(context.Background(), KindDataset, testRepo, "main"); !errors.Is(err, ErrOffline) {
		t.Fatalf("List offline: %v", err)
	}
	if n := len(h.Requests()); n != 0 {
		t.Fatalf("offline client sent %d requests", n)
	}
}

// TestUnreachable: with the hub down and an empty cache the error says
// to pre-download or set HF_HUB_OFFLINE; with a cached snapshot a refresh
// falls back to it.
func TestUnreachable(t *testing.T) {
	h, data := testHub(t)
	dead := h.URL
	h.Close() // nothing listens there any more
	cache := t.TempDir()
	c, _ := newTestClient(t, dead, cache, func(c *Config) { c.Retries = 1 })
	_, err := c.Download(context.Background(), dsReq("traces.jsonl"))
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("%v", err)
	}
	for _, w := range []string{"cannot be reached", "HF_HUB_OFFLINE=1", "agentperf dataset download", "connection refused"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not say %q: %v", w, err)
		}
	}
	writeHFLayout(t, cache, KindDataset, testRepo, testCommit, "traces.jsonl", data, hubtest.SHA256(data))
	r := dsReq("traces.jsonl")
	r.Refresh = true
	if res, err := c.Download(context.Background(), r); err != nil || res.Commit != testCommit {
		t.Fatalf("refresh with the hub down and a cached snapshot: %v", err)
	}
}

// TestCorrupt: bytes that do not match the ETag are thrown away and
// fetched again; twice is an error that leaves nothing behind. A damaged
// cached blob is found by a verifying download and replaced.
func TestCorrupt(t *testing.T) {
	h, data := testHub(t)
	t.Run("in transit once", func(t *testing.T) {
		c, lb := newTestClient(t, h.URL, t.TempDir())
		h.Inject(hubtest.Fault{Method: "GET", Path: "/blobs/", Corrupt: true})
		res, err := c.Download(context.Background(), dsReq("traces.jsonl"))
		if err != nil || !bytes.Equal(readPtr(t, res.Files[0].Path), data) {
			t.Fatalf("%v", err)
		}
		if !strings.Contains(lb.String(), "SHA-256") {
			t.Errorf("the mismatch is not logged:\n%s", lb)
		}
	})
	t.Run("git file in transit twice", func(t *testing.T) {
		cache := t.TempDir()
		c, _ := newTestClient(t, h.URL, cache)
		h.Inject(hubtest.Fault{Method: "GET", Path: "/resolve/", Corrupt: true, Times: 2})
		_, err := c.Download(context.Background(), dsReq("README.md"))
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "git blob SHA-1") {
			t.Fatalf("%v", err)
		}
		blobs, _ := filepath.Glob(filepath.Join(RepoDir(cache, KindDataset, testRepo), "blobs", "*"))
		if len(blobs) != 0 {
			t.Fatalf("left behind: %v", blobs)
		}
	})
	t.Run("cached blob damaged", func(t *testing.T) {
		cache := t.TempDir()
		c, lb := newTestClient(t, h.URL, cache)
		res, err := c.Download(context.Background(), dsReq("traces.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		blob := resolved(res.Files[0].Path)
		bad := append([]byte(nil), data...)
		bad[100] ^= 1
		os.WriteFile(blob, bad, 0o644)
		h.Reset()
		// Without Verify the warm path trusts the cache (it reads no bytes).
		if _, err := c.Download(context.Background(), dsReq("traces.jsonl")); err != nil || len(h.Requests()) != 0 {
			t.Fatalf("warm: %v, %d requests", err, len(h.Requests()))
		}
		r := dsReq("traces.jsonl")
		r.Verify = true
		res, err = c.Download(context.Background(), r)
		if err != nil || !res.Files[0].Repaired || !bytes.Equal(readPtr(t, res.Files[0].Path), data) {
			t.Fatalf("verify: %+v %v\n%s", res, err, lb)
		}
		if !strings.Contains(lb.String(), "does not match its checksum") {
			t.Errorf("log:\n%s", lb)
		}
		// Offline, a damaged blob is an error, not silently used.
		os.WriteFile(blob, bad, 0o644)
		off, _ := newTestClient(t, h.URL, cache, func(c *Config) { c.Offline = true })
		if _, err := off.Download(context.Background(), r); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("offline verify of a damaged blob: %v", err)
		}
	})
}

// TestConcurrentClients: two clients downloading the same file into one
// cache at once download it once; the second waits on the lock and links
// the first one's blob.
func TestConcurrentClients(t *testing.T) {
	h, data := testHub(t)
	cache := t.TempDir()
	release := make(chan struct{})
	var once sync.Once
	c1, _ := newTestClient(t, h.URL, cache)
	lb2 := &logBuf{}
	c2, _ := newTestClient(t, h.URL, cache, func(c *Config) {
		c.Logf = func(format string, args ...any) {
			lb2.logf(format, args...)
			if strings.Contains(format, "waiting for it") {
				once.Do(func() { close(release) })
			}
		}
	})
	// The first download holds the CDN answer until the second client is
	// waiting on the lock, so the two really overlap.
	h.Inject(hubtest.Fault{Method: "GET", Path: "/blobs/", Hold: release})
	var wg sync.WaitGroup
	errs := make([]error, 2)
	results := make([]*Result, 2)
	for i, c := range []*Client{c1, c2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 1 {
				// Start after the first one holds the lock.
				for h.Count("GET", "/blobs/") == 0 {
					time.Sleep(time.Millisecond)
				}
			}
			results[i], errs[i] = c.Download(context.Background(), dsReq("traces.jsonl"))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("client %d: %v", i, err)
		}
		if !bytes.Equal(readPtr(t, results[i].Files[0].Path), data) {
			t.Fatalf("client %d: content differs", i)
		}
	}
	if n := h.Count("GET", "/blobs/"); n != 1 {
		t.Fatalf("%d downloads of the blob, want 1", n)
	}
	if results[0].Files[0].Downloaded == results[1].Files[0].Downloaded {
		t.Fatalf("exactly one client should have downloaded: %+v %+v", results[0].Files[0], results[1].Files[0])
	}
}

// TestHelperProcess is the child of TestTwoProcesses.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("HFHUB_TEST_HELPER") != "1" {
		t.Skip("helper process for TestTwoProcesses")
	}
	cfg, err := ConfigFromEnv(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Backoff = time.Millisecond
	cfg.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stdout, format+"\n", args...) }
	res, err := New(cfg).Download(context.Background(), dsReq("traces.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("downloaded=%v\n", res.Files[0].Downloaded)
}

// TestTwoProcesses runs two processes downloading the same file into one
// cache at the same time: the file lock lets one download while the other
// waits, then reuses the blob.
func TestTwoProcesses(t *testing.T) {
	testshared.SkipIfShort(t, "starts processes")
	h, data := testHub(t)
	cache := t.TempDir()
	release := make(chan struct{})
	// The CDN holds the first download until the other process says it
	// waits for the lock (or, should it never, for a long while).
	h.Inject(hubtest.Fault{Method: "GET", Path: "/blobs/", Hold: release})
	outs := make([]logBuf, 2)
	cmds := make([]*exec.Cmd, 2)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v")
		cmd.Env = append(os.Environ(), "HFHUB_TEST_HELPER=1", "HF_ENDPOINT="+h.URL, "HF_HUB_CACHE="+cache, "HF_TOKEN=", "HF_HUB_OFFLINE=")
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	go func() {
		defer close(release)
		for range 3000 {
			if strings.Contains(outs[0].String()+outs[1].String(), "waiting for it") {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	downloaded := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i].String())
		}
		if strings.Contains(outs[i].String(), "downloaded=true") {
			downloaded++
		}
	}
	both := outs[0].String() + outs[1].String()
	if n := h.Count("GET", "/blobs/"); n != 1 || downloaded != 1 || !strings.Contains(both, "waiting for it") {
		t.Fatalf("%d CDN downloads, %d processes say they downloaded; want 1 and 1, one waiting on the lock\n%s", n, downloaded, both)
	}
	dir, _, _, err := Snapshot(cache, KindDataset, testRepo, "main")
	if err != nil || !bytes.Equal(readPtr(t, filepath.Join(dir, "traces.jsonl")), data) {
		t.Fatalf("cache after two processes: %v", err)
	}
}

// failAfter fails writes with ENOSPC after n bytes.
type failAfter struct {
	w io.Writer
	n int64
}

func (f *failAfter) Write(p []byte) (int, error) {
	if int64(len(p)) > f.n {
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, &fs.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}
	}
	f.n -= int64(len(p))
	return f.w.Write(p)
}

// TestDiskFull: a full disk stops the download with ErrDiskFull; no blob
// appears, the partial file is kept and named, and the next run resumes
// it.
func TestDiskFull(t *testing.T) {
	h, data := testHub(t)
	cache := t.TempDir()
	c, _ := newTestClient(t, h.URL, cache)
	c.wrapWriter = func(w io.Writer) io.Writer { return &failAfter{w: w, n: 300000} }
	_, err := c.Download(context.Background(), dsReq("traces.jsonl"))
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("%v", err)
	}
	blobs := filepath.Join(RepoDir(cache, KindDataset, testRepo), "blobs")
	inc := filepath.Join(blobs, hubtest.SHA256(data)+".incomplete")
	if !strings.Contains(err.Error(), inc) || !strings.Contains(err.Error(), "resumes") {
		t.Errorf("error does not name the kept partial file: %v", err)
	}
	if fi, err := os.Stat(inc); err != nil || fi.Size() != 300000 {
		t.Fatalf("partial file: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(blobs, hubtest.SHA256(data))); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a blob was published: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(RepoDir(cache, KindDataset, testRepo), "snapshots", testCommit, "traces.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a snapshot link was made: %v", err)
	}
	c.wrapWriter = nil
	h.Reset()
	res, err := c.Download(context.Background(), dsReq("traces.jsonl"))
	if err != nil || res.Files[0].Resumed != 300000 || !bytes.Equal(readPtr(t, res.Files[0].Path), data) {
		t.Fatalf("after freeing space: %+v %v", res, err)
	}
}

// TestDiskFullTmpfs downloads into a real, too small file system (a
// tmpfs; needs the right to mount one, else skipped).
func TestDiskFullTmpfs(t *testing.T) {
	if testing.Short() || os.Geteuid() != 0 {
		t.Skip("mounts a tmpfs (root only)")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	h, _ := testHub(t)
	c, _ := newTestClient(t, h.URL, mnt)
	_, err := c.Download(context.Background(), dsReq("traces.jsonl")) // 1 MiB into 256 KiB
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "free") {
		t.Fatalf("%v", err)
	}
	if n := h.Count("GET", "/blobs/"); n != 0 {
		t.Errorf("%d downloads started although the space check could tell it would not fit", n)
	}
	blobs, _ := filepath.Glob(filepath.Join(RepoDir(mnt, KindDataset, testRepo), "blobs", "*"))
	for _, b := range blobs {
		if !strings.HasSuffix(b, ".incomplete") {
			t.Errorf("blob published on a full disk: %s", b)
		}
	}
}

// TestTokenNeverLeaks runs downloads that succeed, fail and retry with a
// token set, and looks for the token in every file written, every log
// line, the progress output and every error.
func TestTokenNeverLeaks(t *testing.T) {
	h, _ := testHub(t)
	h.Add(&hubtest.Repo{Kind: KindModel, ID: "org/gated", Token: "hf_other",
		Commits: map[string]map[string]hubtest.File{testCommit: {"tokenizer.json": {Data: []byte("{}"), LFS: true}}},
		Refs:    map[string]string{"main": testCommit}})
	cache := t.TempDir()
	c, lb := newTestClient(t, h.URL, cache, func(c *Config) { c.Token, c.TokenFrom = NewSecret(testToken), "HF_TOKEN" })
	h.Inject(hubtest.Fault{Path: "/api/", Status: 503}, hubtest.Fault{Method: "GET", Path: "/blobs/", CutAfter: 1000}, hubtest.Fault{Method: "GET", Path: "/blobs/", Corrupt: true})
	var errs []error
	_, err := c.Download(context.Background(), dsReq("traces.jsonl"))
	errs = append(errs, err)
	_, err = c.Download(context.Background(), Request{Kind: KindModel, Repo: "org/gated", Files: []string{"tokenizer.json"}})
	errs = append(errs, err)
	_, err = c.Download(context.Background(), Request{Kind: KindModel, Repo: "org/none", Files: []string{"x"}})
	errs = append(errs, err)
	c.wrapWriter = func(w io.Writer) io.Writer { return &failAfter{w: w, n: 10} }
	_, err = c.Download(context.Background(), dsReq("README.md"))
	errs = append(errs, err)
	if errs[0] != nil || errs[1] == nil || errs[2] == nil || errs[3] == nil {
		t.Fatalf("unexpected outcomes: %v", errs)
	}
	for _, e := range errs {
		if e != nil && strings.Contains(e.Error(), testToken) {
			t.Errorf("error leaks the token: %v", e)
		}
	}
	if strings.Contains(lb.String(), testToken) {
		t.Errorf("log leaks the token:\n%s", lb)
	}
	cfg := c.cfg
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%s %q %x", cfg.Token, cfg.Token, cfg.Token)} {
		if strings.Contains(s, testToken) || strings.Contains(s, fmt.Sprintf("%x", testToken)) {
			t.Errorf("formatting the config leaks the token: %s", s)
		}
	}
	filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, rerr := os.ReadFile(p); rerr == nil && bytes.Contains(b, []byte(testToken)) {
			t.Errorf("%s holds the token", p)
		}
		if strings.Contains(p, testToken) {
			t.Errorf("a path holds the token: %s", p)
		}
		return nil
	})
	if h.CDNAuthHeaders() != 0 {
		t.Error("the token went to the CDN")
	}
}

// TestRedirectToRenamedRepo: a relative redirect on the resolve URL (a
// renamed repository) is followed with the token; the file still comes
// from the CDN without it.
func TestRedirectToRenamedRepo(t *testing.T) {
	h, data := testHub(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/datasets/oldorg/old-name/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(r.URL.Path, "oldorg/old-name", testRepo, 1), http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/api/datasets/oldorg/old-name/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(r.URL.Path, "oldorg/old-name", testRepo, 1), http.StatusTemporaryRedirect)
	})
	front := newProxyFront(t, h.URL, mux)
	c, _ := newTestClient(t, front, t.TempDir(), func(c *Config) { c.Token, c.TokenFrom = NewSecret(testToken), "HF_TOKEN" })
	res, err := c.Download(context.Background(), Request{Kind: KindDataset, Repo: "oldorg/old-name", Files: []string{"traces.jsonl"}})
	if err != nil || !bytes.Equal(readPtr(t, res.Files[0].Path), data) {
		t.Fatalf("%v", err)
	}
	if h.CDNAuthHeaders() != 0 {
		t.Fatal("token sent to the CDN")
	}
}

// TestStalledDownloadResumes: a CDN that stops sending is cut after the
// read timeout and the download resumes.
func TestStalledDownloadResumes(t *testing.T) {
	h, data := testHub(t)
	stall := make(chan struct{})
	defer close(stall)
	h.Inject(hubtest.Fault{Method: "GET", Path: "/blobs/", CutAfter: 4096, Stall: stall})
	c, lb := newTestClient(t, h.URL, t.TempDir(), func(c *Config) { c.ReadTimeout = 200 * time.Millisecond })
	res, err := c.Download(context.Background(), dsReq("traces.jsonl"))
	if err != nil || !bytes.Equal(readPtr(t, res.Files[0].Path), data) {
		t.Fatalf("%v\n%s", err, lb)
	}
	if !strings.Contains(lb.String(), "HF_HUB_DOWNLOAD_TIMEOUT") {
		t.Errorf("the stall is not logged:\n%s", lb)
	}
}

// TestCancel: a cancelled context stops a download; the partial file is
// kept for the next run.
func TestCancel(t *testing.T) {
	h, _ := testHub(t)
	stall := make(chan struct{})
	defer close(stall)
	h.Inject(hubtest.Fault{Method: "GET", Path: "/blobs/", CutAfter: 4096, Stall: stall})
	ctx, cancel := context.WithCancel(context.Background())
	c, _ := newTestClient(t, h.URL, t.TempDir(), func(c *Config) {
		c.Progress = progressFunc(func(n int64) {
			if n > 0 {
				cancel()
			}
		})
	})
	if _, err := c.Download(ctx, dsReq("traces.jsonl")); !errors.Is(err, context.Canceled) {
		t.Fatalf("%v", err)
	}
}

type progressFunc func(int64)

func (f progressFunc) Start(string, int64, int64) {}
func (f progressFunc) Add(n int64)                { f(n) }
func (f progressFunc) Finish(error)               {}
