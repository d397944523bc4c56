package dataset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/internal/testshared"
)

// cacheSharedTraces returns the path of a file or directory under ../shared/traces
// (next to the module root), skipping the test when it is absent.
func cacheSharedTraces(t testing.TB, name string) string {
	t.Helper()
	return testshared.Path(t, filepath.Join("traces", name))
}

// cacheLog collects Logf output.
type cacheLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *cacheLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, fmt.Sprintf(format, args...))
}

func (l *cacheLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.msgs, "\n")
}

func sha256File(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// cacheReadOnce memoises ReadPath of the shared corpora: parsing the
// 200-trace corpus dominates these tests, above all under -race.
var cacheReadOnce sync.Map // path → *cacheRead

type cacheRead struct {
	once   sync.Once
	traces []Trace
	err    error
}

// cacheReadDirect reads path without the cache and selects, as the
// reference the cached corpora are compared with.
func cacheReadDirect(t testing.TB, path string, opt Options) []Trace {
	t.Helper()
	var traces []Trace
	var err error
	if opt.Read == (ReadOptions{}) {
		v, _ := cacheReadOnce.LoadOrStore(path, &cacheRead{})
		r := v.(*cacheRead)
		r.once.Do(func() { r.traces, _, r.err = ReadPath(path, ReadOptions{}) })
		traces, err = r.traces, r.err
	} else {
		traces, _, err = ReadPath(path, opt.Read)
	}
	if err != nil {
		t.Fatal(err)
	}
	sel, _, err := Select(traces, opt.Select)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func cacheMustOpen(t testing.TB, src Source, opt Options) *Corpus {
	t.Helper()
	c, err := Open(context.Background(), src, opt)
	if err != nil {
		t.Fatalf("Open(%+v): %v", src, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestOpenRealCorpusCached checks, over the shared corpus in both layouts,
// that a cold Open builds the cache, a second Open is served from it
// without hashing the source again, and both yield exactly the traces that
// reading the source directly yields.
func TestOpenRealCorpusCached(t *testing.T) {
	cases := []struct {
		name string
		path string
		sel  SelectOptions
	}{
		{"jsonl.zst", "kvct-200.jsonl.zst", SelectOptions{}},
		{"jsonl.zst selected", "kvct-200.jsonl.zst", SelectOptions{MaxContextLength: 200000, MaxOSL: 4096, NumEntries: 50}},
		{"directory", "dir-sample", SelectOptions{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.sel != (SelectOptions{}) && (raceEnabled || testing.Short()) {
				t.Skip("another parse of the large corpus; skipped under -race and -short")
			}
			src := Source{InputFile: cacheSharedTraces(t, tc.path)}
			logs := &cacheLog{}
			opt := Options{Select: tc.sel, CacheEnabled: true, CacheDir: t.TempDir(), Logf: logs.logf}
			want := cacheReadDirect(t, src.InputFile, opt)

			cold := cacheMustOpen(t, src, opt)
			if cold.FromCache() || cold.CachePath() == "" {
				t.Fatalf("cold open: FromCache=%v CachePath=%q, want a fresh build", cold.FromCache(), cold.CachePath())
			}
			if d := cacheDiffTraces(want, cold.Traces()); d != "" {
				t.Fatalf("cold open differs from a direct read: %s", d)
			}
			loc, err := Locate(context.Background(), src, opt)
			if err != nil {
				t.Fatal(err)
			}
			if loc.Hashed || !loc.Exists || loc.Path != cold.CachePath() {
				t.Errorf("Locate after build = %+v, want the built path, found through the stat index", loc)
			}
			warm := cacheMustOpen(t, src, opt)
			if !warm.FromCache() {
				t.Fatal("second open was not served from the cache")
			}
			if d := cacheDiffTraces(want, warm.Traces()); d != "" {
				t.Fatalf("warm open differs from a direct read: %s", d)
			}
			id := warm.Identity()
			if tc.path != "dir-sample" {
				if got := sha256File(t, src.InputFile); id.SHA256 != got {
					t.Errorf("Identity.SHA256 = %q, want %q", id.SHA256, got)
				}
			}
			parents, subs := 0, 0
			for i := range want {
				parents += len(want[i].Requests)
				subs += want[i].NumSubagentRequests()
			}
			if id.Traces != len(want) || id.ParentRequests != parents || id.SubagentRequests != subs || id.Path != src.InputFile {
				t.Errorf("Identity = %+v, want %d traces, %d parent and %d subagent requests from %s", id, len(want), parents, subs, src.InputFile)
			}
			if ls := warm.LoadStats(); ls.Select.Total != len(want) || ls.Read.Traces < len(want) {
				t.Errorf("LoadStats.Select.Total = %d, want %d", ls.Select.Total, len(want))
			}
			if logs.String() != "" {
				t.Errorf("unexpected warnings:\n%s", logs)
			}
		})
	}
}

// corruptions are in-place damages to a cache file, by section.
func corruptions(t testing.TB, path string) []struct {
	name   string
	damage func(t testing.TB, path string)
} {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	secs := sectionsOf(t, b)
	flip := func(id uint32, frac ...float64) func(testing.TB, string) {
		return func(t testing.TB, p string) {
			s := secs[id]
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, fr := range frac {
				off := int64(s.off) + int64(float64(s.n-1)*fr)
				var one [1]byte
				if _, err := f.ReadAt(one[:], off); err != nil {
					t.Fatal(err)
				}
				one[0] ^= 0x04
				if _, err := f.WriteAt(one[:], off); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return []struct {
		name   string
		damage func(t testing.TB, path string)
	}{
		{"truncated", func(t testing.TB, p string) {
			if err := os.Truncate(p, int64(len(b)*2/3)); err != nil {
				t.Fatal(err)
			}
		}},
		{"header flipped", func(t testing.TB, p string) {
			f, _ := os.OpenFile(p, os.O_RDWR, 0)
			defer f.Close()
			f.WriteAt([]byte{b[17] ^ 1}, 17)
		}},
		{"strings flipped", flip(secStrings, 0.5)},
		{"traces flipped", flip(secTraces, 0.1, 0.9)},
		{"requests flipped", flip(secRequests, 0.3)},
		{"hash ids flipped once", flip(secHashIDs, 0.77)},
		{"hash ids flipped in three places", flip(secHashIDs, 0, 0.5, 1)},
		{"meta flipped", flip(secMeta, 0.5)},
	}
}

// TestOpenRebuildsCorruptCache damages a built cache file in each section
// and checks that Open detects it, warns, rebuilds and returns the right
// traces — for a warm file too, whose verified marker must not vouch for
// the damaged bytes.
func TestOpenRebuildsCorruptCache(t *testing.T) {
	for _, corpus := range []string{"dir-sample", "kvct-200.jsonl.zst"} {
		t.Run(corpus, func(t *testing.T) {
			src := Source{InputFile: cacheSharedTraces(t, corpus)}
			base := Options{CacheEnabled: true}
			if corpus != "dir-sample" {
				base.Select.NumEntries = 30 // keep the rebuilds cheap
			}
			want := cacheReadDirect(t, src.InputFile, base)
			names := []string{"truncated", "header flipped", "strings flipped", "traces flipped", "requests flipped",
				"hash ids flipped once", "hash ids flipped in three places", "meta flipped"}
			if corpus != "dir-sample" {
				// Each rebuild of the large corpus parses it again (a second,
				// several under -race); the small corpus covers every section.
				names = []string{"truncated", "hash ids flipped in three places"}
				if raceEnabled || testing.Short() {
					names = names[1:]
				}
			}
			for _, name := range names {
				t.Run(name, func(t *testing.T) {
					logs := &cacheLog{}
					opt := base
					opt.CacheDir, opt.Logf = t.TempDir(), logs.logf
					built := cacheMustOpen(t, src, opt)
					path := built.CachePath()
					built.Close()
					var damage func(testing.TB, string)
					for _, c := range corruptions(t, path) {
						if c.name == name {
							damage = c.damage
						}
					}
					if damage == nil {
						t.Fatalf("no corruption named %q", name)
					}
					// A full verification marks the file as good (once it is
					// older than markerMargin), so the damage below must get
					// past the marker that lets warm opens skip checksums.
					time.Sleep(markerMargin + 10*time.Millisecond)
					if err := VerifyCache(path); err != nil {
						t.Fatal(err)
					}
					if fi, err := os.Stat(path); err != nil || (stampOf(fi).Ino != 0 && !verifiedMarkerMatches(path, fi)) {
						t.Fatalf("no verified marker after VerifyCache (stat err %v)", err)
					}
					damage(t, path)
					c := cacheMustOpen(t, src, opt)
					if c.FromCache() {
						t.Fatal("a damaged cache file was trusted")
					}
					if !strings.Contains(logs.String(), "corrupt") || strings.Count(logs.String(), "rebuilding") != 1 {
						t.Errorf("want one corruption warning; log:\n%s", logs)
					}
					if d := cacheDiffTraces(want, c.Traces()); d != "" {
						t.Fatalf("rebuilt corpus differs: %s", d)
					}
					if err := VerifyCache(path); err != nil {
						t.Errorf("rebuilt file does not verify: %v", err)
					}
				})
			}
		})
	}
}

// concurrencyCorpus is the corpus the concurrent-builder tests use: the
// large one, whose build takes long enough for the builders to overlap,
// except under -race and -short, where parsing it costs too much.
func concurrencyCorpus() string {
	if raceEnabled || testing.Short() {
		return "dir-sample"
	}
	return "kvct-200.jsonl.zst"
}

// TestOpenConcurrentColdBuild starts several Opens of one cold cache at
// once: exactly one builds, the others wait on the lock and reuse its file.
func TestOpenConcurrentColdBuild(t *testing.T) {
	src := Source{InputFile: cacheSharedTraces(t, concurrencyCorpus())}
	opt := Options{CacheEnabled: true, CacheDir: t.TempDir(), Select: SelectOptions{NumEntries: 4}}
	want := cacheReadDirect(t, src.InputFile, opt)
	const n = 4
	var wg sync.WaitGroup
	corpora := make([]*Corpus, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			corpora[i], errs[i] = Open(context.Background(), src, opt)
		}()
	}
	wg.Wait()
	built := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Open %d: %v", i, errs[i])
		}
		defer corpora[i].Close()
		if !corpora[i].FromCache() {
			built++
		}
		if d := cacheDiffTraces(want, corpora[i].Traces()); d != "" {
			t.Fatalf("Open %d: %s", i, d)
		}
	}
	if built != 1 {
		t.Errorf("%d of %d concurrent Opens built the cache, want exactly 1", built, n)
	}
}

// TestOpenConcurrentProcesses runs two processes (this test binary, as
// helpers) that Open the same cold cache at once: one builds, the other
// waits on the file lock and reuses the result.
func TestOpenConcurrentProcesses(t *testing.T) {
	input := cacheSharedTraces(t, concurrencyCorpus())
	dir := t.TempDir()
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessOpen$")
		cmd.Env = append(os.Environ(), "AGENTPERF_HELPER_OPEN=1", "AGENTPERF_HELPER_INPUT="+input, "AGENTPERF_HELPER_DIR="+dir)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	built := 0
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, outs[i])
		}
		switch {
		case strings.Contains(outs[i].String(), "RESULT built"):
			built++
		case strings.Contains(outs[i].String(), "RESULT cached"):
		default:
			t.Fatalf("helper %d printed no result:\n%s", i, outs[i])
		}
	}
	if built != 1 {
		t.Errorf("%d of 2 processes built the cache, want exactly 1", built)
	}
}

// TestHelperProcessOpen is the body of TestOpenConcurrentProcesses'
// helper processes; it does nothing in a normal run.
func TestHelperProcessOpen(t *testing.T) {
	if os.Getenv("AGENTPERF_HELPER_OPEN") != "1" {
		t.Skip("helper process for TestOpenConcurrentProcesses")
	}
	opt := Options{CacheEnabled: true, CacheDir: os.Getenv("AGENTPERF_HELPER_DIR"), Select: SelectOptions{NumEntries: 4}}
	c, err := Open(context.Background(), Source{InputFile: os.Getenv("AGENTPERF_HELPER_INPUT")}, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Len() != 4 {
		t.Fatalf("Len = %d, want 4", c.Len())
	}
	if c.FromCache() {
		fmt.Println("RESULT cached")
	} else {
		fmt.Println("RESULT built")
	}
}

// TestOpenUnusableCacheDir checks that a cache directory that cannot be
// written never fails the run: Open warns and serves the corpus from memory.
func TestOpenUnusableCacheDir(t *testing.T) {
	src := Source{InputFile: cacheSharedTraces(t, "dir-sample")}
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{"below a regular file": filepath.Join(file, "cache")}
	if os.Geteuid() != 0 {
		ro := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		dirs["read-only directory"] = ro
	}
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			logs := &cacheLog{}
			opt := Options{CacheEnabled: true, CacheDir: dir, Logf: logs.logf}
			c := cacheMustOpen(t, src, opt)
			if c.FromCache() || c.CachePath() != "" {
				t.Errorf("FromCache=%v CachePath=%q, want an in-memory corpus", c.FromCache(), c.CachePath())
			}
			if !strings.Contains(logs.String(), "dataset cache disabled") {
				t.Errorf("no warning; log:\n%s", logs)
			}
			if d := cacheDiffTraces(cacheReadDirect(t, src.InputFile, opt), c.Traces()); d != "" {
				t.Fatal(d)
			}
			if c.Identity().SHA256 == "" {
				t.Error("in-memory corpus has no content SHA-256 in its identity")
			}
		})
	}
}

