package capacity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentperf/agentperf/internal/atomicfile"
	"github.com/agentperf/agentperf/metrics"
)

// ManifestFile is the sweep's record of its finished points, in the
// sweep folder. A point is complete once it is listed there and its
// folder holds its aggregates; a resumed sweep skips it.
const ManifestFile = "sweep_points.json"

// ErrPointFailed is wrapped by a PointFunc error for a point that ran to
// its end and left its artifacts but failed or is not a valid run (exit
// 1 of `agentperf profile`): the sweep records it and goes on.
var ErrPointFailed = errors.New("point failed")

// PointFunc runs one point at concurrency c, writing its artifacts into
// dir.
type PointFunc func(ctx context.Context, c int, dir string) error

// SweepConfig configures Sweep.
type SweepConfig struct {
	// Dir is the sweep folder; point c goes into Dir/c<c>.
	Dir string
	// Points are the concurrencies, run in this order.
	Points []int
	// Run runs one point.
	Run PointFunc
	// Before, when set, runs before every point that is run (not before
	// a skipped one): the cache reset and drain.
	Before func(ctx context.Context, c int) error
	// After, when set, runs after every point that completed (the
	// per-point InferenceX JSON); an error is logged, not fatal.
	After func(c int, dir string) error
	// Logf gets one line per point.
	Logf func(format string, args ...any)
	// Settings are what every point is run with besides its concurrency
	// (the command's flags and environment, the corpus digest): recorded
	// with each point, and a point an earlier sweep finished is reused
	// only when its settings are equal (SettingsDiff).
	Settings map[string]string
}

// PointRecord is one finished point in the manifest.
type PointRecord struct {
	Concurrency int    `json:"concurrency"`
	Dir         string `json:"dir"` // relative to the sweep folder
	Status      string `json:"status"`
	Message     string `json:"message,omitempty"`
	// Settings are what the point was run with (SweepConfig.Settings).
	Settings map[string]string `json:"settings,omitempty"`
}

// Point statuses.
const (
	PointOK     = "ok"
	PointFailed = "failed"
)

type manifest struct {
	Points []PointRecord `json:"points"`
}

// PointDir is the folder name of point c.
func PointDir(c int) string { return "c" + strconv.Itoa(c) }

// ReadManifest returns the finished points recorded in dir (none when
// the file does not exist).
func ReadManifest(dir string) ([]PointRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	pts, err := DecodeManifest(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (delete it to run every point again)", filepath.Join(dir, ManifestFile), err)
	}
	return pts, nil
}

func writeManifest(dir string, pts []PointRecord) error {
	b, err := EncodeManifest(pts)
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(filepath.Join(dir, ManifestFile), b)
}

// EncodeManifest writes the sweep's finished points as sweep_points.json:
// {"points": [...]}, indented by two spaces, a final newline.
// DecodeManifest reads it back.
func EncodeManifest(pts []PointRecord) ([]byte, error) {
	b, err := json.MarshalIndent(manifest{Points: pts}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", ManifestFile, err)
	}
	return append(b, '\n'), nil
}

// DecodeManifest decodes sweep_points.json as EncodeManifest writes it. An
// error names the field whose value has the wrong type.
func DecodeManifest(data []byte) ([]PointRecord, error) {
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return m.Points, nil
}

// complete reports whether point rec's folder still holds its aggregates:
// a run's, or the pooled summary of a repeated point (written once its
// runs are done).
func complete(dir string, rec PointRecord) bool {
	if _, err := os.Stat(filepath.Join(dir, rec.Dir, metrics.FileAggregateJSON)); err == nil {
		return true
	}
	_, err := os.Stat(filepath.Join(dir, rec.Dir, metrics.DirPooled, metrics.FilePooledSummary))
	return err == nil
}

