package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentperf/agentperf/metrics"
)

// mountTmpfs mounts a tmpfs of size (mount -o size=…) on a new temporary
// directory and returns it; the test is skipped without the right to
// mount.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (%v: %s); run as root in a container that allows mounts", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	return mnt
}

// TestProfileFullDiskStopsAtTheFirstFailedWrite is the report's repro: a
// 1 MB tmpfs as the output directory and a run that writes far more.
// Before, the run went its full duration, then reported ENOSPC; the record
// file ended mid-record, there was no aggregate, and a follow-on error
// appeared ("open profile_export_aiperf.json: no such file"). Now a
// warning at the start says the directory is too small, the first failed
// write stops issuing requests (the run is aborted as
// artifact_write_failed), the record file is cut back to its last complete
// record, the aggregates are written into the room the run kept, the
// failed file is named with the reason, and nothing else fails for a
// missing file.
func TestProfileFullDiskStopsAtTheFirstFailedWrite(t *testing.T) {
	bin := agentperfBinary(t)
	mnt := mountTmpfs(t, "1m")
	out := filepath.Join(mnt, "artifacts")
	code, stdout, stderr := runBinary(t, bin, t.TempDir(), "profile", "--url", "sim://?zero-latency=true",
		"--public-dataset", "synthetic:traces=8", "--model", "demo", "--concurrency", "4", "--benchmark-duration", "120",
		"--streaming", "--trace-idle-gap-cap-seconds", "0.01", "--ui-type", "none", "--output-artifact-dir", out)
	if code != exitRunFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitRunFailed, stdout, stderr)
	}
	for _, w := range []string{
		"free, but this run will likely write about", // the start-up check
		"run aborted (artifact_write_failed)",
		"profile_export.jsonl.partial: no space left on device",
		"no new requests are sent",
	} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, stderr)
		}
	}
	if strings.Contains(stderr, "no such file") {
		t.Errorf("a follow-on error for a missing file:\n%s", stderr)
	}
	agg := readAggregate(t, out)
	md := agg["metadata"].(map[string]any)
	ap := md["agentperf"].(map[string]any)
	acct := md["request_accounting"].(map[string]any)
	if agg["was_cancelled"] != true || ap["aborted"] != "artifact_write_failed" || acct["adds_up"] != true {
		t.Fatalf("was_cancelled %v, aborted %v, adds_up %v", agg["was_cancelled"], ap["aborted"], acct["adds_up"])
	}
	if !strings.HasPrefix(ap["profiling_end"].(string), "aborted: artifact_write_failed") {
		t.Errorf("profiling_end = %v: the run did not stop at the failed write", ap["profiling_end"])
	}
	ws := strings.Join(toStrings(md["warnings"]), "\n")
	for _, w := range []string{"will likely write about", "profile_export.jsonl is incomplete"} {
		if !strings.Contains(ws, w) {
			t.Errorf("metadata.warnings lack %q: %v", w, md["warnings"])
		}
	}
	// The record file holds complete records only, fewer than were sent.
	b, err := os.ReadFile(filepath.Join(out, "profile_export.jsonl.partial"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Fatalf("the record file does not end with a complete record (%d bytes)", len(b))
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("line %d of the record file is not a complete record", n)
		}
	}
	if n == 0 || float64(n) >= num(acct, "sent") {
		t.Errorf("%d complete records on disk for %v sent", n, num(acct, "sent"))
	}
	ents, _ := os.ReadDir(out)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") || e.Name() == ".agentperf-reserve" {
			t.Errorf("left behind: %s", e.Name())
		}
	}

	// `report` on this folder, the disk still full: the complete aggregate
	// (it counts every record, also those that did not reach the file)
	// must survive a recomputation from the partial file byte for byte.
	aggPath := filepath.Join(out, "profile_export_aiperf.json")
	before, err := os.ReadFile(aggPath)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runBinary(t, bin, t.TempDir(), "report", out)
	if code != exitRunFailed {
		t.Errorf("report: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitRunFailed, stdout, stderr)
	}
	if after, _ := os.ReadFile(aggPath); !bytes.Equal(before, after) {
		t.Errorf("report changed the complete aggregate on the full disk\nstderr:\n%s", stderr)
	}
	if !strings.Contains(stderr, "was kept") && !strings.Contains(stderr, "no space left") {
		t.Errorf("report does not say it kept the aggregate:\n%s", stderr)
	}
}

