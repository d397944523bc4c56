package inferencex

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/server/servermetrics"
)

// TestWriteInferenceXDirPrecedence: --env (Assign) wins over the
// environment and a named flag (Vars) over --env; with the fixture's
// settings reached that way, the result is the golden one byte for byte,
// and the warnings go to Warn.
func TestWriteInferenceXDirPrecedence(t *testing.T) {
	t.Parallel()
	env := map[string]string{}
	for k, v := range fixtureEnv {
		env[k] = v
	}
	env["TP"], env["CONC"] = "2", "2" // wrong in the environment
	opt := PublishOptions{
		Schema:     SchemaV3,
		Assign:     []string{"TP=8", "CONC=4"},                    // TP right, CONC still wrong
		Vars:       map[string]string{"CONC": "8", "EP_SIZE": ""}, // CONC right; an empty value sets nothing
		ServerLogs: []string{filepath.Join(fixtureDir, "server.log")},
		Lookup:     MapLookup(env),
	}
	var warned []string
	opt.Warn = func(f string, a ...any) { warned = append(warned, f) }
	var buf bytes.Buffer
	if err := WriteInferenceXDir(fixtureDir, opt, &buf); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "two-engine.v3.json", buf.Bytes())
	res, _ := fixtureResult(t, SchemaV3)
	if len(warned) != len(res.Warnings) {
		t.Errorf("%d warnings passed on, the result has %d", len(warned), len(res.Warnings))
	}
}

// TestFolderInputErrors: what the user gave wrong is an *InputError (exit
// 2 in the command) whose message names the flag or variable and the
// value.
func TestFolderInputErrors(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	none := MapLookup(nil)
	two := []string{fixtureDir, fixtureDir}
	var out bytes.Buffer
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"env not NAME=VALUE", WriteInferenceXDir(fixtureDir, PublishOptions{Schema: SchemaV3, Assign: []string{"TP"}, Lookup: none}, &out), `report: --env "TP": want NAME=VALUE`},
		{"bad variable", WriteInferenceXDir(fixtureDir, PublishOptions{Schema: SchemaV3, Vars: map[string]string{"TP": "x"}, Lookup: none}, &out), `TP="x" is not an integer`},
		{"missing server log", WriteInferenceXDir(fixtureDir, PublishOptions{Schema: SchemaV3, ServerLogs: []string{filepath.Join(empty, "no.log")}, Lookup: none}, &out), "report: --server-log: open "},
		{"not a run folder", WriteInferenceXDir(empty, PublishOptions{Schema: SchemaV3, Lookup: none}, &out), "report " + empty + ": not an artifact folder"},
		{"tp count", WriteSweep(two, SweepOptions{TP: "1,2,3"}, &out), `report: --tp "1,2,3" has 3 values for 2 folders: give one value, or one per folder`},
		{"conc not positive", WriteSweep(two, SweepOptions{Conc: "0"}, &out), `report: --conc "0": "0" is not a positive integer`},
		{"config count", WriteSweep(two, SweepOptions{Config: "a,b,c"}, &out), `report: --config "a,b,c" has 3 values for 2 folders`},
		{"nothing to plot", WriteSweep([]string{empty}, SweepOptions{Plot: filepath.Join(empty, "p.png"), ParetoY: ParetoTotal}, &out), "report: --plot: "},
		{"threshold variable", second(CheckFolders(two, FolderChecks{Lookup: MapLookup(map[string]string{"AIPERF_FAILED_REQUEST_THRESHOLD": "abc"})}, &out)), `report: AIPERF_FAILED_REQUEST_THRESHOLD="abc" is not a number`},
		{"threshold range", second(CheckFolders(two, FolderChecks{Threshold: ptr(1.5)}, &out)), "report: the failed-request threshold 1.5 must be in [0, 1]"},
	} {
		var bad *InputError
		if !errors.As(c.err, &bad) || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v (%T), want an *InputError containing %q", c.name, c.err, c.err, c.want)
		}
	}
}

