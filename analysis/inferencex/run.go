package inferencex

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/scenario"
	"github.com/agentperf/agentperf/server/gputelemetry"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// ErrNotArtifactDir is wrapped when a folder holds no profile_export.jsonl
// (neither directly nor in an aiperf_artifacts or trace_replay child).
var ErrNotArtifactDir = errors.New("not an artifact folder")

// ErrBadArtifact is wrapped when an aggregate or server-metrics file of
// the folder cannot be decoded.
var ErrBadArtifact = errors.New("malformed artifact")

// Run is one finished artifact folder, read once: the records as
// InferenceX's processor keeps them, the aggregates agentperf computes
// (metrics.Summarize), the aggregate JSON's run context and the server
// metrics with their derived figures.
type Run struct {
	// Dir is the artifact folder (the one holding profile_export.jsonl).
	Dir string
	// Summary is the folder's metrics.Summary (requests, RPS, output
	// tok/s, accounting).
	Summary *metrics.Summary
	// Server is server_metrics_export.json, nil when absent.
	Server *servermetrics.Export
	// Derived are the server figures of the seed table, computed from
	// Server (zero when Server is nil).
	Derived servermetrics.Derived
	// GPU is gpu_telemetry_export.json, nil when the run collected no GPU
	// telemetry.
	GPU *gputelemetry.Result
	// Warnings are problems found while reading that do not stop the
	// report.
	Warnings []string

	recs *records
	agg  *aggregateJSON
}

// aggregateJSON is the folder's profile_export_aiperf.json
// (metrics.AggregateFile); present is false when the folder has none.
type aggregateJSON struct {
	metrics.AggregateFile
	present bool
}

// avg returns the avg of the top-level stat object tag, when it has one.
func (a *aggregateJSON) avg(tag string) (float64, bool) {
	st, _ := a.Stat(tag)
	return st.Avg.Float()
}

// theoretical is InferenceX's reading of theoretical_prefix_cache_hit:
// sum/count, else avg/100 when the unit is %, else avg.
func (a *aggregateJSON) theoretical() (float64, bool) {
	st, _ := a.Stat("theoretical_prefix_cache_hit")
	sum, hasSum := st.Sum.Float()
	count, hasCount := st.Count.Float()
	if hasSum && hasCount && count > 0 {
		return sum / count, true
	}
	avg, ok := st.Avg.Float()
	if !ok {
		return 0, false
	}
	if st.Unit == "%" {
		return avg / 100, true
	}
	return avg, true
}

// agentperf returns the string metadata.agentperf.<k> ("" when absent).
func (a *aggregateJSON) agentperf(k string) string {
	s, _ := a.Metadata.Agentperf[k].(string)
	return s
}

// positive returns v as a count when it is a number above 0.
func positive(v any) (int, bool) {
	if f, ok := metrics.JSONFloat(v); ok && f > 0 {
		return int(f), true
	}
	return 0, false
}

// concurrency is the run's recorded concurrency (agentperf metadata, else
// input_config.concurrency, else an aiperf profiling phase's).
func (a *aggregateJSON) concurrency() (int, bool) {
	if c, ok := positive(a.Metadata.Agentperf["concurrency"]); ok {
		return c, true
	}
	ic := a.InputConfig
	if c, ok := positive(ic["concurrency"]); ok {
		return c, true
	}
	phases, _ := ic["phases"].([]any)
	for _, p := range phases {
		p, _ := p.(map[string]any)
		if p["kind"] == "profiling" || p["name"] == "profiling" {
			if c, ok := positive(p["concurrency"]); ok {
				return c, true
			}
		}
	}
	loadgen, _ := ic["loadgen"].(map[string]any)
	return positive(loadgen["concurrency"])
}

// model returns the first served model name the run records
// (input_config.model_names, or aiperf's input_config.endpoint.model_names).
func (a *aggregateJSON) model() (string, bool) {
	ep, _ := a.InputConfig["endpoint"].(map[string]any) // agentperf's is a path, aiperf's an object
	for _, names := range []any{a.InputConfig["model_names"], ep["model_names"]} {
		if l, _ := names.([]any); len(l) > 0 {
			if s, _ := l[0].(string); s != "" {
				return s, true
			}
		}
	}
	return "", false
}

// unsafeOverride reports input_config.unsafe_override.
func (a *aggregateJSON) unsafeOverride() bool {
	return a.InputConfig["unsafe_override"] == true
}

// Validity is the run's submission verdict as its metadata records it.
type Validity struct {
	// Known is false when the run records no verdict (no scenario).
	Known bool
	// Valid is metadata.submission_valid.
	Valid bool
	// Scenario is metadata.scenario; Reasons is
	// metadata.submission_invalid_reasons, plus unsafe_override when
	// input_config says the scenario's locks were lifted and the reasons
	// do not (an older writer).
	Scenario string
	Reasons  []string
}