// Sweep runs the points in order, skipping those a previous sweep in the
// same folder completed with the same settings. A point's folder left by
// an interrupted run is kept, renamed to c<N>.incomplete[.K], and the
// point runs again; a complete point made with other settings is kept as
// c<N>.replaced[.K] (the log names every difference) and runs again. It
// returns the points of the sweep that are complete, in Points order,
// then the points of earlier sweeps in the folder that this one does not
// list but that were made with the same settings; the manifest keeps the
// others too. An error from Run that does not wrap ErrPointFailed stops
// the sweep (the points finished so far stay recorded).
func Sweep(ctx context.Context, cfg SweepConfig) ([]PointRecord, error) {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	seen, err := checkPoints(cfg.Points)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("sweep: create %s: %w", cfg.Dir, err)
	}
	done, err := ReadManifest(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	s := newSweeper(cfg, done, seen)
	for i, c := range cfg.Points {
		if err := s.point(ctx, i, c); err != nil {
			return s.result(), err
		}
	}
	return s.result(), nil
}

// checkPoints refuses an empty list and a point that is not a distinct
// positive integer; it returns the set of points.
func checkPoints(points []int) (map[int]bool, error) {
	if len(points) == 0 {
		return nil, errors.New("sweep: no points")
	}
	seen := map[int]bool{}
	for _, c := range points {
		if c < 1 || seen[c] {
			return nil, fmt.Errorf("sweep: concurrency %d: each point must be a distinct positive integer", c)
		}
		seen[c] = true
	}
	return seen, nil
}

// sweeper is the state of one Sweep: the points it knows complete.
type sweeper struct {
	cfg    SweepConfig
	byConc map[int]PointRecord // this sweep's complete points
	others []PointRecord       // points of earlier sweeps this one does not list
}

// newSweeper sorts the manifest's points (done) into this sweep's
// complete ones and the others, and logs each other made with other
// settings.
func newSweeper(cfg SweepConfig, done []PointRecord, seen map[int]bool) *sweeper {
	s := &sweeper{cfg: cfg, byConc: map[int]PointRecord{}}
	for _, r := range done {
		switch {
		case !seen[r.Concurrency]:
			s.others = append(s.others, r)
		case !complete(cfg.Dir, r):
		default:
			s.byConc[r.Concurrency] = r
		}
	}
	for _, r := range s.others {
		if d := SettingsDiff(r.Settings, cfg.Settings); len(d) > 0 {
			cfg.Logf("sweep: %s (concurrency %d, from an earlier sweep and not in this one) was made with other settings (%s): kept in %s, left out of the table", r.Dir, r.Concurrency, strings.Join(d, "; "), ManifestFile)
		}
	}
	return s
}

// records are the manifest: this sweep's complete points, then the
// earlier sweeps' others.
func (s *sweeper) records() []PointRecord {
	var out []PointRecord
	for _, c := range s.cfg.Points {
		if r, ok := s.byConc[c]; ok {
			out = append(out, r)
		}
	}
	return append(out, s.others...)
}

// result is what the table covers: the manifest but the points made with
// other settings.
func (s *sweeper) result() []PointRecord {
	var out []PointRecord
	for _, r := range s.records() {
		if len(SettingsDiff(r.Settings, s.cfg.Settings)) == 0 {
			out = append(out, r)
		}
	}
	return out
}

