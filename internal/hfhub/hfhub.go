// Package hfhub reads the local Hugging Face hub cache the way the hf CLI
// lays it out: <cache>/<kind>--<org>--<name>/refs/<revision> holds a
// commit, and files live under snapshots/<commit>/. It resolves exactly
// the requested revision, never "the newest snapshot" (a lesson of the
// InferenceX pipeline, reference/inferencex-contract.md §4 item 2). It
// never touches the network.
package hfhub

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Repository kinds, the prefix of a repository's folder in the cache.
const (
	KindDataset = "datasets"
	KindModel   = "models"
)

// ErrNotCached is returned by Snapshot when the revision's ref is absent.
var ErrNotCached = errors.New("not in the hub cache")

// CacheDir returns the hub cache directory: HF_HUB_CACHE, else
// HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub
// (with HOME from getenv).
func CacheDir(getenv func(string) string) string {
	if d := getenv("HF_HUB_CACHE"); d != "" {
		return d
	}
	if d := getenv("HUGGINGFACE_HUB_CACHE"); d != "" {
		return d
	}
	if d := getenv("HF_HOME"); d != "" {
		return filepath.Join(d, "hub")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".cache", "huggingface", "hub")
}

// IsCommit reports whether s is a 40-hex commit id.
func IsCommit(s string) bool {
	if len(s) != 40 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// RepoDir returns the folder of repo ("org/name") of kind under root.
func RepoDir(root, kind, repo string) string {
	org, name, _ := strings.Cut(repo, "/")
	return filepath.Join(root, kind+"--"+org+"--"+name)
}

// Snapshot resolves repo@rev of kind under root to its snapshot folder and
// commit. A 40-hex rev is the commit itself; otherwise refs/<rev> is read.
// tried lists the paths looked at. An absent ref wraps ErrNotCached; a ref
// that does not hold a commit is a damaged cache, reported as such.
func Snapshot(root, kind, repo, rev string) (dir, commit string, tried []string, err error) {
	repoDir := RepoDir(root, kind, repo)
	commit = rev
	if !IsCommit(rev) {
		refPath := filepath.Join(repoDir, "refs", filepath.FromSlash(rev))
		tried = append(tried, refPath)
		b, rerr := os.ReadFile(refPath)
		if rerr != nil {
			return "", "", tried, fmt.Errorf("no ref %q: %w", rev, ErrNotCached)
		}
		commit = strings.TrimSpace(string(b))
		if !IsCommit(commit) {
			if len(commit) > 80 {
				commit = commit[:80] + "…"
			}
			return "", "", tried, fmt.Errorf("%s holds %q, not a 40-hex commit: the hub cache is damaged", refPath, commit)
		}
	}
	return filepath.Join(repoDir, "snapshots", commit), commit, tried, nil
}
