package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/servermetrics"
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
	// Warnings are problems found while reading that do not stop the
	// report.
	Warnings []string

	recs *records
	agg  *aggregateJSON
}

// aggregateJSON is what is read of profile_export_aiperf.json.
type aggregateJSON struct {
	present      bool
	Theoretical  *aggStat        `json:"theoretical_prefix_cache_hit"`
	RequestCount *aggStat        `json:"request_count"`
	ErrorCount   *aggStat        `json:"error_request_count"`
	Completed    *aggStat        `json:"completed_request_count"`
	InputConfig  json.RawMessage `json:"input_config"`
	WasCancelled bool            `json:"was_cancelled"`
	Metadata     struct {
		Dataset         json.RawMessage `json:"dataset"`
		SubmissionValid *bool           `json:"submission_valid"`
		Reasons         []string        `json:"submission_invalid_reasons"`
		Accounting      *struct {
			AddsUp *bool `json:"adds_up"`
		} `json:"request_accounting"`
		Agentperf struct {
			Concurrency  *float64 `json:"concurrency"`
			Aborted      string   `json:"aborted"`
			AbortMessage string   `json:"abort_message"`
		} `json:"agentperf"`
	} `json:"metadata"`
}

type aggStat struct {
	Unit  string   `json:"unit"`
	Avg   *float64 `json:"avg"`
	Sum   *float64 `json:"sum"`
	Count *float64 `json:"count"`
}

// theoretical is InferenceX's reading of theoretical_prefix_cache_hit:
// sum/count, else avg/100 when the unit is %, else avg.
func (a *aggregateJSON) theoretical() (float64, bool) {
	t := a.Theoretical
	if t == nil {
		return 0, false
	}
	if t.Sum != nil && t.Count != nil && *t.Count > 0 {
		return *t.Sum / *t.Count, true
	}
	if t.Avg == nil {
		return 0, false
	}
	if t.Unit == "%" {
		return *t.Avg / 100, true
	}
	return *t.Avg, true
}

// concurrency is the run's recorded concurrency (agentperf metadata, else
// input_config.concurrency, else an aiperf profiling phase's).
func (a *aggregateJSON) concurrency() (int, bool) {
	if c := a.Metadata.Agentperf.Concurrency; c != nil && *c > 0 {
		return int(*c), true
	}
	var ic struct {
		Concurrency *float64 `json:"concurrency"`
		Phases      []struct {
			Kind        string   `json:"kind"`
			Name        string   `json:"name"`
			Concurrency *float64 `json:"concurrency"`
		} `json:"phases"`
		Loadgen struct {
			Concurrency *float64 `json:"concurrency"`
		} `json:"loadgen"`
	}
	if len(a.InputConfig) == 0 || json.Unmarshal(a.InputConfig, &ic) != nil {
		return 0, false
	}
	if c := ic.Concurrency; c != nil && *c > 0 {
		return int(*c), true
	}
	for _, p := range ic.Phases {
		if (p.Kind == "profiling" || p.Name == "profiling") && p.Concurrency != nil && *p.Concurrency > 0 {
			return int(*p.Concurrency), true
		}
	}
	if c := ic.Loadgen.Concurrency; c != nil && *c > 0 {
		return int(*c), true
	}
	return 0, false
}

// resolveDir finds the artifact folder: dir itself, or its
// aiperf_artifacts or trace_replay child, or its only child holding
// profile_export.jsonl (several such children are an error: which run is
// meant is not guessed).
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
	return "", fmt.Errorf("%w: %s has no %s (nor an aiperf_artifacts/ child with one): pass the folder given to --output-artifact-dir",
		ErrNotArtifactDir, dir, metrics.FileRecords)
}

// Load reads an artifact folder. A folder without records, a malformed
// record line and an undecodable aggregate or server-metrics file are
// errors (wrapping ErrNotArtifactDir, ErrBadRecords, metrics.ErrBadExport
// or ErrBadArtifact); a missing aggregate or server-metrics file is not.
func Load(dir string) (*Run, error) {
	d, err := resolveDir(dir)
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: d}
	path := filepath.Join(d, metrics.FileRecords)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		path += ".partial"
		f, err = os.Open(path)
		if err == nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s is missing; read %s: the run did not finish, its last records may be missing",
				metrics.FileRecords, filepath.Base(path)))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read records: %w", err)
	}
	r.recs, err = readRecords(f, path, strings.HasSuffix(path, ".partial") && metrics.EndsMidLine(path))
	f.Close()
	if err != nil {
		return nil, err
	}
	r.Summary, err = metrics.Summarize(d, metrics.RecomputeOptions{Location: time.Local})
	if err != nil {
		return nil, err
	}
	r.agg = &aggregateJSON{}
	if b, err := os.ReadFile(filepath.Join(d, metrics.FileAggregateJSON)); err == nil {
		if err := json.Unmarshal(b, r.agg); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadArtifact, filepath.Join(d, metrics.FileAggregateJSON), err)
		}
		r.agg.present = true
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read aggregates: %w", err)
	} else {
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