// point runs the i-th point, concurrency c, unless an earlier sweep
// completed it with the same settings. An error stops the sweep.
func (s *sweeper) point(ctx context.Context, i, c int) error {
	cfg, logf := s.cfg, s.cfg.Logf
	if r, ok := s.byConc[c]; ok {
		d := SettingsDiff(r.Settings, cfg.Settings)
		if len(d) == 0 {
			logf("sweep: point %d/%d (concurrency %d): complete from an earlier sweep (%s), skipped", i+1, len(cfg.Points), c, r.Status)
			return nil
		}
		if err := s.replace(i, r); err != nil {
			return err
		}
	}
	// A folder an interrupted run left is kept aside before the point
	// runs, and before the reset (Before) touches the server.
	dir := filepath.Join(cfg.Dir, PointDir(c))
	if _, err := os.Stat(dir); err == nil {
		aside, err := moveAside(dir)
		if err != nil {
			return fmt.Errorf("sweep: %s is left from an unfinished point and cannot be moved aside: %w", dir, err)
		}
		logf("sweep: %s is left from an unfinished point: kept as %s, the point runs again", dir, aside)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if cfg.Before != nil {
		if err := cfg.Before(ctx, c); err != nil {
			return fmt.Errorf("sweep: before concurrency %d: %w", c, err)
		}
	}
	logf("sweep: point %d/%d: concurrency %d → %s", i+1, len(cfg.Points), c, dir)
	err := cfg.Run(ctx, c, dir)
	if ctx.Err() != nil {
		// An interrupted point is not complete, whatever it wrote.
		return ctx.Err()
	}
	return s.record(c, dir, err)
}

// replace moves aside the folder of r, the i-th point, complete from an
// earlier sweep made with other settings, and drops it from the manifest:
// it runs again.
func (s *sweeper) replace(i int, r PointRecord) error {
	cfg, c := s.cfg, r.Concurrency
	d := SettingsDiff(r.Settings, cfg.Settings)
	aside, err := moveAsideAs(filepath.Join(cfg.Dir, r.Dir), ".replaced")
	if err != nil {
		return fmt.Errorf("sweep: %s was made with other settings and cannot be moved aside: %w", filepath.Join(cfg.Dir, r.Dir), err)
	}
	delete(s.byConc, c)
	if err := writeManifest(cfg.Dir, s.records()); err != nil {
		return fmt.Errorf("sweep: record point %d: %w", c, err)
	}
	cfg.Logf("sweep: point %d/%d (concurrency %d): the earlier sweep's point was made with other settings (%s): it runs again; the old folder is kept as %s",
		i+1, len(cfg.Points), c, strings.Join(d, "; "), aside)
	return nil
}

// record writes point c, run into dir with the error runErr, to the
// manifest (a failed point too), then runs After.
func (s *sweeper) record(c int, dir string, runErr error) error {
	rec := PointRecord{Concurrency: c, Dir: PointDir(c), Status: PointOK, Settings: s.cfg.Settings}
	switch {
	case runErr == nil:
	case errors.Is(runErr, ErrPointFailed):
		rec.Status, rec.Message = PointFailed, runErr.Error()
	default:
		return fmt.Errorf("sweep: concurrency %d: %w", c, runErr)
	}
	s.byConc[c] = rec
	if err := writeManifest(s.cfg.Dir, s.records()); err != nil {
		return fmt.Errorf("sweep: record point %d: %w", c, err)
	}
	if s.cfg.After != nil {
		if err := s.cfg.After(c, dir); err != nil {
			s.cfg.Logf("sweep: warning: concurrency %d: %v", c, err)
		}
	}
	return nil
}

// moveAside renames dir to dir.incomplete, or dir.incomplete.2, … when
// that exists, and returns the new name.
func moveAside(dir string) (string, error) { return moveAsideAs(dir, ".incomplete") }

// moveAsideAs renames path to path+suffix, or path+suffix+".2", … when
// that exists, and returns the new name.
func moveAsideAs(path, suffix string) (string, error) {
	for k := 1; k < 1000; k++ {
		to := path + suffix
		if k > 1 {
			to += "." + strconv.Itoa(k)
		}
		if _, err := os.Lstat(to); errors.Is(err, os.ErrNotExist) {
			return to, os.Rename(path, to)
		}
	}
	return "", fmt.Errorf("too many %s%s.* files", path, suffix)
}

// SettingsDiff says what differs between the settings a point or probe
// was made with (old) and the ones it would be made with now, one entry
// per setting ("--random-seed 7 → 8", "--benchmark-duration (default) →
// 30"); none when they are equal. Old settings that were never recorded
// (an older agentperf) differ from any recorded ones.
func SettingsDiff(old, now map[string]string) []string {
	if old == nil && len(now) > 0 {
		return []string{"made without a record of its settings (an older agentperf)"}
	}
	keys := make([]string, 0, len(old)+len(now))
	for k := range old {
		keys = append(keys, k)
	}
	for k := range now {
		if _, ok := old[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		a, inOld := old[k]
		b, inNow := now[k]
		switch {
		case !inOld:
			a = "(unset)"
		case !inNow:
			b = "(unset)"
		}
		if a != b || inOld != inNow {
			out = append(out, fmt.Sprintf("%s %s → %s", k, a, b))
		}
	}
	return out
}

// ParsePoints reads "4,8,16" into distinct positive concurrencies.
func ParsePoints(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("concurrency list %q: %q is not a positive integer (write e.g. 4,8,16,32)", s, f)
		}
		if seen[n] {
			return nil, fmt.Errorf("concurrency list %q: %d is given twice", s, n)
		}
		seen[n] = true
		out = append(out, n)
	}
	return out, nil
}