// TestCacheKey checks what the key covers: the same content under another
// name maps to the same file; options that change the loaded corpus, and
// changed content, map to another.
func TestCacheKey(t *testing.T) {
	orig := cacheSharedTraces(t, "dir-sample")
	tmp := t.TempDir()
	copyDir := func(dst string) {
		if err := os.CopyFS(dst, os.DirFS(orig)); err != nil {
			t.Fatal(err)
		}
	}
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	copyDir(a)
	copyDir(b)
	cache := t.TempDir()
	key := func(src string, opt Options) Location {
		t.Helper()
		opt.CacheDir = cache
		loc, err := Locate(context.Background(), Source{InputFile: src}, opt)
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}
	base := key(a, Options{})
	if !base.Hashed {
		t.Error("first Locate of a new source did not hash it")
	}
	if again := key(a, Options{}); again.Key != base.Key || again.Hashed {
		t.Errorf("second Locate: %+v, want key %s without hashing", again, base.Key)
	}
	if other := key(b, Options{}); other.Key != base.Key {
		t.Errorf("same content at another path: key %s, want %s", other.Key, base.Key)
	}
	for name, opt := range map[string]Options{
		"skip invalid":       {Read: ReadOptions{SkipInvalid: true}},
		"num entries":        {Select: SelectOptions{NumEntries: 3}},
		"max context length": {Select: SelectOptions{MaxContextLength: 100000}},
		"max osl with limit": {Select: SelectOptions{MaxContextLength: 100000, MaxOSL: 10}},
	} {
		if k := key(a, opt).Key; k == base.Key {
			t.Errorf("%s: key unchanged", name)
		}
	}
	if k := key(a, Options{Select: SelectOptions{MaxOSL: 10}}).Key; k != base.Key {
		t.Errorf("max OSL without a context limit changes nothing loaded, but changed the key")
	}
	// Change one file's content (same size): rehash, new key.
	f := filepath.Join(a, "trace_0242.json")
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-2] = ' '
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if changed := key(a, Options{}); changed.Key == base.Key || !changed.Hashed {
		t.Errorf("after a content change: %+v, want a new key from a rehash", changed)
	}
}

