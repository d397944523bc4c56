package dataset

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
)

var updateCacheGolden = flag.Bool("update-cache-golden", false, "rewrite testdata/cache-v1.dscache from the current encoder")

// goldenCorpus is a small corpus touching every table and column.
func goldenCorpus() []Trace {
	nan := math.NaN()
	return []Trace{
		{
			ID: "trace_a", Models: []string{"claude-opus-4-5"}, BlockSize: 64, HashIDScope: "local", ToolTokens: 100, SystemTokens: 20,
			Requests: []Request{
				{T: 0, Type: "n", Model: "claude-opus-4-5", In: 130, Out: 7, HashIDs: []uint32{1, 2}, InputTypes: []string{"text"}, OutputTypes: []string{"tool_use"}, Stop: "tool_use", APITime: 1.5, ThinkTime: nan, TTFT: nan},
				{T: 4.25, Type: "s", Model: "claude-opus-4-5", In: 200, Out: 9, HashIDs: []uint32{1, 2, 3}, InputTypes: []string{"text", "tool_result"}, OutputTypes: []string{"text"}, Stop: "end_turn", APITime: 2, ThinkTime: 0.75, TTFT: 0.3},
			},
			Subagents: []Subagent{{
				After: 1, T: 2, AgentID: "explore_001", SubagentType: "Explore", DurationMs: 1500, TotalTokens: 4000, ToolUseCount: 3, Status: "completed",
				Models: []string{"claude-haiku-4-5"}, ToolTokens: 50, SystemTokens: 10,
				Requests: []Request{{T: 2.5, Type: "n", Model: "claude-haiku-4-5", In: 64, Out: 5, HashIDs: []uint32{9}, APITime: 0.5, ThinkTime: nan, TTFT: nan}},
				Subagents: []Subagent{{After: 0, T: 2.6, AgentID: "nested_002", DurationMs: nan, Status: "async_launched",
					Requests: []Request{{T: 2.7, Type: "n", In: 10, Out: 1, APITime: nan, ThinkTime: nan, TTFT: nan}}}},
			}},
		},
		{ID: "trace_b", BlockSize: 64, HashIDScope: "local"},
	}
}

// TestCacheGoldenV1 pins the version-1 encoding: the encoder must produce
// testdata/cache-v1.dscache byte for byte, and the decoder must read it
// back. A failure here means the format changed: bump CacheFormatVersion,
// update docs/cache-format.md and rerun with -update-cache-golden.
func TestCacheGoldenV1(t *testing.T) {
	golden := filepath.Join("testdata", "cache-v1.dscache")
	id := Identity{SourceType: "file", Loader: "weka_trace", Path: "/golden/traces.jsonl", SHA256: "00ff", Traces: 2, ParentRequests: 2, SubagentRequests: 2}
	got, err := encodeBytes(goldenCorpus(), cacheMeta{Identity: id})
	if err != nil {
		t.Fatal(err)
	}
	if *updateCacheGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update-cache-golden to create it)", err)
	}
	if !bytes.Equal(got, want) {
		n := 0
		for n < min(len(got), len(want)) && got[n] == want[n] {
			n++
		}
		t.Errorf("encoding differs from %s at byte %d (%d vs %d bytes): the format changed without a version bump", golden, n, len(got), len(want))
	}
	c, err := decodeCache(want, true)
	if err != nil {
		t.Fatal(err)
	}
	if d := cacheDiffTraces(goldenCorpus(), c.Traces()); d != "" {
		t.Errorf("decoding %s: %s", golden, d)
	}
	if c.Identity() != id {
		t.Errorf("Identity = %+v, want %+v", c.Identity(), id)
	}
}
