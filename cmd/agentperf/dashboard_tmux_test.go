package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentperf/agentperf/internal/testshared"
)

// tmux drives a private tmux server (its own socket) for one test.
type tmux struct {
	t      *testing.T
	socket string
}

func newTmux(t *testing.T) *tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (apt-get install tmux): the dashboard's terminal test needs it")
	}
	x := &tmux{t: t, socket: fmt.Sprintf("agentperf-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	t.Cleanup(func() { exec.Command("tmux", "-L", x.socket, "kill-server").Run() })
	return x
}

func (x *tmux) run(args ...string) string {
	x.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", x.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// capture returns the visible screen (history too when all is set).
func (x *tmux) capture(all bool) string {
	args := []string{"capture-pane", "-p", "-t", "ap"}
	if all {
		args = append(args, "-S", "-")
	}
	return x.run(args...)
}

// waitFor polls the screen until ok accepts it, or fails after timeout.
func (x *tmux) waitFor(what string, timeout time.Duration, all bool, ok func(string) bool) string {
	x.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := x.capture(all)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("timed out waiting for %s; the screen:\n%s", what, s)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startProfile starts `agentperf profile` (the test binary as main) in a
// new tmux session of w×h cells with TERM=term, against a fast in-process
// simulator; extra are more flags. The session prints AGENTPERF-EXIT=code
// when the command ends.
func (x *tmux) startProfile(dir, term string, w, h int, extra string) {
	x.t.Helper()
	x.startProfileURL(dir, term, w, h, "sim://?prefill-tokens-per-sec=3000000&decode-base-ms=2", extra)
}

// startProfileURL is startProfile against the simulator URL url.
func (x *tmux) startProfileURL(dir, term string, w, h int, url, extra string) {
	x.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		x.t.Fatal(err)
	}
	cmd := fmt.Sprintf("cd %s && %s=1 AIPERF_DATASET_MMAP_CACHE_DIR=%s TERM=%s %s profile "+
		"--url '%s' --public-dataset synthetic:traces=12 --model demo "+
		"--streaming --use-server-token-count --no-plot --trace-idle-gap-cap-seconds 0.5 --output-artifact-dir art %s; "+
		"echo AGENTPERF-EXIT=$?; sleep 60", dir, envAsMain, filepath.Join(dir, "cache"), term, exe, url, extra)
	x.run("new-session", "-d", "-s", "ap", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), cmd)
}

// TestDashboardInTmux runs `agentperf profile` with the default live view
// in a real terminal at 80×24 and 200×50 and checks what a user sees: the
// full-screen dashboard while it runs (every part present, nothing wider
// than the window), and after it, the log lines, the final state and the
// summary on the normal screen.
func TestDashboardInTmux(t *testing.T) {
	testshared.SkipIfShort(t, "two whole dashboard runs in tmux")
	for _, size := range [][2]int{{80, 24}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			x := newTmux(t)
			dir := t.TempDir()
			x.startProfile(dir, "xterm-256color", size[0], size[1], "--concurrency 6 --benchmark-duration 6 --benchmark-grace-period 2")

			screen := x.waitFor("the dashboard in profiling", 60*time.Second, false, func(s string) bool {
				return strings.Contains(s, "left  (elapsed") && strings.Contains(s, "GPU prefix-cache hit (%, server)") && !strings.Contains(s, "ok 0 ")
			})
			t.Logf("dashboard at %dx%d:\n%s", size[0], size[1], screen)
			lines := strings.Split(strings.TrimRight(screen, "\n"), "\n")
			if len(lines) != size[1] {
				t.Errorf("the dashboard has %d lines, want the window's %d", len(lines), size[1])
			}
			for i, l := range lines {
				if n := utf8.RuneCountInString(l); n > size[0] {
					t.Errorf("line %d is %d cells wide, more than the window's %d: %q", i+1, n, size[0], l)
				}
			}
			for _, want := range []string{"agentperf  profiling", "warmup", "6/6", "took", "requests", "in flight", "req/s", "TTFT p50",
				"ITL p50", "server", "KV", "hit", "TTFT p50 (ms, 10 s window)", "output tok/s", "GPU KV usage (%)", "GPU prefix-cache hit (%, server)",
				"─ log ─", "profiling: started", "Ctrl-C: 1st", "╭", "█"} {
				if !strings.Contains(screen, want) {
					t.Errorf("the dashboard lacks %q", want)
				}
			}

			final := x.waitFor("the end of the run", 90*time.Second, true, func(s string) bool { return strings.Contains(s, "AGENTPERF-EXIT=") })
			if !strings.Contains(final, "AGENTPERF-EXIT=0") {
				t.Fatalf("agentperf failed:\n%s", final)
			}
			for _, want := range []string{"profiling: started", "warmup    [", "profiling [", "requests  (profiling)", "requests: sent", "artifacts: art"} {
				if !strings.Contains(final, want) {
					t.Errorf("after the run the screen lacks %q:\n%s", want, final)
				}
			}
			if strings.Contains(final, "╭") {
				t.Errorf("the dashboard's frame was left on the normal screen:\n%s", final)
			}
		})
	}
}

