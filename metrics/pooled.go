package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/agentperf/agentperf/internal/atomicfile"

	"gonum.org/v1/gonum/stat/distuv"
)

// The layout of a repeated run (aiperf's for --num-profile-runs;
// docs/repeated-runs.md): every run's folder under DirProfileRuns, the
// pooled summary under DirPooled.
const (
	DirProfileRuns    = "profile_runs"
	DirPooled         = "aggregate"
	FilePooledSummary = "profile_export_aiperf_aggregate.json"
)

// ErrBadPooledSummary is wrapped by DecodePooledSummary's errors.
var ErrBadPooledSummary = errors.New("malformed pooled summary")

// Pooled is one figure over the runs of a repeated run: each run's value,
// their mean, standard deviation, coefficient of variation, and the
// Student-t confidence interval of the mean.
type Pooled struct {
	Unit      string    `json:"unit"`
	Values    []float64 `json:"values"`
	N         int       `json:"n"`
	Mean      float64   `json:"mean"`
	Std       float64   `json:"std"`
	Min       float64   `json:"min"`
	Max       float64   `json:"max"`
	CV        float64   `json:"cv"`
	SE        float64   `json:"se"`
	TCritical float64   `json:"t_critical"`
	CILow     float64   `json:"ci_low"`
	CIHigh    float64   `json:"ci_high"`
	// RelWidth is (CIHigh − CILow) / |Mean|.
	RelWidth float64 `json:"ci_relative_width"`
}

// Pool computes the pooled figures of values (one per run) at the
// confidence level: mean ± t(1 − (1−level)/2, n−1) · s/√n. With fewer than
// two values the interval is the value itself, with no width. Values
// that are NaN or infinite are left out (a run without the figure).
func Pool(values []float64, level float64, unit string) Pooled {
	var vs []float64
	for _, v := range values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			vs = append(vs, v)
		}
	}
	p := Pooled{Unit: unit, Values: slices.Clone(vs), N: len(vs)}
	if p.N == 0 {
		return p
	}
	var sum float64
	p.Min, p.Max = math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		sum += v
		p.Min, p.Max = math.Min(p.Min, v), math.Max(p.Max, v)
	}
	p.Mean = sum / float64(p.N)
	p.CILow, p.CIHigh = p.Mean, p.Mean
	if p.N < 2 {
		return p
	}
	var ss float64
	for _, v := range vs {
		ss += (v - p.Mean) * (v - p.Mean)
	}
	p.Std = math.Sqrt(ss / float64(p.N-1))
	p.SE = p.Std / math.Sqrt(float64(p.N))
	if p.Mean != 0 {
		p.CV = p.Std / math.Abs(p.Mean)
	}
	p.TCritical = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(p.N - 1)}.Quantile(1 - (1-level)/2)
	p.CILow, p.CIHigh = p.Mean-p.TCritical*p.SE, p.Mean+p.TCritical*p.SE
	if p.Mean != 0 {
		p.RelWidth = (p.CIHigh - p.CILow) / math.Abs(p.Mean)
	}
	return p
}

// HalfWidth is half the interval's width (0 for one run).
func (p Pooled) HalfWidth() float64 { return (p.CIHigh - p.CILow) / 2 }

// PooledSummary is the pooled summary of a repeated run
// (aggregate/profile_export_aiperf_aggregate.json).
type PooledSummary struct {
	SchemaVersion int      `json:"schema_version"`
	RunsRequested int      `json:"num_profile_runs"`
	RunsDone      int      `json:"runs_done"`
	Confidence    float64  `json:"confidence_level"`
	Runs          []string `json:"runs"`
	// StoppedEarly says why fewer runs than asked were done ("" when all
	// were).
	StoppedEarly string `json:"stopped_early,omitempty"`
	// Warmup says how each run was warmed and what was kept between runs.
	Warmup  string            `json:"warmup"`
	Metrics map[string]Pooled `json:"metrics"`
}

// EncodePooledSummary writes the pooled summary as its file holds it:
// indented by two spaces, a final newline. DecodePooledSummary reads it
// back.
func EncodePooledSummary(s PooledSummary) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, fmt.Errorf("encode %s: %w", FilePooledSummary, err)
	}
	return buf.Bytes(), nil
}

// DecodePooledSummary decodes a pooled summary as EncodePooledSummary
// writes it. A run folder outside DirProfileRuns (an absolute path, "..")
// is an error: a reader opens them.
func DecodePooledSummary(data []byte) (PooledSummary, error) {
	var s PooledSummary
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("%w: %w", ErrBadPooledSummary, err)
	}
	for _, r := range s.Runs {
		if filepath.IsAbs(r) || !filepath.IsLocal(r) {
			return s, fmt.Errorf("%w: runs: %q is not a folder inside the repeated run's folder", ErrBadPooledSummary, r)
		}
	}
	return s, nil
}

// ReadPooledSummary reads dir/aggregate/profile_export_aiperf_aggregate.json;
// an error names the file.
func ReadPooledSummary(dir string) (PooledSummary, error) {
	name := filepath.Join(dir, DirPooled, FilePooledSummary)
	b, err := os.ReadFile(name)
	if err != nil {
		return PooledSummary{}, err
	}
	s, err := DecodePooledSummary(b)
	if err != nil {
		return s, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// IsRepeated reports whether dir is the folder of a repeated run: it holds
// the pooled summary or run folders under profile_runs.
func IsRepeated(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, DirPooled, FilePooledSummary)); err == nil {
		return true
	}
	runs, _ := filepath.Glob(filepath.Join(dir, DirProfileRuns, "run_*"))
	return len(runs) > 0
}

// RunFolders are the run folders of dir: for a repeated run, the runs its
// pooled summary lists (else every profile_runs/run_* folder, sorted); for
// one run, dir itself.
func RunFolders(dir string) ([]string, error) {
	if s, err := ReadPooledSummary(dir); err == nil {
		out := make([]string, len(s.Runs))
		for i, r := range s.Runs {
			out[i] = filepath.Join(dir, r)
		}
		return out, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	runs, _ := filepath.Glob(filepath.Join(dir, DirProfileRuns, "run_*"))
	if len(runs) == 0 {
		return []string{dir}, nil
	}
	sort.Strings(runs)
	return runs, nil
}

// RepoolSummary pools again every metric of the pooled summary of the
// repeated run in dir ("tag.stat", a statistic of one aggregate stat) over
// the aggregates its runs hold now, at its confidence level and in its
// unit, and writes the summary back; what else it says is kept. It is
// what `agentperf report DIR` does after recomputing the runs. A missing
// summary is an error wrapping fs.ErrNotExist.
func RepoolSummary(dir string) (PooledSummary, error) {
	s, err := ReadPooledSummary(dir)
	if err != nil {
		return s, err
	}
	aggs := make([]*AggregateFile, len(s.Runs))
	for i, r := range s.Runs {
		if aggs[i], err = ReadAggregateFile(filepath.Join(dir, r)); err != nil {
			return s, err
		}
	}
	for name, p := range s.Metrics {
		tag, stat, ok := strings.Cut(name, ".")
		if !ok {
			continue
		}
		var vs []float64
		for _, a := range aggs {
			if v, ok := a.Value(tag, stat); ok {
				vs = append(vs, v)
			}
		}
		s.Metrics[name] = Pool(vs, s.Confidence, p.Unit)
	}
	b, err := EncodePooledSummary(s)
	if err != nil {
		return s, err
	}
	return s, atomicfile.WriteBytes(filepath.Join(dir, DirPooled, FilePooledSummary), b)
}
