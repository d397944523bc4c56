package run_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentperf/agentperf/dataset"
	"github.com/agentperf/agentperf/run"
	"github.com/agentperf/agentperf/ui"
)

// recordingView is a live view that keeps what is logged through it, and
// what is logged through it after it stopped.
type recordingView struct {
	mu      sync.Mutex
	stopped bool
	during  bytes.Buffer
	after   bytes.Buffer
}

func (v *recordingView) Log() io.Writer { return v }
func (v *recordingView) Kind() string   { return "recording" }
func (v *recordingView) Stop() error {
	v.mu.Lock()
	v.stopped = true
	v.mu.Unlock()
	return nil
}
func (v *recordingView) Write(b []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.stopped {
		return v.after.Write(b)
	}
	return v.during.Write(b)
}

// lockedBuffer is a bytes.Buffer safe for the run's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLogReturnsToTheCallerAfterTheView: while the live view runs the log
// goes through it; once it stopped, the run's last lines (the warnings of
// finishing) go to Spec.Log again, never to the stopped view.
func TestLogReturnsToTheCallerAfterTheView(t *testing.T) {
	t.Parallel()
	v := &recordingView{}
	var log lockedBuffer
	s := run.NewSpec()
	s.Corpus.Traces = dataset.Synthesize(dataset.SynthOptions{Seed: 1, Traces: 8, MinTurns: 6, MaxTurns: 12, TimeScale: 0.001})
	// A context window most requests overflow: finishing warns (the
	// overflow rate, without a scenario, is a warning).
	s.Replay.URL, s.Replay.Models = "sim://?zero-latency=true&max-model-len=2000", []string{"demo"}
	s.Replay.Concurrency, s.Replay.Seed = 4, 7
	// 2 s: a shorter run on a loaded machine (CI under -race) could
	// send too few requests for the overflow warning.
	s.Replay.BenchmarkDuration, s.Replay.TraceIdleGapCap = 2*time.Second, 10*time.Millisecond
	s.OutputDir, s.NoPlot, s.Log = t.TempDir(), true, &log
	s.View = func(ui.Source) ui.View { return v }
	out, err := run.Run(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Warnings)+len(out.LateWarnings) == 0 {
		t.Fatal("fixture: want a warning from finishing (the overflow rate)")
	}
	if v.during.Len() == 0 {
		t.Error("nothing was logged through the view while it ran")
	}
	if v.after.Len() > 0 {
		t.Errorf("logged to the view after it stopped: %q", v.after.String())
	}
	if !strings.Contains(log.String(), "warning: ") {
		t.Errorf("Spec.Log lacks the finishing warnings: %q", log.String())
	}
}
