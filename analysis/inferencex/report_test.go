package inferencex

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
