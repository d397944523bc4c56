package capacity

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/agentperf/agentperf/analysis/inferencex"
	"github.com/agentperf/agentperf/metrics"
)

// SweepRun configures RunSweep: a Sweep, each complete point's InferenceX
// result JSON and the sweep's report.
type SweepRun struct {
	SweepConfig
	// Labels place the points in the table and the Pareto plot; Labels.TP
	// is also InferenceX's TP when the environment does not set it
	// (ResolveTP).
	Labels SweepLabels
	// Repeated is set when every point is a repeated run: its InferenceX
	// JSON is in each run's folder.
	Repeated bool
	// Simulated is set when the server is the in-process simulator, whose
	// results no InferenceX processor reads: the warnings about
	// InferenceX's variables are one note.
	Simulated bool
	// LookupEnv reads InferenceX's variables; nil means os.LookupEnv.
	LookupEnv func(key string) (string, bool)
}

// SweepOutcome is what RunSweep did.
type SweepOutcome struct {
	// Points are the points Sweep returned: this sweep's complete ones,
	// then those of earlier sweeps in the folder made with the same
	// settings.
	Points []PointRecord
	// Mine is how many of Points this sweep lists.
	Mine int
	// Reported is set when the table, the Pareto plot and sweep.html were
	// written; Table is then the markdown table (nil when it could not be
	// read back).
	Reported bool
	Table    []byte
}

// AllOK reports whether every point of the outcome ran to a valid result.
func (o *SweepOutcome) AllOK() bool {
	for _, pt := range o.Points {
		if pt.Status != PointOK {
			return false
		}
	}
	return true
}

// ResolveTP is the tensor-parallel size of a sweep: tp when given
// (non-zero), else $TP (read through getenv) when it is a positive
// integer (inferencex.EnvTP), else 1 against the simulator (it models one
// GPU), else 0 (unknown: no Pareto point).
func ResolveTP(tp int, simulated bool, getenv func(string) string) int {
	if tp != 0 {
		return tp
	}
	if v := inferencex.EnvTP(func(n string) (string, bool) { s := getenv(n); return s, s != "" }); v > 0 {
		return v
	}
	if simulated {
		return 1
	}
	return 0
}

// RunSweep runs Sweep with an After that writes each complete point's
// InferenceX result JSON (then calls cfg.After, when set), then writes
// the table, the Pareto plot and sweep.html over the points complete so
// far, also after an interruption or an error. Warnings go to Logf.
func RunSweep(ctx context.Context, cfg SweepRun) (*SweepOutcome, error) {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	ix := &pointInferenceX{run: &cfg, seen: map[string]bool{}}
	sc := cfg.SweepConfig
	sc.After = func(c int, dir string) error {
		err := ix.write(c, dir)
		if cfg.After != nil {
			err = errors.Join(err, cfg.After(c, dir))
		}
		return err
	}
	pts, err := Sweep(ctx, sc)
	out := &SweepOutcome{Points: pts}
	for _, pt := range pts {
		if slices.Contains(cfg.Points, pt.Concurrency) {
			out.Mine++
		}
	}
	if len(pts) == 0 {
		return out, err
	}
	warnings, werr := WriteSweepReport(cfg.Dir, pts, cfg.Labels)
	for _, w := range warnings {
		cfg.Logf("warning: %s", w)
	}
	if werr != nil {
		if err == nil {
			err = werr
		}
		return out, err
	}
	out.Reported = true
	if b, rerr := os.ReadFile(filepath.Join(cfg.Dir, SweepTableMD)); rerr == nil {
		out.Table = b
	}
	return out, err
}

// pointInferenceX writes the InferenceX result JSON of each complete point
// and says each warning about InferenceX's variables once.
type pointInferenceX struct {
	run  *SweepRun
	seen map[string]bool // the warnings said so far
}

// write writes point c's InferenceX JSON into dir. InferenceX's CONC and
// TP are the point's, unless the environment sets them.
func (x *pointInferenceX) write(c int, dir string) error {
	look := func(n string) (string, bool) {
		if v, ok := x.run.LookupEnv(n); ok && v != "" {
			return v, true
		}
		switch {
		case n == "CONC":
			return strconv.Itoa(c), true
		case n == "TP" && x.run.Labels.TP > 0:
			return strconv.Itoa(x.run.Labels.TP), true
		}
		return "", false
	}
	warnings, err := WritePointInferenceX(dir, look)
	x.say(dir, warnings)
	return err
}

// say logs the warnings not said before. InferenceX's variables are the
// same at every point: each warning about them is said once, at the first
// point that has it. Against the simulator no InferenceX processor will
// read the file: one line says what is left out.
func (x *pointInferenceX) say(dir string, warnings []string) {
	ixName := filepath.Join(dir, PointInferenceX)
	if x.run.Repeated {
		ixName = filepath.Join(dir, metrics.DirProfileRuns, "run_*", PointInferenceX)
	}
	var fresh []string
	for _, w := range warnings {
		if !x.seen[w] {
			x.seen[w] = true
			fresh = append(fresh, w)
		}
	}
	switch {
	case len(fresh) == 0:
	case x.run.Simulated:
		x.run.Logf("note: %s: written with %d warnings about InferenceX's environment variables left out (a simulator run, which no InferenceX processor reads: `agentperf report --format inferencex %s` lists them)", ixName, len(fresh), filepath.Dir(ixName))
	default:
		for _, w := range fresh {
			x.run.Logf("warning: %s (every point's %s): %s", ixName, PointInferenceX, w)
		}
	}
}
