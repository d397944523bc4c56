package dataset

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cacheGenTraces returns n random traces exercising every field of the model:
// NaN timings, empty and shared lists, nested subagents, empty hash ids.
func cacheGenTraces(seed uint64, n int) []Trace {
	rng := rand.New(rand.NewPCG(seed, 1))
	models := []string{"claude-opus-4-5", "claude-haiku-4-5", "claude-sonnet-4"}
	types := [][]string{nil, {"text"}, {"text", "tool_result"}, {"tool_use"}}
	f := func() float64 {
		if rng.IntN(4) == 0 {
			return math.NaN()
		}
		return rng.Float64() * 100
	}
	req := func(t float64) Request {
		h := make([]uint32, rng.IntN(40))
		for i := range h {
			h[i] = uint32(rng.IntN(1 << 20))
		}
		if len(h) == 0 && rng.IntN(2) == 0 {
			h = nil
		}
		return Request{
			T: t, Type: []string{"n", "s"}[rng.IntN(2)], Model: models[rng.IntN(len(models))],
			In: rng.IntN(200000), Out: rng.IntN(4000), HashIDs: h,
			InputTypes: types[rng.IntN(len(types))], OutputTypes: types[rng.IntN(len(types))],
			Stop: []string{"", "tool_use", "end_turn"}[rng.IntN(3)], APITime: f(), ThinkTime: f(), TTFT: f(),
		}
	}
	var sub func(depth int) []Subagent
	sub = func(depth int) []Subagent {
		if depth > 2 || rng.IntN(3) != 0 {
			return nil
		}
		ss := make([]Subagent, 1+rng.IntN(3))
		for i := range ss {
			s := &ss[i]
			s.After, s.T, s.AgentID, s.SubagentType = rng.IntN(5), f(), fmt.Sprintf("a_%03d", rng.IntN(1000)), "Explore"
			s.DurationMs, s.TotalTokens, s.ToolUseCount, s.Status = f(), rng.IntN(1<<40), rng.IntN(30), "completed"
			s.Models = models[:rng.IntN(3)]
			s.ToolTokens, s.SystemTokens = rng.IntN(9000), rng.IntN(3000)
			for range rng.IntN(4) {
				s.Requests = append(s.Requests, req(rng.Float64()))
			}
			s.Subagents = sub(depth + 1)
		}
		return ss
	}
	out := make([]Trace, n)
	for i := range out {
		t := &out[i]
		t.ID = fmt.Sprintf("trace_%04d", i)
		t.Models = models[:1+rng.IntN(3)]
		t.BlockSize, t.HashIDScope = 64, "local"
		t.ToolTokens, t.SystemTokens = rng.IntN(20000), -rng.IntN(3) // negative survives too
		for k := range rng.IntN(12) {
			t.Requests = append(t.Requests, req(float64(k)))
		}
		t.Subagents = sub(0)
	}
	return out
}

// cacheDiffTraces returns a description of the first difference between a and b,
// or "" if they are equal. Floats compare bit-for-bit except that any NaN
// equals any NaN; a nil slice equals an empty one.
func cacheDiffTraces(a, b []Trace) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d traces vs %d", len(a), len(b))
	}
	for i := range a {
		if d := cacheDiffTrace(&a[i], &b[i]); d != "" {
			return fmt.Sprintf("trace %d (%s): %s", i, a[i].ID, d)
		}
	}
	return ""
}

func cacheFeq(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

func cacheSeq[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func cacheDiffTrace(a, b *Trace) string {
	switch {
	case a.ID != b.ID, !cacheSeq(a.Models, b.Models), a.BlockSize != b.BlockSize, a.HashIDScope != b.HashIDScope,
		a.ToolTokens != b.ToolTokens, a.SystemTokens != b.SystemTokens:
		return fmt.Sprintf("trace fields %+v vs %+v", *a, *b)
	}
	if d := cacheDiffRequests(a.Requests, b.Requests); d != "" {
		return d
	}
	return cacheDiffSubagents(a.Subagents, b.Subagents)
}

func cacheDiffRequests(a, b []Request) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d requests vs %d", len(a), len(b))
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if !cacheFeq(x.T, y.T) || x.Type != y.Type || x.Model != y.Model || x.In != y.In || x.Out != y.Out ||
			!cacheSeq(x.HashIDs, y.HashIDs) || !cacheSeq(x.InputTypes, y.InputTypes) || !cacheSeq(x.OutputTypes, y.OutputTypes) ||
			x.Stop != y.Stop || !cacheFeq(x.APITime, y.APITime) || !cacheFeq(x.ThinkTime, y.ThinkTime) || !cacheFeq(x.TTFT, y.TTFT) {
			return fmt.Sprintf("request %d: %+v vs %+v", i, *x, *y)
		}
	}
	return ""
}

