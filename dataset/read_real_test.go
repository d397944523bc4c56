package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/agentperf/agentperf/internal/testshared"
)

// readTestSharedDir returns ../shared next to the module root, skipping the
// test when it (or the named entry in it) is absent.
func readTestSharedDir(tb testing.TB, entry string) string {
	tb.Helper()
	return testshared.Path(tb, entry)
}

// refCounts are corpus counts computed from the raw JSON with
// encoding/json, independently of the parser under test.
type refCounts struct {
	Traces, Parent, SubEntries, SubRequests int
	HashIDs, IDSum, In, Out                 int64
	InnerT                                  float64 // sum of inner request times, shifted onto the root timeline
	ids                                     []string
}

// addTrace counts one raw trace. Objects are decoded into maps of raw
// fields (so unknown fields cannot hide) and hash_ids into []int64, which
// keeps the reference independent of the parser under test but much
// cheaper than map[string]any all the way down.
func (c *refCounts) addTrace(t *testing.T, m map[string]json.RawMessage) {
	c.Traces++
	var id string
	if err := json.Unmarshal(m["id"], &id); err != nil {
		t.Fatal(err)
	}
	c.ids = append(c.ids, id)
	var walk func(raw json.RawMessage, entryT float64, inner bool)
	walk = func(raw json.RawMessage, entryT float64, inner bool) {
		var reqs []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &reqs); err != nil {
			t.Fatal(err)
		}
		for _, r := range reqs {
			var tv float64
			var typ string
			json.Unmarshal(r["t"], &tv)
			json.Unmarshal(r["type"], &typ)
			if inner && tv < entryT {
				tv += entryT
			}
			if typ == "subagent" {
				c.SubEntries++
				if sub, ok := r["requests"]; ok {
					walk(sub, tv, true)
				}
				continue
			}
			if inner {
				c.SubRequests++
				c.InnerT += tv
			} else {
				c.Parent++
			}
			var ids []int64
			if err := json.Unmarshal(r["hash_ids"], &ids); err != nil {
				t.Fatal(err)
			}
			for _, v := range ids {
				c.HashIDs++
				c.IDSum += v
			}
			var in, out int64
			json.Unmarshal(r["in"], &in)
			json.Unmarshal(r["out"], &out)
			c.In += in
			c.Out += out
		}
	}
	walk(m["requests"], 0, false)
}

func decodeRef(t *testing.T, data []byte, c *refCounts) {
	d := json.NewDecoder(bytes.NewReader(data))
	for {
		var m map[string]json.RawMessage
		if err := d.Decode(&m); err == io.EOF {
			return
		} else if err != nil {
			t.Fatal(err)
		}
		c.addTrace(t, m)
	}
}

func countsOf(traces []Trace) refCounts {
	var c refCounts
	var walk func(ss []Subagent)
	addReq := func(r *Request) {
		c.HashIDs += int64(len(r.HashIDs))
		for _, id := range r.HashIDs {
			c.IDSum += int64(id)
		}
		c.In += int64(r.In)
		c.Out += int64(r.Out)
	}
	walk = func(ss []Subagent) {
		for i := range ss {
			c.SubEntries++
			for j := range ss[i].Requests {
				c.SubRequests++
				c.InnerT += ss[i].Requests[j].T
				addReq(&ss[i].Requests[j])
			}
			walk(ss[i].Subagents)
		}
	}
	for i := range traces {
		c.Traces++
		c.ids = append(c.ids, traces[i].ID)
		c.Parent += len(traces[i].Requests)
		for j := range traces[i].Requests {
			addReq(&traces[i].Requests[j])
		}
		walk(traces[i].Subagents)
	}
	return c
}