// TestOpenRemovesStaleTemps checks that a temporary file left by a builder
// that died mid-write is removed by the next build of that key.
func TestOpenRemovesStaleTemps(t *testing.T) {
	src := Source{InputFile: cacheSharedTraces(t, "dir-sample")}
	opt := Options{CacheEnabled: true, CacheDir: t.TempDir()}
	loc, err := Locate(context.Background(), src, opt)
	if err != nil {
		t.Fatal(err)
	}
	stale := loc.Path + ".tmp-12345"
	if err := os.WriteFile(stale, []byte("half a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	cacheMustOpen(t, src, opt)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary file still there (stat err %v)", err)
	}
}

// TestOpenLockWaitHonoursContext checks that a builder waiting for another
// builder's lock gives up when its context ends, with the context's error.
func TestOpenLockWaitHonoursContext(t *testing.T) {
	src := Source{InputFile: cacheSharedTraces(t, "dir-sample")}
	opt := Options{CacheEnabled: true, CacheDir: t.TempDir()}
	loc, err := Locate(context.Background(), src, opt)
	if err != nil {
		t.Fatal(err)
	}
	held, err := lockFile(context.Background(), loc.Path+".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer held.unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		c, err := Open(ctx, src, opt)
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Open while another builder holds the lock, after cancel: err = %v, want context.Canceled", err)
	}
}

