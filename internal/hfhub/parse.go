package hfhub

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// RepoInfo is the part of the hub API's answer to
// GET /api/{kind}/{repo}/revision/{revision} that the client uses.
type RepoInfo struct {
	// Commit is the 40-hex commit the revision names ("sha").
	Commit string
	// Files are the paths of the repository's files at that commit
	// ("siblings[].rfilename").
	Files []string
}

// ParseRepoInfo parses the JSON body of the revision API. It requires a
// 40-hex "sha" and accepts only file names that are safe to create under a
// snapshot folder (see ValidFile).
func ParseRepoInfo(data []byte) (RepoInfo, error) {
	var raw struct {
		SHA      *string `json:"sha"`
		Siblings []struct {
			RFilename string `json:"rfilename"`
		} `json:"siblings"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return RepoInfo{}, fmt.Errorf("parse the hub's repository info: %w", err)
	}
	if raw.SHA == nil {
		return RepoInfo{}, errors.New("the hub's repository info has no \"sha\" (is HF_ENDPOINT a Hugging Face hub?)")
	}
	sha := strings.ToLower(*raw.SHA)
	if !IsCommit(sha) {
		return RepoInfo{}, fmt.Errorf("the hub's repository info has sha %.60q, not a 40-hex commit", *raw.SHA)
	}
	info := RepoInfo{Commit: sha, Files: make([]string, 0, len(raw.Siblings))}
	for _, s := range raw.Siblings {
		if err := ValidFile(s.RFilename); err != nil {
			return RepoInfo{}, fmt.Errorf("the hub's repository info lists an unusable file: %w", err)
		}
		info.Files = append(info.Files, s.RFilename)
	}
	return info, nil
}

// ValidRepoID checks "org/name": two parts of letters, digits, '-', '_'
// and '.', neither "." nor "..", and no "--" (the cache's separator).
func ValidRepoID(repo string) error {
	org, name, ok := strings.Cut(repo, "/")
	if !ok || !validPart(org) || !validPart(name) {
		return fmt.Errorf("invalid repository id %q: want org/name of letters, digits, '-', '_' and '.'", repo)
	}
	if strings.Contains(repo, "--") {
		return fmt.Errorf("invalid repository id %q: \"--\" is not allowed in hub ids", repo)
	}
	return nil
}

func validPart(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 96 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// ValidRevision checks a branch, tag or commit: non-empty, no "..", no
// leading or trailing '/', no backslash, blank or control character.
func ValidRevision(rev string) error {
	if rev == "" || len(rev) > 256 || strings.Contains(rev, "..") || strings.HasPrefix(rev, "/") || strings.HasSuffix(rev, "/") || strings.Contains(rev, "//") {
		return fmt.Errorf("invalid revision %q: want a branch, tag or commit", rev)
	}
	for _, c := range rev {
		if c <= ' ' || c == '\\' || c == 0x7f {
			return fmt.Errorf("invalid revision %q: want a branch, tag or commit", rev)
		}
	}
	return nil
}

// ValidFile checks a path inside a repository: relative, '/'-separated,
// clean (no "." or ".." elements, no empty element), no backslash or
// control character.
func ValidFile(f string) error {
	bad := f == "" || len(f) > 1024 || path.IsAbs(f) || path.Clean(f) != f || f == "." || strings.HasPrefix(f, "../") || f == ".."
	for _, c := range f {
		if c < ' ' || c == '\\' || c == 0x7f {
			bad = true
		}
	}
	if !bad {
		for _, el := range strings.Split(f, "/") {
			if el == ".." || el == "." || el == "" {
				bad = true
			}
		}
	}
	if bad {
		return fmt.Errorf("invalid file path %q in a repository", f)
	}
	return nil
}

// NormalizeETag strips the weak prefix and the quotes of an ETag header.
// ok is false when the value is empty or cannot name a blob file (it
// would then be a path outside blobs/).
func NormalizeETag(h string) (etag string, ok bool) {
	e := strings.TrimSpace(h)
	e = strings.TrimPrefix(e, "W/")
	e = strings.Trim(e, `"`)
	if e == "" || len(e) > 128 || e == "." || e == ".." {
		return "", false
	}
	for _, c := range e {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return "", false
		}
	}
	return e, true
}

// ParseContentRange parses "bytes START-END/TOTAL" (TOTAL may be "*").
func ParseContentRange(h string) (start, end, total int64, err error) {
	bad := func() (int64, int64, int64, error) {
		return 0, 0, 0, fmt.Errorf("malformed Content-Range %.80q", h)
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(h), "bytes ")
	if !ok {
		return bad()
	}
	rng, tot, ok := strings.Cut(rest, "/")
	if !ok {
		return bad()
	}
	s, e, ok := strings.Cut(rng, "-")
	if !ok {
		return bad()
	}
	if start, err = strconv.ParseInt(s, 10, 64); err != nil || start < 0 {
		return bad()
	}
	if end, err = strconv.ParseInt(e, 10, 64); err != nil || end < start {
		return bad()
	}
	total = -1
	if tot != "*" {
		if total, err = strconv.ParseInt(tot, 10, 64); err != nil || total <= end {
			return bad()
		}
	}
	return start, end, total, nil
}
