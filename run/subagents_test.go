package run_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/run"
)

// TestSummarySubagentsLineAddsUp: child requests sent come from child
// streams that were either started during the run or already under way at
// a lane's start state (a t* snapshot inside a recorded subagent); the
// summary's subagents line counts both, so it never says "6 child
// requests sent (0 branches spawned, 0 child streams started)".
func TestSummarySubagentsLineAddsUp(t *testing.T) {
	t.Parallel()
	s := run.NewSpec()
	s.Corpus.Traces = dataset.Synthesize(dataset.SynthOptions{Seed: 4, Traces: 24, MinTurns: 8, MaxTurns: 16, TimeScale: 0.001,
		Subagents: true, SubagentShare: 0.5})
	s.Replay.URL, s.Replay.Models = "sim://?zero-latency=true", []string{"demo"}
	s.Replay.Concurrency, s.Replay.Seed = 16, 3
	s.Replay.BenchmarkDuration, s.Replay.TraceIdleGapCap = 400*time.Millisecond, time.Millisecond
	s.Replay.Streaming, s.Replay.UseServerTokenCount = true, true
	s.OutputDir, s.NoPlot = t.TempDir(), true
	out, err := run.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	sa := out.Result.Subagents
	if sa.Sent == 0 || sa.StartedAtStart == 0 {
		t.Fatalf("fixture: %+v; want child requests sent and child streams under way at the start states", sa)
	}
	if sa.Started+sa.StartedAtStart == 0 {
		t.Errorf("%d child requests sent, from no child stream: %+v", sa.Sent, sa)
	}
	var b bytes.Buffer
	out.WriteSummary(&b)
	line := ""
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.HasPrefix(l, "subagents: ") {
			line = l
		}
	}
	want := []string{"child requests sent, from", "child streams already under way at the lanes' start states"}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("subagents line %q lacks %q", line, w)
		}
	}
}
