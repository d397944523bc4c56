package hfhub

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseRepoInfo: the revision API answer never panics the parser, and
// what it accepts is a commit and file names that stay inside a snapshot
// folder.
func FuzzParseRepoInfo(f *testing.F) {
	f.Add([]byte(`{"id":"org/name","sha":"0123456789abcdef0123456789abcdef01234567","siblings":[{"rfilename":"traces.jsonl"},{"rfilename":"plots/a.png"}]}`))
	f.Add([]byte(`{"sha":"0123456789ABCDEF0123456789abcdef01234567","siblings":[]}`))
	f.Add([]byte(`{"sha":"x","siblings":[{"rfilename":"../../etc/passwd"}]}`))
	f.Add([]byte(`{"sha":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := ParseRepoInfo(data)
		if err != nil {
			return
		}
		if !IsCommit(info.Commit) {
			t.Fatalf("accepted commit %q", info.Commit)
		}
		root := filepath.FromSlash("/cache/snapshots/c")
		for _, name := range info.Files {
			p := filepath.Join(root, filepath.FromSlash(name))
			if !strings.HasPrefix(p, root+string(filepath.Separator)) {
				t.Fatalf("file %q escapes the snapshot: %s", name, p)
			}
		}
	})
}

// FuzzHeaders: ETag and Content-Range values from the network never
// panic their parsers; an accepted ETag is a single safe path element and
// an accepted range is ordered.
func FuzzHeaders(f *testing.F) {
	f.Add(`"9570be18a1c0292677faf2bb3dcac243a1f1ca639f17e04fa614f1236836b396"`, "bytes 0-99/100")
	f.Add(`W/"abc"`, "bytes 50-99/*")
	f.Add(`"../x"`, "bytes 9-1/100")
	f.Add(``, "bytes */100")
	f.Fuzz(func(t *testing.T, etag, cr string) {
		if e, ok := NormalizeETag(etag); ok {
			if e == "" || e == "." || e == ".." || strings.ContainsAny(e, `/\"`) || filepath.Base(e) != e {
				t.Fatalf("accepted etag %q from %q", e, etag)
			}
		}
		if s, e, tot, err := ParseContentRange(cr); err == nil {
			if s < 0 || e < s || (tot != -1 && tot <= e) {
				t.Fatalf("accepted range %d-%d/%d from %q", s, e, tot, cr)
			}
		}
	})
}

// FuzzValidFile: a path ValidFile accepts stays inside the folder it is
// joined to.
func FuzzValidFile(f *testing.F) {
	for _, s := range []string{"traces.jsonl", "a/b/c.json", "../x", "a/../../b", "/abs", "a//b", "./a", "a\\..\\b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidFile(s) != nil {
			return
		}
		root := filepath.FromSlash("/r/snap")
		p := filepath.Join(root, filepath.FromSlash(s))
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			t.Fatalf("%q escapes: %s", s, p)
		}
	})
}
