package hfhub

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCacheDirPrecedence(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HF_HUB_CACHE": "/a", "HUGGINGFACE_HUB_CACHE": "/b", "HF_HOME": "/c", "HOME": "/h"}, "/a"},
		{map[string]string{"HUGGINGFACE_HUB_CACHE": "/b", "HF_HOME": "/c", "HOME": "/h"}, "/b"},
		{map[string]string{"HF_HOME": "/c", "HOME": "/h"}, "/c/hub"},
		{map[string]string{"HOME": "/h"}, "/h/.cache/huggingface/hub"},
	}
	for _, tc := range cases {
		if got := CacheDir(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("CacheDir(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

func TestSnapshot(t *testing.T) {
	root := t.TempDir()
	sha := strings.Repeat("c", 40)
	repoDir := RepoDir(root, KindDataset, "org/name")
	if err := os.MkdirAll(filepath.Join(repoDir, "refs"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(repoDir, "refs", "main"), []byte(sha+"\n"), 0o644)
	os.WriteFile(filepath.Join(repoDir, "refs", "bad"), []byte("not a commit"), 0o644)

	dir, commit, tried, err := Snapshot(root, KindDataset, "org/name", "main")
	if err != nil || commit != sha || dir != filepath.Join(repoDir, "snapshots", sha) || len(tried) != 1 {
		t.Fatalf("main: %q %q %v %v", dir, commit, tried, err)
	}
	if _, c, tried, err := Snapshot(root, KindDataset, "org/name", sha); err != nil || c != sha || len(tried) != 0 {
		t.Fatalf("commit rev: %q %v %v", c, tried, err)
	}
	if _, _, _, err := Snapshot(root, KindDataset, "org/name", "v2"); !errors.Is(err, ErrNotCached) {
		t.Fatalf("missing ref: %v", err)
	}
	if _, _, _, err := Snapshot(root, KindDataset, "org/name", "bad"); err == nil || errors.Is(err, ErrNotCached) || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("damaged ref: %v", err)
	}
	if _, _, _, err := Snapshot(root, KindModel, "org/name", "main"); !errors.Is(err, ErrNotCached) {
		t.Fatalf("models kind must not see the dataset: %v", err)
	}
}