// TestOpenRejectsFileOfAnotherKey checks that a valid cache file copied to
// another key's name is rebuilt rather than served for the wrong corpus.
func TestOpenRejectsFileOfAnotherKey(t *testing.T) {
	src := Source{InputFile: cacheSharedTraces(t, "dir-sample")}
	logs := &cacheLog{}
	opt := Options{CacheEnabled: true, CacheDir: t.TempDir(), Logf: logs.logf}
	few := opt
	few.Select.NumEntries = 2
	small := cacheMustOpen(t, src, few)
	loc, err := Locate(context.Background(), src, opt)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(small.CachePath())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(loc.Path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c := cacheMustOpen(t, src, opt)
	if c.FromCache() || c.Len() != 5 || !strings.Contains(logs.String(), "built for key") {
		t.Errorf("FromCache=%v Len=%d, want a rebuild of all 5 traces with a warning; log:\n%s", c.FromCache(), c.Len(), logs)
	}
}

func TestParseSyntheticKeys(t *testing.T) {
	o, ok, err := ParseSynthetic("synthetic:seed=3,traces=5,subagents=true,min-turns=4,max-turns=9,max-context=8192,time-scale=0.01")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	want := SynthOptions{Seed: 3, Traces: 5, Subagents: true, MinTurns: 4, MaxTurns: 9, MaxContext: 8192, TimeScale: 0.01}
	if o.Seed != want.Seed || o.Traces != want.Traces || !o.Subagents || o.MinTurns != 4 || o.MaxTurns != 9 || o.MaxContext != 8192 || o.TimeScale != 0.01 {
		t.Fatalf("got %+v, want %+v", o, want)
	}
	for _, bad := range []string{"synthetic:time-scale=0", "synthetic:max-context=-1", "synthetic:bogus=1"} {
		if _, _, err := ParseSynthetic(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// TestOpenErrorsNameFields: a missing input file and a corpus the
// selection empties are *FieldError values naming the Source or
// SelectOptions field, and the cause still matches errors.Is.
func TestOpenErrorsNameFields(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), Source{InputFile: filepath.Join(t.TempDir(), "nope.jsonl")}, Options{})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "Source.InputFile" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing input file: %v, want a *FieldError for Source.InputFile matching fs.ErrNotExist", err)
	}
	_, err = Open(context.Background(), Source{PublicDataset: "synthetic:traces=3"}, Options{Select: SelectOptions{MaxContextLength: 1}})
	if !errors.As(err, &fe) || fe.Field != "SelectOptions.MaxContextLength" {
		t.Errorf("selection that drops every trace: %v, want a *FieldError for SelectOptions.MaxContextLength", err)
	}
	_, err = ResolveAlias("weka_trace")
	if !errors.Is(err, ErrLocalAlias) || !strings.Contains(err.Error(), "Source.InputFile") {
		t.Errorf("weka_trace alias: %v, want ErrLocalAlias naming Source.InputFile", err)
	}
}