// Validity returns the run's submission verdict.
func (r *Run) Validity() Validity {
	md := &r.agg.Metadata
	v := Validity{Scenario: md.Scenario, Reasons: append([]string(nil), md.SubmissionInvalidReasons...)}
	if md.SubmissionValid != nil {
		v.Known, v.Valid = true, *md.SubmissionValid
	}
	if r.agg.unsafeOverride() && !slices.Contains(v.Reasons, scenario.ReasonUnsafeOverride) {
		v.Known, v.Valid = true, false
		v.Reasons = append([]string{scenario.ReasonUnsafeOverride}, v.Reasons...)
	}
	return v
}

// resolveDir finds the artifact folder: dir itself, or its
// aiperf_artifacts or trace_replay child, or its only child holding
// profile_export.jsonl (several such children are an error: which run is
// meant is not guessed; a repeated run is named as one, with its runs).
func resolveDir(dir string) (string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("artifact folder %s: %w", dir, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%w: %s is a file, not a folder", ErrNotArtifactDir, dir)
	}
	has := func(d string) bool {
		for _, n := range []string{metrics.FileRecords, metrics.FileRecords + ".partial"} {
			if _, err := os.Stat(filepath.Join(d, n)); err == nil {
				return true
			}
		}
		return false
	}
	if has(dir) {
		return dir, nil
	}
	for _, c := range []string{"aiperf_artifacts", "trace_replay"} {
		if has(filepath.Join(dir, c)) {
			return filepath.Join(dir, c), nil
		}
	}
	ents, _ := os.ReadDir(dir)
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var found []string
	for _, n := range names {
		if has(filepath.Join(dir, n)) {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 1:
		return filepath.Join(dir, found[0]), nil
	case 0:
	default:
		return "", fmt.Errorf("%w: %s holds no %s itself but %d child folders do (%s, …): name one of them",
			ErrNotArtifactDir, dir, metrics.FileRecords, len(found), found[0])
	}
	if metrics.IsRepeated(dir) {
		runs, _ := metrics.RunFolders(dir)
		return "", fmt.Errorf("%w: %s is a repeated run (profile --num-profile-runs) with no %s of its own: name one of its run folders (%s)",
			ErrNotArtifactDir, dir, metrics.FileRecords, strings.Join(runs, ", "))
	}
	return "", fmt.Errorf("%w: %s has no %s (nor an aiperf_artifacts/ child with one): pass the folder given to --output-artifact-dir",
		ErrNotArtifactDir, dir, metrics.FileRecords)
}

// Load reads an artifact folder. A folder without records, a malformed
// record line, an undecodable aggregate and an undecodable server-metrics
// file are errors (wrapping ErrNotArtifactDir, ErrBadRecords, which is
// metrics.ErrBadExport, metrics.ErrBadAggregate, or ErrBadArtifact); a
// missing aggregate or server-metrics file is not.
func Load(dir string) (*Run, error) {
	d, err := resolveDir(dir)
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: d}
	if _, err := os.Stat(filepath.Join(d, metrics.FileRecords)); errors.Is(err, fs.ErrNotExist) {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%s is missing; read %s.partial: the run did not finish, its last records may be missing",
			metrics.FileRecords, metrics.FileRecords))
	}
	// One read of each file: the aggregates, the records as InferenceX's
	// processor keeps them, and the aggregate JSON the run context is read
	// from.
	r.recs = newRecords()
	r.agg = &aggregateJSON{}
	r.Summary, err = metrics.Summarize(d, metrics.RecomputeOptions{Location: time.Local, EachRecord: r.recs.add,
		Aggregate: func(a *metrics.AggregateFile) { r.agg.AggregateFile, r.agg.present = *a, true }})
	if err != nil {
		return nil, err
	}
	if !r.agg.present {
		r.Warnings = append(r.Warnings, metrics.FileAggregateJSON+" is missing: theoretical_cache_hit_rate and dataset come from the records only")
	}
	sp := filepath.Join(d, servermetrics.JSONFile)
	if _, err := os.Stat(sp); err == nil {
		ex, err := servermetrics.ReadExport(sp)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadArtifact, err)
		}
		r.Server = ex
		r.Derived = servermetrics.Derive(ex)
	}
	if g, err := gputelemetry.ReadExport(d); err == nil {
		r.GPU = g
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %v", ErrBadArtifact, err)
	}
	return r, nil
}

// Concurrency is the run's recorded concurrency, if any.
func (r *Run) Concurrency() (int, bool) {
	if r.Summary != nil && r.Summary.Info.Concurrency > 0 {
		return r.Summary.Info.Concurrency, true
	}
	return r.agg.concurrency()
}

// requests computes the request figures once.
func (r *Run) requests() requestFigures {
	th, ok := r.agg.theoretical()
	if ok && (math.IsNaN(th) || math.IsInf(th, 0)) {
		ok = false
	}
	return computeRequests(r.recs, th, ok)
}
