package dataset

import (
	"encoding/json"
	"math"
	"regexp"
	"strings"
	"testing"
)

// TestInfoText: the text of a corpus's Info names its source, its counts
// (with thousands separators), every distribution row, the histogram, the
// windows, the models and the theoretical hit rate, and the JSON carries
// the same statistics.
func TestInfoText(t *testing.T) {
	t.Parallel()
	traces := Synthesize(SynthOptions{Seed: 2, Traces: 6, Subagents: true, MinTurns: 30, MaxTurns: 40, TimeScale: 1, SubagentShare: DefaultSubagentShare})
	c := NewCorpus(traces, Identity{SourceType: "file", Loader: "weka_trace", Path: "x.jsonl", SHA256: "abc"})
	info := NewInfo(c)
	var b strings.Builder
	if err := info.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"corpus          x.jsonl\n", "loader          weka_trace (file)\n", "sha256          abc\n",
		"traces          6 (", "turns per trace", "ISL parent", "OSL subagent", "peak context",
		"context length (in+out) per request\n", "  (8k, 16k]", "  > 1M", "> 128k   (131072)",
		"recorded models (requests)\n", "theoretical prefix-cache hit rate  ", "definition " + HitDefinitionC,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`(?m)^hash ids        \d{1,3}(,\d{3})+ \(`).MatchString(out) {
		t.Errorf("hash ids not grouped by thousands:\n%s", out)
	}
	raw, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Identity struct {
			Path string `json:"path"`
		} `json:"identity"`
		Stats struct {
			Traces int `json:"traces"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(raw, &back); err != nil || back.Stats.Traces != 6 || back.Identity.Path != "x.jsonl" {
		t.Errorf("JSON %s: %+v %v", raw, back, err)
	}
}

func TestStatNumAndTokenCount(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		x    float64
		want string
	}{{math.NaN(), "-"}, {3, "3"}, {1234.6, "1235"}, {12.34, "12.3"}, {1.234, "1.23"}, {-15.55, "-15.6"}} {
		if got := statNum(c.x); got != c.want {
			t.Errorf("statNum(%v) = %q, want %q", c.x, got, c.want)
		}
	}
	for n, want := range map[int]string{0: "0", 1000: "1000", 8192: "8k", 131072: "128k", 1 << 20: "1M", 3 << 20: "3M", 1536: "1536"} {
		if got := tokenCount(n); got != want {
			t.Errorf("tokenCount(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCorpusFind(t *testing.T) {
	t.Parallel()
	c := NewCorpus(Synthesize(SynthOptions{Seed: 1, Traces: 7, MinTurns: 30, MaxTurns: 31, TimeScale: 1, SubagentShare: DefaultSubagentShare}), Identity{})
	tr, err := c.Find(c.Trace(3).ID)
	if err != nil || tr.ID != c.Trace(3).ID {
		t.Fatalf("Find: %v %v", tr.ID, err)
	}
	_, err = c.Find("nope")
	if err == nil || !strings.Contains(err.Error(), `no trace "nope" in the corpus (7 traces; e.g. `+c.Trace(0).ID+", ") || strings.Count(err.Error(), ", ") != 4 {
		t.Errorf("Find(nope) = %v", err)
	}
}