// TestDashboardCtrlCInTmux: Ctrl-C typed in the terminal while the
// dashboard runs stops the run as without a dashboard: in-flight requests
// finish, every artifact is written, the exit code is 130, and the
// terminal is back on the normal screen.
func TestDashboardCtrlCInTmux(t *testing.T) {
	x := newTmux(t)
	dir := t.TempDir()
	x.startProfile(dir, "xterm-256color", 100, 30, "--concurrency 4 --benchmark-duration 600 --benchmark-grace-period 2")
	x.waitFor("the dashboard in profiling", 60*time.Second, false, func(s string) bool {
		return strings.Contains(s, "left  (elapsed") && !strings.Contains(s, "ok 0 ")
	})
	x.run("send-keys", "-t", "ap", "C-c")
	final := x.waitFor("the end of the run", 60*time.Second, true, func(s string) bool { return strings.Contains(s, "AGENTPERF-EXIT=") })
	if !strings.Contains(final, "AGENTPERF-EXIT=130") {
		t.Errorf("exit code after Ctrl-C is not 130:\n%s", final)
	}
	if !strings.Contains(final, "requests: sent") || strings.Contains(final, "╭") {
		t.Errorf("after Ctrl-C the normal screen lacks the summary or keeps the dashboard:\n%s", final)
	}
	for _, f := range []string{"profile_export.jsonl", "profile_export_aiperf.json", "server_metrics_export.json"} {
		if _, err := os.Stat(filepath.Join(dir, "art", f)); err != nil {
			t.Errorf("artifact missing after Ctrl-C: %v", err)
		}
	}
}

// TestDashboardDegradesInTmux: on a dumb terminal the default view is the
// simple one (log lines, no cursor movement); in a window smaller than
// 80×24 it is the simple block, redrawn in place.
func TestDashboardDegradesInTmux(t *testing.T) {
	testshared.SkipIfShort(t, "dashboard runs in tmux at four terminal sizes")
	for _, c := range []struct {
		name, term string
		w, h       int
		want       []string
	}{
		{"dumb terminal", "dumb", 200, 60, []string{"[profiling ", " ok, ", "requests: sent"}},
		{"small window", "xterm-256color", 70, 20, []string{"warmup    [", "profiling [", "requests  (profiling)", "requests: sent"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := newTmux(t)
			dir := t.TempDir()
			x.startProfile(dir, c.term, c.w, c.h, "--concurrency 4 --benchmark-duration 3 --benchmark-grace-period 1 --stats-interval 1")
			final := x.waitFor("the end of the run", 90*time.Second, true, func(s string) bool { return strings.Contains(s, "AGENTPERF-EXIT=") })
			for _, w := range c.want {
				if !strings.Contains(final, w) {
					t.Errorf("the screen lacks %q:\n%s", w, final)
				}
			}
			if strings.Contains(final, "╭") || strings.Contains(final, "Ctrl-C: 1st") {
				t.Errorf("the full-screen dashboard ran:\n%s", final)
			}
		})
	}
}

