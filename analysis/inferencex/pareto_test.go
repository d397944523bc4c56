package inferencex

import (
	"errors"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var paretoOut = flag.String("pareto-out", "", "also write the seed sweep's Pareto plot to this file (to look at it)")

// TestParetoPlot renders the seed sweep: a PNG of the documented size;
// the excluded runs are reported as not plotted, with their reasons.
func TestParetoPlot(t *testing.T) {
	t.Parallel()
	_, dirs := seedSweep(t)
	tab := sweepTable(t, dirs)
	path := filepath.Join(t.TempDir(), "pareto.png")
	if *paretoOut != "" {
		path = *paretoOut
	}
	skipped, err := WritePareto(tab, path, ParetoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 4 {
		t.Errorf("skipped %d runs, want the 4 excluded ones: %q", len(skipped), skipped)
	}
	for _, s := range skipped {
		if !strings.Contains(s, "not plotted") {
			t.Errorf("skip reason %q", s)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != paretoW || b.Dy() != paretoH {
		t.Errorf("PNG is %dx%d, want %dx%d", b.Dx(), b.Dy(), paretoW, paretoH)
	}
	// Each TP group's frontier: TP4's points, by interactivity, keep
	// only those not beaten on both axes.
	pts := []paretoPoint{{x: 1, y: 7}, {x: 2, y: 6}, {x: 3, y: 2}, {x: 2.5, y: 1}, {x: 1.5, y: 5}}
	fr := frontier(pts)
	if len(fr) != 3 || fr[0].x != 1 || fr[1].x != 2 || fr[2].x != 3 {
		t.Errorf("frontier = %v, want x 1, 2, 3 (2.5 and 1.5 are beaten on both axes)", fr)
	}
}

// TestParetoNeedsTP: without a TP no per-GPU throughput exists; the plot
// refuses rather than divide by a guessed GPU count.
func TestParetoNeedsTP(t *testing.T) {
	t.Parallel()
	run, err := Load(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	tab := NewTable([]Row{NewRow(run, Labels{Conc: 8})})
	skipped, err := WritePareto(tab, filepath.Join(t.TempDir(), "p.png"), ParetoOptions{})
	if !errors.Is(err, ErrNothingToPlot) || len(skipped) != 1 || !strings.Contains(skipped[0], "TP is unknown") {
		t.Errorf("err %v, skipped %q", err, skipped)
	}
}

// TestParetoLabelsUnique: two runs of one concurrency in one group get
// labels told apart by their folders, or by their position.
func TestParetoLabelsUnique(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pts  []paretoPoint
		want []string
	}{
		{[]paretoPoint{{conc: 4, dir: "r/a"}, {conc: 16, dir: "r/b"}}, []string{"c4", "c16"}},
		{[]paretoPoint{{conc: 16, dir: "r/a"}, {conc: 16, dir: "r/b"}, {conc: 4, dir: "r/c"}}, []string{"c16 a", "c16 b", "c4"}},
		{[]paretoPoint{{conc: 16, dir: "x/run"}, {conc: 16, dir: "y/run"}}, []string{"c16 run #1", "c16 run #2"}},
	} {
		got := paretoLabels(c.pts)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("labels %q, want %q", got, c.want)
		}
	}
}
