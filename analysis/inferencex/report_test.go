package inferencex

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// repeatedFixture writes a repeated run into a new folder: the fixture
// copied as each of its runs, and a pooled summary listing runs (nil:
// none).
func repeatedFixture(t *testing.T, runs []string) string {
	t.Helper()
	dir := t.TempDir()
	for _, r := range []string{"run_0001", "run_0002"} {
		if err := os.CopyFS(filepath.Join(dir, metrics.DirProfileRuns, r), os.DirFS(fixtureDir)); err != nil {
			t.Fatal(err)
		}
	}
	b, err := metrics.EncodePooledSummary(metrics.PooledSummary{SchemaVersion: 1, RunsRequested: 2, RunsDone: len(runs), Confidence: 0.9, Runs: runs})
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, metrics.DirPooled), 0o755)
	if err := os.WriteFile(filepath.Join(dir, metrics.DirPooled, metrics.FilePooledSummary), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestRepeatedFolder: the folder of a repeated run (profile
// --num-profile-runs) is one pooled row of the sweep table (its dir the
// folder, the summary's confidence level), checked run by run, and its
// row after a recomputation is the pooled one without server figures;
// the result JSON, one run's, names the run folders to pass instead. A
// pooled summary that lists no run fails the checks and is a failed row.
func TestRepeatedFolder(t *testing.T) {
	t.Parallel()
	dir := repeatedFixture(t, []string{"profile_runs/run_0001", "profile_runs/run_0002"})
	run1, run2 := filepath.Join(dir, "profile_runs", "run_0001"), filepath.Join(dir, "profile_runs", "run_0002")
	var out bytes.Buffer
	if err := WriteSweep([]string{dir}, SweepOptions{TP: "8", Format: FormatJSON, Lookup: MapLookup(nil)}, &out); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, `"runs": 2`) || !strings.Contains(s, `"dir": "`+dir+`"`) || !strings.Contains(s, `"confidence_level": 0.9`) {
		t.Errorf("sweep table of the repeated run:\n%s", s)
	}

	out.Reset()
	failed, err := CheckFolders([]string{dir}, FolderChecks{Threshold: ptr(1.0), Lookup: MapLookup(nil)}, &out)
	if err != nil || failed || !strings.Contains(out.String(), "check "+run1+": passed") || !strings.Contains(out.String(), "check "+run2+": passed") {
		t.Errorf("checks: failed %v err %v\n%s", failed, err, out.String())
	}

	out.Reset()
	called := false
	if err := WriteFolderRow(dir, &out, func(io.Writer, *servermetrics.Derived) { called = true }); err != nil {
		t.Fatal(err)
	}
	if called || !strings.Contains(out.String(), "| TP | Conc | Runs |") {
		t.Errorf("row after a recomputation (server figures written: %v):\n%s", called, out.String())
	}

	err = WriteInferenceXDir(dir, PublishOptions{Schema: SchemaV3, Lookup: MapLookup(nil)}, io.Discard)
	var bad *InputError
	if !errors.As(err, &bad) || !errors.Is(err, ErrNotArtifactDir) || !strings.Contains(err.Error(), dir+" is a repeated run") ||
		!strings.Contains(err.Error(), run1+", "+run2) {
		t.Errorf("result JSON of a repeated run: %v", err)
	}

	none := repeatedFixture(t, nil)
	out.Reset()
	failed, err = CheckFolders([]string{none}, FolderChecks{Threshold: ptr(1.0), Lookup: MapLookup(nil)}, &out)
	if err != nil || !failed || !strings.Contains(out.String(), "FAIL "+none+": cannot be read: "+errNoRuns.Error()) {
		t.Errorf("checks of a repeated run with no run: failed %v err %v\n%s", failed, err, out.String())
	}
	out.Reset()
	if err := WriteSweep([]string{none}, SweepOptions{Format: FormatCSV, Lookup: MapLookup(nil)}, &out); err != nil || !strings.Contains(out.String(), "failed,a repeated run with no finished run") {
		t.Errorf("row of a repeated run with no run: %v\n%s", err, out.String())
	}
}

// TestReportOptions: the mode (ReadOnly), the first refusal in Complete's
// order, and Report's output: -o with nothing to write is refused before
// any file is made, a missing folder before -o is created, and the checks
// go to stderr when the table goes to stdout.
func TestReportOptions(t *testing.T) {
	t.Parallel()
	given := func(flags ...string) func(string) bool {
		return func(f string) bool {
			for _, g := range flags {
				if g == f {
					return true
				}
			}
			return false
		}
	}
	if o := (ReportOptions{Dirs: []string{"a"}}); o.ReadOnly() {
		t.Errorf("one folder and nothing asked is a recomputation")
	}
	for _, c := range []struct {
		o     ReportOptions
		fl    ReportFlags
		given []string
		want  string
	}{
		{ReportOptions{Dirs: []string{"a"}, Format: "yaml"}, ReportFlags{Schema: "v9", ParetoY: "total"}, []string{"schema"}, `--format "yaml"`},
		{ReportOptions{Dirs: []string{"a"}}, ReportFlags{Schema: "v9", ParetoY: "total"}, []string{"schema"}, "--schema applies to --format inferencex only"},
		{ReportOptions{Dirs: []string{"a"}, Format: FormatInferenceX}, ReportFlags{Schema: "v9", ParetoY: "up", NoPlot: true}, nil, `unknown result schema "v9"`},
		{ReportOptions{Dirs: []string{"a", "b"}}, ReportFlags{Schema: "v3", ParetoY: "total", Force: true}, []string{"model", "hw"}, "--hw applies to --format inferencex only"},
		{ReportOptions{Dirs: []string{"a"}, Check: true}, ReportFlags{Schema: "v3", ParetoY: "total", NoHTML: true}, nil, "--no-plot and --no-html apply"},
	} {
		if err := c.o.Complete(c.fl, given(c.given...)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %+v given %v: %v, want %q", c.o, c.fl, c.given, err, c.want)
		}
	}
	o := ReportOptions{Dirs: []string{fixtureDir}, Format: FormatCSV}
	if err := o.Complete(ReportFlags{Schema: "v2", ParetoY: "output"}, given("tp", "conc")); err != nil || o.Publish.Schema != SchemaV2 || o.Sweep.ParetoY != ParetoOutput {
		t.Errorf("complete: %v, schema %q, axis %q", err, o.Publish.Schema, o.Sweep.ParetoY)
	}

	tmp := t.TempDir()
	file := filepath.Join(tmp, "t.csv")
	var stdout, stderr bytes.Buffer
	_, err := Report(ReportOptions{Dirs: []string{fixtureDir}, Check: true, Output: &file}, &stdout, &stderr)
	var bad *InputError
	if !errors.As(err, &bad) || !strings.Contains(err.Error(), "report: -o writes the result JSON or the table") {
		t.Errorf("-o with the checks alone: %v", err)
	}
	_, err = Report(ReportOptions{Dirs: []string{filepath.Join(tmp, "nope")}, Format: FormatCSV, Output: &file}, &stdout, &stderr)
	if !errors.As(err, &bad) {
		t.Errorf("a missing folder: %v", err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("-o was created for a refused report: %v", err)
	}
	failed, err := Report(ReportOptions{Dirs: []string{fixtureDir}, Format: FormatCSV, Check: true,
		Checks: FolderChecks{Threshold: ptr(1.0), Lookup: MapLookup(nil)}, Sweep: SweepOptions{Lookup: MapLookup(nil)}}, &stdout, &stderr)
	if err != nil || failed || !strings.HasPrefix(stdout.String(), "config,tp,conc,") || !strings.Contains(stderr.String(), "check testdata/two-engine: passed") {
		t.Errorf("table to stdout, checks to stderr: failed %v err %v\nstdout %s\nstderr %s", failed, err, stdout.String(), stderr.String())
	}
}