// TestProfileTinyDiskWritesTheAggregate: on a 100 KiB disk the reserve
// used to be a quarter of the free space (about 24 KiB), smaller than the
// aggregate (about 26 KB), so no aggregate was written at all, and that
// error line lacked the agentperf: prefix. The reserve is now sized from
// the run (metrics.ReserveFor): whatever records the disk held, the
// aggregate JSON and CSV are written, and every error line is prefixed.
func TestProfileTinyDiskWritesTheAggregate(t *testing.T) {
	bin := agentperfBinary(t)
	mnt := mountTmpfs(t, "100k")
	out := filepath.Join(mnt, "artifacts")
	code, stdout, stderr := runBinary(t, bin, t.TempDir(), "profile", "--url", "sim://?zero-latency=true",
		"--public-dataset", "synthetic:traces=8", "--model", "demo", "--concurrency", "4", "--benchmark-duration", "120",
		"--streaming", "--trace-idle-gap-cap-seconds", "0.01", "--ui-type", "none", "--output-artifact-dir", out)
	if code != exitRunFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitRunFailed, stdout, stderr)
	}
	for _, f := range []string{"profile_export_aiperf.json", "profile_export_aiperf.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("not written on a 100 KiB disk: %v\nstderr:\n%s", err, stderr)
		}
	}
	agg := readAggregate(t, out)
	md := agg["metadata"].(map[string]any)
	if ap := md["agentperf"].(map[string]any); ap["aborted"] != "artifact_write_failed" {
		t.Errorf("aborted = %v, want artifact_write_failed", ap["aborted"])
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		// Log lines start with a time stamp; every other line that reports
		// an error carries the prefix (the failed CSV's line used not to:
		// it was the second line of a joined error).
		if len(line) > 12 && line[2] == ':' && line[5] == ':' && line[8] == '.' {
			continue
		}
		if (strings.Contains(line, "no space") || strings.Contains(line, "fail")) && !strings.HasPrefix(line, "agentperf: ") {
			t.Errorf("an error line without the agentperf: prefix: %q", line)
		}
	}
}

// TestProfileReserveIsBounded (issue 34, case 1): the reserve file used
// to take all the free space whenever its estimate exceeded it (with
// --slice-duration 0.001 other writers on the disk got 0 bytes), and a
// reserve left by a killed run stayed in the folder for good. Now the
// reserve takes at most half the free space, and a run removes the one an
// earlier run left (and says so); none is left at the end.
func TestProfileReserveIsBounded(t *testing.T) {
	bin := agentperfBinary(t)
	mnt := mountTmpfs(t, "8m")
	out := filepath.Join(mnt, "artifacts")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	// What a SIGKILLed run leaves: its reserve (and nothing else that
	// counts as another run's artifacts).
	if err := os.WriteFile(filepath.Join(out, metrics.FileReserve), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProc(t, bin, cleanEnv(t.TempDir()), "profile", "--url", "sim://", "--public-dataset", "synthetic:traces=8",
		"--model", "demo", "--tokenizer", "builtin", "--concurrency", "1", "--benchmark-duration", "20", "--slice-duration", "0.001",
		"--streaming", "--output-artifact-dir", out, "--ui-type", "none", "--no-plot")
	if !waitForLog(filepath.Join(out, "logs", "aiperf.log"), "warmup: ", p.done, 60*time.Second) {
		t.Fatalf("the warmup never started (exited: %v)\nstderr:\n%s", p.err, p.stderr.String())
	}
	free, err := metrics.FreeBytes(mnt)
	if err != nil {
		t.Fatal(err)
	}
	if free < 2<<20 {
		t.Errorf("with the run's reserve in place the 8 MiB disk has %d bytes free for other writers; the reserve may take at most half", free)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t)
	if _, err := os.Stat(filepath.Join(out, metrics.FileReserve)); err == nil {
		t.Errorf("%s is left behind", metrics.FileReserve)
	}
	log, _ := os.ReadFile(filepath.Join(out, "logs", "aiperf.log"))
	for _, want := range []string{"left by an earlier run", "the reserve kept for them is cut to"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the log does not say %q:\n%s", want, log)
		}
	}
}