func compareCounts(t *testing.T, got, want refCounts) {
	t.Helper()
	if got.Traces != want.Traces || got.Parent != want.Parent || got.SubEntries != want.SubEntries || got.SubRequests != want.SubRequests ||
		got.HashIDs != want.HashIDs || got.IDSum != want.IDSum || got.In != want.In || got.Out != want.Out {
		t.Errorf("counts differ from encoding/json reference:\n got %+v\nwant %+v", got, want)
	}
	if d := got.InnerT - want.InnerT; d > 1e-6 || d < -1e-6 {
		t.Errorf("sum of inner request times %v, reference %v", got.InnerT, want.InnerT)
	}
	if len(got.ids) != len(want.ids) {
		return
	}
	for i := range got.ids {
		if got.ids[i] != want.ids[i] {
			t.Errorf("trace %d id %q, reference %q (order must follow the source)", i, got.ids[i], want.ids[i])
			return
		}
	}
}

func TestReadRealJSONLZstd(t *testing.T) {
	path := readTestSharedDir(t, "traces/kvct-200.jsonl.zst")
	if raceEnabled {
		// 28M hash ids through the race detector take minutes: check the
		// first 20 traces against the reference; the full corpus is
		// checked by the non-race run.
		prefix := firstLines(t, path, 20)
		traces, _, err := ReadJSONL(bytes.NewReader(prefix), path, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var want refCounts
		decodeRef(t, prefix, &want)
		compareCounts(t, countsOf(traces), want)
		return
	}
	traces, st, err := ReadPath(path, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := countsOf(traces)
	if testing.Short() {
		t.Log("-short: the encoding/json reference checks every 10th trace")
		raw := decompressFile(t, path)
		lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
		if len(lines) != len(traces) {
			t.Fatalf("%d lines, %d traces", len(lines), len(traces))
		}
		for i := 0; i < len(lines); i += 10 {
			var want refCounts
			decodeRef(t, lines[i], &want)
			compareCounts(t, countsOf(traces[i:i+1]), want)
		}
	} else {
		var want refCounts
		decodeRef(t, decompressFile(t, path), &want)
		compareCounts(t, got, want)
	}
	// the numbers the corpus is documented with
	if got.Traces != 200 || got.Parent != 14867 || got.SubEntries != 9 || got.SubRequests != 86 {
		t.Errorf("traces %d, parent requests %d, subagents %d with %d requests; want 200, 14867, 9, 86", got.Traces, got.Parent, got.SubEntries, got.SubRequests)
	}
	if st.Traces != 200 || st.SubagentEntries != 9 || st.SubagentRequests != 86 || st.Skipped != 0 {
		t.Errorf("ReadStats = %+v", st)
	}
}

func TestReadRealDirSample(t *testing.T) {
	dir := readTestSharedDir(t, "traces/dir-sample")
	traces, _, err := ReadPath(dir, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	sort.Strings(names)
	var want refCounts
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		decodeRef(t, b, &want)
	}
	if want.Traces == 0 {
		t.Fatal("reference found no traces")
	}
	compareCounts(t, countsOf(traces), want)
}

// firstLines returns the first n lines of a zstd-compressed file,
// decompressing no more than needed.
func firstLines(tb testing.TB, path string, n int) []byte {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	d, err := zstd.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	defer d.Close()
	br := bufio.NewReaderSize(d, 1<<20)
	var out []byte
	for i := 0; i < n; i++ {
		line, err := br.ReadBytes('\n')
		out = append(out, line...)
		if err != nil {
			break
		}
	}
	return out
}

func decompressFile(tb testing.TB, path string) []byte {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	d, err := zstd.NewReader(bufio.NewReader(f))
	if err != nil {
		tb.Fatal(err)
	}
	defer d.Close()
	b, err := io.ReadAll(d)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkReadJSONLReal parses the decompressed 200-trace corpus from
// memory (throughput = JSON bytes per second).
func BenchmarkReadJSONLReal(b *testing.B) {
	raw := decompressFile(b, readTestSharedDir(b, "traces/kvct-200.jsonl.zst"))
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := ReadJSONL(bytes.NewReader(raw), "kvct-200.jsonl", ReadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadPathRealZstd reads the compressed corpus file end to end
// (zstd decode + parse), throughput in decompressed bytes.
func BenchmarkReadPathRealZstd(b *testing.B) {
	path := readTestSharedDir(b, "traces/kvct-200.jsonl.zst")
	raw := decompressFile(b, path)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, _, err := ReadPath(path, ReadOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