func cacheDiffSubagents(a, b []Subagent) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d subagents vs %d", len(a), len(b))
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.After != y.After || !cacheFeq(x.T, y.T) || x.AgentID != y.AgentID || x.SubagentType != y.SubagentType ||
			!cacheFeq(x.DurationMs, y.DurationMs) || x.TotalTokens != y.TotalTokens || x.ToolUseCount != y.ToolUseCount ||
			x.Status != y.Status || !cacheSeq(x.Models, y.Models) || x.ToolTokens != y.ToolTokens || x.SystemTokens != y.SystemTokens {
			return fmt.Sprintf("subagent %d: fields differ", i)
		}
		if d := cacheDiffRequests(x.Requests, y.Requests); d != "" {
			return fmt.Sprintf("subagent %d: %s", i, d)
		}
		if d := cacheDiffSubagents(x.Subagents, y.Subagents); d != "" {
			return fmt.Sprintf("subagent %d: %s", i, d)
		}
	}
	return ""
}

func TestCacheRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		traces []Trace
	}{
		{"empty corpus", nil},
		{"one empty trace", []Trace{{ID: "x"}}},
		{"random", cacheGenTraces(1, 50)},
		{"random with many subagents", cacheGenTraces(7, 300)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "c.dscache")
			id := Identity{SourceType: "file", Path: "/x/traces.jsonl", SHA256: "ab", Traces: len(tc.traces)}
			if err := WriteCache(path, tc.traces, id); err != nil {
				t.Fatal(err)
			}
			for _, full := range []bool{false, true} {
				mode := verifyAuto
				if full {
					mode = verifyFull
				}
				c, err := openCache(path, mode)
				if err != nil {
					t.Fatalf("open (full=%v): %v", full, err)
				}
				if c.Len() != len(tc.traces) {
					t.Fatalf("Len = %d, want %d", c.Len(), len(tc.traces))
				}
				if d := cacheDiffTraces(tc.traces, c.Traces()); d != "" {
					t.Fatalf("round trip (full=%v): %s", full, d)
				}
				if got := c.Identity(); got != id {
					t.Errorf("Identity = %+v, want %+v", got, id)
				}
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if err := VerifyCache(path); err != nil {
				t.Errorf("VerifyCache: %v", err)
			}
		})
	}
}

// TestCacheHashIDsAreViews checks that hash ids are served from the
// mapping, not copied: two requests that share a row share memory, and the
// slice capacity stops at the request so append cannot overwrite a
// neighbour.
func TestCacheHashIDsAreViews(t *testing.T) {
	t.Parallel()
	traces := []Trace{{ID: "a", Requests: []Request{{HashIDs: []uint32{1, 2, 3}}, {HashIDs: []uint32{4, 5}}}}}
	path := filepath.Join(t.TempDir(), "c.dscache")
	if err := WriteCache(path, traces, Identity{}); err != nil {
		t.Fatal(err)
	}
	c, err := OpenCache(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r1, r2 := c.Trace(0).Requests, c.Trace(0).Requests
	if &r1[0].HashIDs[0] != &r2[0].HashIDs[0] {
		t.Error("hash ids of two materialisations do not share memory; want a view into the mapping")
	}
	if cap(r1[0].HashIDs) != 3 {
		t.Errorf("cap(HashIDs) = %d, want 3 (a full slice expression)", cap(r1[0].HashIDs))
	}
	if got := append(r1[0].HashIDs, 9); got[3] != 9 || c.Trace(0).Requests[1].HashIDs[0] != 4 {
		t.Error("append to a view changed the neighbouring request")
	}
}

// encodeToBytes returns the file WriteCache would produce.
func encodeToBytes(t testing.TB, traces []Trace, id Identity) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.dscache")
	if err := WriteCache(path, traces, id); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sectionsOf returns the section table of a valid file.
func sectionsOf(t testing.TB, b []byte) map[uint32]sectionEntry {
	t.Helper()
	out := map[uint32]sectionEntry{}
	for i := 0; i < numSections; i++ {
		e := b[headerSize+i*sectionEntrySize:]
		s := sectionEntry{id: le32(e), crc: le32(e[4:]), off: le64(e[8:]), n: le64(e[16:]), count: le64(e[24:])}
		out[s.id] = s
	}
	return out
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func le64(b []byte) uint64 { return uint64(le32(b)) | uint64(le32(b[4:]))<<32 }

func TestCacheDetectsCorruption(t *testing.T) {
	t.Parallel()
	good := encodeToBytes(t, cacheGenTraces(3, 40), Identity{Path: "p"})
	secs := sectionsOf(t, good)
	flipIn := func(id uint32) func([]byte) []byte {
		return func(b []byte) []byte {
			s := secs[id]
			b[s.off+s.n/2] ^= 0x10
			return b
		}
	}
	cases := []struct {
		name    string
		mutate  func([]byte) []byte
		wantErr error
	}{
		{"truncated to half", func(b []byte) []byte { return b[:len(b)/2] }, ErrCacheCorrupt},
		{"truncated by one byte", func(b []byte) []byte { return b[:len(b)-1] }, ErrCacheCorrupt},
		{"footer missing", func(b []byte) []byte { return b[:len(b)-footerSize] }, ErrCacheCorrupt},
		{"extended", func(b []byte) []byte { return append(b, 0, 0, 0, 0, 0, 0, 0, 0) }, ErrCacheCorrupt},
		{"bad magic", func(b []byte) []byte { b[0] = 'X'; return b }, ErrCacheCorrupt},
		{"other version", func(b []byte) []byte { b[8] = 99; return b }, ErrCacheVersion},
		{"header bit", func(b []byte) []byte { b[20] ^= 1; return b }, ErrCacheCorrupt},
		{"section table bit", func(b []byte) []byte { b[headerSize+9] ^= 4; return b }, ErrCacheCorrupt},
		{"strings bit", flipIn(secStrings), ErrCacheCorrupt},
		{"lists bit", flipIn(secLists), ErrCacheCorrupt},
		{"traces bit", flipIn(secTraces), ErrCacheCorrupt},
		{"subagents bit", flipIn(secSubagents), ErrCacheCorrupt},
		{"requests bit", flipIn(secRequests), ErrCacheCorrupt},
		{"hash-id bit", flipIn(secHashIDs), ErrCacheCorrupt},
		{"meta bit", flipIn(secMeta), ErrCacheCorrupt},
		{"zeroed", func(b []byte) []byte { clear(b); return b }, ErrCacheCorrupt},
		{"empty", func(b []byte) []byte { return nil }, ErrCacheCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := tc.mutate(bytes.Clone(good))
			path := filepath.Join(t.TempDir(), "c.dscache")
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, open := range []struct {
				name string
				fn   func(string) error
			}{
				{"OpenCache", func(p string) error {
					c, err := OpenCache(p)
					if err == nil {
						c.Close()
					}
					return err
				}},
				{"VerifyCache", VerifyCache},
			} {
				err := open.fn(path)
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("%s: err = %v, want %v", open.name, err, tc.wantErr)
				}
			}
		})
	}
}