// TestDashboardFramesInTmux reads the dashboard's frames through a run
// whose warmup primers (full histories, nothing cached) are far slower
// than its profiling requests, then through two Ctrl-C:
//   - no latency labelled "profiling" includes a warmup record: every
//     profiling TTFT p99 shown is at most the largest profiling TTFT of
//     the records (and below the fastest primer);
//   - after each Ctrl-C every row is on screen once (no stale rows);
//   - the footer says what the next Ctrl-C does, and it does that: the
//     first stops gracefully, the second cancels the requests in flight
//     and every artifact is still written.
func TestDashboardFramesInTmux(t *testing.T) {
	testshared.SkipIfShort(t, "a dashboard run in tmux, frame by frame")
	x := newTmux(t)
	dir := t.TempDir()
	x.startProfileURL(dir, "xterm-256color", 160, 45, "sim://?prefill-tokens-per-sec=30000&decode-base-ms=25",
		"--concurrency 4 --benchmark-duration 600 --benchmark-grace-period 60")
	p99 := regexp.MustCompile(`TTFT p50 \S+ \S+\s+p99 (\S+) (ms|s)\b.*\(profiling, last`)
	var shown []float64 // profiling TTFT p99s seen, in ms
	read := func(s string) {
		for _, l := range strings.Split(s, "\n") {
			if m := p99.FindStringSubmatch(l); m != nil {
				v, err := strconv.ParseFloat(m[1], 64)
				if err != nil {
					t.Fatalf("unparsable TTFT in %q", l)
				}
				if m[2] == "s" {
					v *= 1000
				}
				shown = append(shown, v)
			}
		}
	}
	// Frames from the first profiling second on, until some profiling
	// requests are done.
	x.waitFor("profiling requests done", 120*time.Second, false, func(s string) bool {
		read(s)
		return regexp.MustCompile(`requests  ok ([1-9]\d*) .*\(profiling\)`).MatchString(s) && len(shown) >= 5
	})
	uniqueRows := func(s, when string) {
		t.Helper()
		for _, row := range []string{"requests  ok", "rate      ", "latency   ", "server    ", "cache     ", "GPU KV usage (%)", "TTFT p50 (ms", "─ log ─", "Ctrl-C"} {
			if n := strings.Count(s, row); n != 1 {
				t.Errorf("%s: %q is on screen %d times, want once:\n%s", when, row, n, s)
			}
		}
	}
	x.run("send-keys", "-t", "ap", "C-c")
	for range 5 {
		s := x.waitFor("the footer after the first Ctrl-C", 30*time.Second, false, func(s string) bool {
			return strings.Contains(s, "Stopping: in-flight requests finish. Ctrl-C again: cancel them")
		})
		read(s)
		uniqueRows(s, "after the first Ctrl-C")
		time.Sleep(300 * time.Millisecond)
	}
	x.run("send-keys", "-t", "ap", "C-c")
	final := x.waitFor("the end of the run", 60*time.Second, true, func(s string) bool { return strings.Contains(s, "AGENTPERF-EXIT=") })
	if !strings.Contains(final, "AGENTPERF-EXIT=130") || !strings.Contains(final, "interrupted twice: the requests in flight are cancelled now") {
		t.Errorf("the second Ctrl-C did not cancel the requests in flight (exit 130):\n%s", final)
	}
	for _, f := range []string{"profile_export.jsonl", "profile_export_aiperf.json"} {
		if _, err := os.Stat(filepath.Join(dir, "art", f)); err != nil {
			t.Errorf("after the second Ctrl-C an artifact is missing: %v", err)
		}
	}

	// The records: the largest profiling TTFT and the fastest primer.
	data, err := os.ReadFile(filepath.Join(dir, "art", "profile_export.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	maxProf, minWarm := 0.0, -1.0
	ttft := regexp.MustCompile(`"time_to_first_token":\{"value":([0-9.e+-]+)`)
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		m := ttft.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		if strings.Contains(l, `"benchmark_phase":"warmup"`) {
			if minWarm < 0 || v < minWarm {
				minWarm = v
			}
		} else {
			maxProf = max(maxProf, v)
		}
	}
	if minWarm <= maxProf {
		t.Fatalf("the fixture is not what the test needs: the fastest primer (%.1f ms) is not slower than every profiling request (%.1f ms)", minWarm, maxProf)
	}
	if len(shown) == 0 {
		t.Fatal("no profiling-labelled TTFT p99 was read from the frames")
	}
	for _, v := range shown {
		// The live percentiles are HDR (3 significant figures) and shown
		// rounded to 0.1 ms or 1 ms.
		if v > maxProf*1.002+1 {
			t.Errorf("a frame shows a profiling TTFT p99 of %.1f ms, above every profiling record (max %.1f ms; fastest primer %.1f ms)", v, maxProf, minWarm)
		}
	}
	t.Logf("%d profiling TTFT p99s read (max profiling record %.1f ms, fastest primer %.1f ms)", len(shown), maxProf, minWarm)
}