func second(_ bool, err error) error { return err }
func ptr[T any](v T) *T              { return &v }

// TestWriteSweepLabels: a folder that cannot be read is a failed row, not
// an error; an unset TP comes from $TP (through Lookup) when the folder
// name has none; one --conc value labels every folder.
func TestWriteSweepLabels(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	var out bytes.Buffer
	err := WriteSweep([]string{fixtureDir, empty}, SweepOptions{Conc: "12", Config: "a", Format: FormatCSV, Lookup: MapLookup(map[string]string{"TP": "8"})}, &out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "a,8,12,") || !strings.HasPrefix(lines[2], "a,8,12,") ||
		!strings.Contains(lines[2], "not an artifact folder") {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestCheckFolders: the threshold given wins over
// $AIPERF_FAILED_REQUEST_THRESHOLD (the fixture fails 1 of 5 completed
// requests); the prefix given wins over
// $AIPERF_REQUIRED_SERVER_METRIC_PREFIX; a folder that cannot be read
// fails with the reason; the verdict line counts the checks.
func TestCheckFolders(t *testing.T) {
	t.Parallel()
	look := MapLookup(map[string]string{"AIPERF_FAILED_REQUEST_THRESHOLD": "0", "AIPERF_REQUIRED_SERVER_METRIC_PREFIX": "nosuchengine:"})
	run := func(opt FolderChecks) (bool, string) {
		t.Helper()
		var w bytes.Buffer
		failed, err := CheckFolders([]string{fixtureDir}, opt, &w)
		if err != nil {
			t.Fatal(err)
		}
		return failed, w.String()
	}
	failed, out := run(FolderChecks{Lookup: look})
	if !failed || !strings.Contains(out, "FAIL error_rate               1 of 5 completed requests failed (20.00 %; threshold 0.00 %)") ||
		!strings.Contains(out, "check testdata/two-engine: FAILED (") {
		t.Errorf("threshold 0 from the environment:\n%s", out)
	}
	failed, out = run(FolderChecks{Threshold: ptr(1.0), Prefix: ptr(""), Lookup: look})
	if failed || !strings.HasSuffix(out, "check testdata/two-engine: passed (10 of 10 checks passed)\n") {
		t.Errorf("threshold 1 and no prefix given, over the environment's:\n%s", out)
	}
	empty := t.TempDir()
	var w bytes.Buffer
	failed, err := CheckFolders([]string{empty, fixtureDir}, FolderChecks{Threshold: ptr(1.0), Lookup: MapLookup(nil)}, &w)
	if err != nil || !failed || !strings.HasPrefix(w.String(), "FAIL "+empty+": cannot be read: ") ||
		!strings.Contains(w.String(), "check testdata/two-engine: passed") {
		t.Errorf("an unreadable folder fails and the next is still checked: failed %v err %v\n%s", failed, err, w.String())
	}
}

// TestWriteFolderRow: the server figures (the run has server metrics)
// come first, then the folder's brief row; a folder that is not a run's
// is an error and writes nothing.
func TestWriteFolderRow(t *testing.T) {
	t.Parallel()
	var w bytes.Buffer
	called := 0
	err := WriteFolderRow(fixtureDir, &w, func(w io.Writer, d *servermetrics.Derived) {
		called++
		fmt.Fprintln(w, "SERVER FIGURES")
	})
	if err != nil {
		t.Fatal(err)
	}
	out := w.String()
	if called != 1 || !strings.HasPrefix(out, "SERVER FIGURES\n\nSweep table row (agentperf report DIR... for several runs):\n") ||
		strings.Count(out, "\n") < 5 {
		t.Errorf("output:\n%s", out)
	}
	w.Reset()
	if err := WriteFolderRow(t.TempDir(), &w, nil); !errors.Is(err, ErrNotArtifactDir) || w.Len() != 0 {
		t.Errorf("empty folder: err %v, wrote %q", err, w.String())
	}
}
