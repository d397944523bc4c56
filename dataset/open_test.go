package dataset

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// sharedTraces returns the path of a file or directory under ../shared/traces
// (next to the module root), skipping the test when it is absent.
func sharedTraces(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("module root not found; cannot locate ../shared/traces")
		}
		dir = parent
	}
	p := filepath.Join(dir, "..", "shared", "traces", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared trace corpus %s not present (expected next to the module at ../shared/traces): %v", p, err)
	}
	return p
}

// logRecorder collects Logf output.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, fmt.Sprintf(format, args...))
}

func (l *logRecorder) String() string {
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

func readDirect(t testing.TB, path string, opt Options) []Trace {
	t.Helper()
	traces, _, err := ReadPath(path, opt.Read)
	if err != nil {
		t.Fatal(err)
	}
	sel, _, err := Select(traces, opt.Select)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func mustOpen(t testing.TB, src Source, opt Options) *Corpus {
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
			src := Source{InputFile: sharedTraces(t, tc.path)}
			logs := &logRecorder{}
			opt := Options{Select: tc.sel, CacheEnabled: true, CacheDir: t.TempDir(), Logf: logs.logf}
			want := readDirect(t, src.InputFile, opt)

			cold := mustOpen(t, src, opt)
			if cold.FromCache() || cold.CachePath() == "" {
				t.Fatalf("cold open: FromCache=%v CachePath=%q, want a fresh build", cold.FromCache(), cold.CachePath())
			}
			if d := diffTraces(want, cold.Traces()); d != "" {
				t.Fatalf("cold open differs from a direct read: %s", d)
			}
			loc, err := Locate(context.Background(), src, opt)
			if err != nil {
				t.Fatal(err)
			}
			if loc.Hashed || !loc.Exists || loc.Path != cold.CachePath() {
				t.Errorf("Locate after build = %+v, want the built path, found through the stat index", loc)
			}
			warm := mustOpen(t, src, opt)
			if !warm.FromCache() {
				t.Fatal("second open was not served from the cache")
			}
			if d := diffTraces(want, warm.Traces()); d != "" {
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
