package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
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
	exe, err := os.Executable()
	if err != nil {
		x.t.Fatal(err)
	}
	cmd := fmt.Sprintf("cd %s && %s=1 AIPERF_DATASET_MMAP_CACHE_DIR=%s TERM=%s %s profile "+
		"--url 'sim://?prefill-tokens-per-sec=3000000&decode-base-ms=2' --public-dataset synthetic:traces=12 --model demo "+
		"--streaming --use-server-token-count --no-plot --trace-idle-gap-cap-seconds 0.5 --output-artifact-dir art %s; "+
		"echo AGENTPERF-EXIT=$?; sleep 60", dir, envAsMain, filepath.Join(dir, "cache"), term, exe, extra)
	x.run("new-session", "-d", "-s", "ap", "-x", fmt.Sprint(w), "-y", fmt.Sprint(h), cmd)
}

// TestDashboardInTmux runs `agentperf profile` with the default live view
// in a real terminal at 80×24 and 200×50 and checks what a user sees: the
// full-screen dashboard while it runs (every part present, nothing wider
// than the window), and after it, the log lines, the final state and the
// summary on the normal screen.
func TestDashboardInTmux(t *testing.T) {
	for _, size := range [][2]int{{80, 24}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", size[0], size[1]), func(t *testing.T) {
			x := newTmux(t)
			dir := t.TempDir()
			x.startProfile(dir, "xterm-256color", size[0], size[1], "--concurrency 6 --benchmark-duration 6 --benchmark-grace-period 2")

			screen := x.waitFor("the dashboard in profiling", 60*time.Second, false, func(s string) bool {
				return strings.Contains(s, "left  (elapsed") && strings.Contains(s, "prefix-cache hit rate (%)") && !strings.Contains(s, "ok 0 ")
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
				"ITL p50", "server", "KV", "hit", "TTFT p50 (ms)", "output tok/s", "GPU KV usage (%)", "prefix-cache hit rate (%)",
				"─ log ─", "profiling: started", "Ctrl-C stops", "╭", "█"} {
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
			if strings.Contains(final, "╭") || strings.Contains(final, "Ctrl-C stops") {
				t.Errorf("the full-screen dashboard ran:\n%s", final)
			}
		})
	}
}