// TestCacheMarkerInvalidatedByWrite checks the shortcut that skips the
// hash-id checksum: it applies only to the file exactly as verified, so a
// bit flipped in place after a successful open is still caught.
func TestCacheMarkerInvalidatedByWrite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.dscache")
	if err := WriteCache(path, cacheGenTraces(5, 20), Identity{}); err != nil {
		t.Fatal(err)
	}
	// A marker only vouches for files older than markerMargin.
	time.Sleep(markerMargin + 10*time.Millisecond)
	if err := VerifyCache(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !verifiedMarkerMatches(path, fi) {
		t.Skip("no inode/ctime on this platform: every open verifies fully")
	}
	b, _ := os.ReadFile(path)
	hs := sectionsOf(t, b)[secHashIDs]
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	one := []byte{b[hs.off+4] ^ 0x80}
	if _, err := f.WriteAt(one, int64(hs.off+4)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if c, err := OpenCache(path); !errors.Is(err, ErrCacheCorrupt) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("OpenCache after an in-place hash-id flip: err = %v, want ErrCacheCorrupt", err)
	}
}

// TestCorpusClose checks the lifetime rules: Close is idempotent for both
// kinds of corpus, and using a closed corpus is a clear panic, not a read
// of unmapped memory.
func TestCorpusClose(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.dscache")
	traces := cacheGenTraces(11, 3)
	if err := WriteCache(path, traces, Identity{}); err != nil {
		t.Fatal(err)
	}
	mapped, err := OpenCache(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Corpus{"mapped": mapped, "in memory": NewCorpus(traces, Identity{})} {
		t.Run(name, func(t *testing.T) {
			if d := cacheDiffTraces(traces, c.Traces()); d != "" {
				t.Fatal(d)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			defer func() {
				if r := recover(); r == nil {
					t.Error("Trace on a closed corpus did not panic")
				}
			}()
			_ = c.Trace(0)
		})
	}
}

// TestVerifyCaches: a good file is ok, a corrupt one BAD, a missing one an
// ERROR; the count is of the failures.
func TestVerifyCaches(t *testing.T) {
	t.Parallel()
	good := encodeToBytes(t, cacheGenTraces(2, 10), Identity{Path: "p"})
	dir := t.TempDir()
	okPath, badPath, missing := filepath.Join(dir, "ok.dscache"), filepath.Join(dir, "bad.dscache"), filepath.Join(dir, "none.dscache")
	if err := os.WriteFile(okPath, good, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(badPath, good[:len(good)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if n := VerifyCaches(&b, []string{okPath, badPath, missing}); n != 2 {
		t.Errorf("%d failed, want 2", n)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ok: "+okPath+" (") || !strings.HasPrefix(lines[1], "BAD: ") ||
		!strings.Contains(lines[1], badPath) || !strings.HasPrefix(lines[2], "ERROR: ") {
		t.Errorf("output:\n%s", b.String())
	}
}
