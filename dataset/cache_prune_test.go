package dataset

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// pruneFixture makes a cache directory with cache files a..d last used
// 1, 5, 10 and 40 days before now (a by its access time, the others by
// their modification time), each with a marker, and two files prune must
// leave alone.
func pruneFixture(t *testing.T, now time.Time) string {
	t.Helper()
	dir := t.TempDir()
	day := 24 * time.Hour
	for _, f := range []struct {
		name         string
		atime, mtime time.Duration // before now
		size         int
	}{{"a", 1 * day, 30 * day, 100}, {"b", 5 * day, 5 * day, 200}, {"c", 10 * day, 10 * day, 300}, {"d", 40 * day, 40 * day, 400}} {
		p := filepath.Join(dir, f.name+cacheExt)
		if err := os.WriteFile(p, make([]byte, f.size), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(markerPath(p), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-f.atime), now.Add(-f.mtime)); err != nil {
			t.Fatal(err)
		}
	}
	for _, other := range []string{"synth-corpus-v1-x.bin", "notes.txt"} {
		p := filepath.Join(dir, other)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-100*day), now.Add(-100*day)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func names(fs []PrunedFile) []string {
	var out []string
	for _, f := range fs {
		out = append(out, filepath.Base(f.Path))
	}
	return out
}

func left(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestPrune(t *testing.T) {
	t.Parallel()
	now := time.Now()
	day := 24 * time.Hour
	for _, c := range []struct {
		name      string
		olderThan time.Duration
		keep      int
		removed   []string
		freed     int64
	}{
		{"unused for 7 days", 7 * day, -1, []string{"c.dscache", "d.dscache"}, 300 + 400 + 4},
		{"keep the newest 1", 0, 1, []string{"b.dscache", "c.dscache", "d.dscache"}, 200 + 300 + 400 + 6},
		// a was built 30 days ago but used yesterday: its access time counts.
		{"keep 3, unused for 2 days", 2 * day, 3, []string{"d.dscache"}, 402},
		{"keep 0", 0, 0, []string{"a.dscache", "b.dscache", "c.dscache", "d.dscache"}, 1000 + 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, dry := range []bool{true, false} {
				dir := pruneFixture(t, now)
				before := left(t, dir)
				res, err := Prune(context.Background(), PruneOptions{Dir: dir, OlderThan: c.olderThan, Keep: c.keep, DryRun: dry, Now: now})
				if err != nil {
					t.Fatal(err)
				}
				got := names(res.Removed)
				slices.Sort(got)
				if !slices.Equal(got, c.removed) || res.Freed != c.freed || res.Kept != 4-len(c.removed) {
					t.Errorf("dry run %v: removed %v freeing %d, kept %d; want %v freeing %d", dry, got, res.Freed, res.Kept, c.removed, c.freed)
				}
				after := left(t, dir)
				if dry {
					if !slices.Equal(before, after) {
						t.Errorf("the dry run changed the directory: %v -> %v", before, after)
					}
					continue
				}
				for _, n := range c.removed {
					if slices.Contains(after, n) || slices.Contains(after, n+".ok") {
						t.Errorf("%s (or its marker) is still there: %v", n, after)
					}
				}
				for _, n := range []string{"synth-corpus-v1-x.bin", "notes.txt"} {
					if !slices.Contains(after, n) {
						t.Errorf("prune removed %s, which is not a dataset cache file", n)
					}
				}
			}
		})
	}
	if _, err := Prune(context.Background(), PruneOptions{Dir: t.TempDir(), Keep: -1}); err == nil {
		t.Error("Prune without a rule succeeded")
	}
}

// TestPruneSkipsABuild: a file whose key's lock a builder holds is left
// (Busy), not waited for.
func TestPruneSkipsABuild(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no flock: builders do not lock out one another here")
	}
	now := time.Now()
	dir := pruneFixture(t, now)
	d := filepath.Join(dir, "d"+cacheExt)
	lock, err := lockFile(context.Background(), d+".lock")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.unlock()
	res, err := Prune(context.Background(), PruneOptions{Dir: dir, OlderThan: 7 * 24 * time.Hour, Keep: -1, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names(res.Removed), []string{"c.dscache"}) || !slices.Equal(res.Busy, []string{d}) {
		t.Errorf("removed %v, busy %v; want c removed and d busy", names(res.Removed), res.Busy)
	}
	if _, err := os.Stat(d); err != nil {
		t.Errorf("the file under build was removed: %v", err)
	}
}

// TestPruneResultText: a line per file removed (or that would be) with
// its size and last use, a line per busy file, then the total.
func TestPruneResultText(t *testing.T) {
	t.Parallel()
	used := time.Date(2026, 3, 4, 5, 6, 0, 0, time.Local)
	r := &PruneResult{Dir: "/c", Removed: []PrunedFile{{Path: "/c/a.dscache", Bytes: 2_500_000, LastUsed: used}}, Busy: []string{"/c/b.dscache"}, Kept: 3, Freed: 2_500_000}
	for dry, verb := range map[bool]string{true: "would remove", false: "removed"} {
		var b strings.Builder
		r.WriteText(&b, dry)
		want := verb + " /c/a.dscache (2.5 MB with its marker, last used 2026-03-04 05:06)\n" +
			"left /c/b.dscache: a build holds its lock\n" +
			verb + " 1 dataset cache files in /c, 2.5 MB; 3 left\n"
		if b.String() != want {
			t.Errorf("dry %v:\n%s\nwant\n%s", dry, b.String(), want)
		}
	}
}
