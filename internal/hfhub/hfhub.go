// Package hfhub is agentperf's Hugging Face hub client: it reads the local
// hub cache the way the hf CLI and huggingface_hub lay it out, and fills it
// from the hub.
//
// The cache layout (shared with huggingface_hub, so either tool reads what
// the other wrote):
//
//	<cache>/<kind>--<org>--<name>/refs/<revision>        the commit a branch or tag named
//	<cache>/<kind>--<org>--<name>/blobs/<etag>           file contents, named by their ETag
//	<cache>/<kind>--<org>--<name>/snapshots/<commit>/<f> relative symlinks to the blobs
//	<cache>/.locks/<kind>--<org>--<name>/<etag>.lock     one download per blob at a time
//
// Reading ([Snapshot]) resolves exactly the requested revision, never "the
// newest snapshot", and never touches the network. Downloading ([Client])
// resolves a revision to its commit through the hub API, fetches each
// missing file (following redirects to LFS, Xet or CDN hosts, resuming a
// cut download with HTTP Range), verifies its size and its SHA-256 (LFS
// files) or git blob SHA-1 (other files) against the ETag, and only then
// moves it into blobs/. See docs/hub.md for the protocol and the rules.
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

// expandHome replaces a leading "~" with the home directory.
func expandHome(p string, getenv func(string) string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, p[1:])
}

// HomeDir returns the Hugging Face home directory: HF_HOME, else
// $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface (with HOME from
// getenv). The token file and, by default, the hub cache live under it.
func HomeDir(getenv func(string) string) string {
	if d := getenv("HF_HOME"); d != "" {
		return expandHome(d, getenv)
	}
	if d := getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(expandHome(d, getenv), "huggingface")
	}
	return expandHome(filepath.Join("~", ".cache", "huggingface"), getenv)
}

// CacheDir returns the hub cache directory: HF_HUB_CACHE, else
// HUGGINGFACE_HUB_CACHE, else <HomeDir>/hub. A leading "~" is expanded.
func CacheDir(getenv func(string) string) string {
	if d := getenv("HF_HUB_CACHE"); d != "" {
		return expandHome(d, getenv)
	}
	if d := getenv("HUGGINGFACE_HUB_CACHE"); d != "" {
		return expandHome(d, getenv)
	}
	return filepath.Join(HomeDir(getenv), "hub")
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

// RepoFolder returns the cache folder name of repo ("org/name") of kind:
// "<kind>--org--name".
func RepoFolder(kind, repo string) string {
	return kind + "--" + strings.ReplaceAll(repo, "/", "--")
}

// RepoDir returns the folder of repo ("org/name") of kind under root.
func RepoDir(root, kind, repo string) string {
	return filepath.Join(root, RepoFolder(kind, repo))
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
