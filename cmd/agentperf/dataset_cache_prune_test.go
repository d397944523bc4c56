package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDatasetCachePrune: prune says what it removes (or would, with
// --dry-run) and what that frees, removes the cache files and their
// markers only, and refuses to run without a rule.
func TestDatasetCachePrune(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(envCacheDir, dir)
	now := time.Now()
	for name, age := range map[string]time.Duration{"old.dscache": 40 * 24 * time.Hour, "new.dscache": time.Hour, "synth-corpus-v1-x.bin": 90 * 24 * time.Hour} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, 2_000_000), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "old.dscache.ok"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.dscache")
	code, out, errOut := runCLI(t, "dataset", "cache", "prune", "--unused-for-days", "30", "--dry-run")
	if code != 0 || !strings.Contains(out, "would remove "+old+" (2.0 MB with its marker") ||
		!strings.Contains(out, "would remove 1 dataset cache files in "+dir+", 2.0 MB; 1 left") {
		t.Fatalf("--dry-run: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("--dry-run removed the file: %v", err)
	}
	code, out, errOut = runCLI(t, "dataset", "cache", "prune", "--unused-for-days", "30")
	if code != 0 || !strings.Contains(out, "removed "+old) || !strings.Contains(out, "removed 1 dataset cache files in "+dir+", 2.0 MB; 1 left") {
		t.Fatalf("prune: exit %d\n%s%s", code, out, errOut)
	}
	for _, gone := range []string{"old.dscache", "old.dscache.ok"} {
		if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", gone, err)
		}
	}
	for _, kept := range []string{"new.dscache", "synth-corpus-v1-x.bin"} {
		if _, err := os.Stat(filepath.Join(dir, kept)); err != nil {
			t.Errorf("%s was removed: %v", kept, err)
		}
	}
	for _, args := range [][]string{{}, {"--unused-for-days", "0"}, {"--keep-newest", "-2"}, {"--unused-for-days", "-1"}, {"--keep-newest", "1", "extra"}} {
		if code, _, errOut := runCLI(t, append([]string{"dataset", "cache", "prune"}, args...)...); code != exitUsage || !strings.Contains(errOut, "dataset cache prune") {
			t.Errorf("prune %v: exit %d, want %d with a message\n%s", args, code, exitUsage, errOut)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new.dscache")); err != nil {
		t.Errorf("a refused prune removed a file: %v", err)
	}
}
