// Package compare sets finished run folders side by side (agentperf
// compare A B [C…]): per headline metric, the ratio of each folder's
// statistic to the baseline A's, a bootstrap 95 % confidence interval of
// that ratio over the requests, and a verdict (faster, slower, or no
// difference at 95 %). It refuses folders whose corpora or scenarios
// differ unless told otherwise, naming the setting that differs
// (docs/compare.md).
package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/agentperf/agentperf/metrics"
)

// Metric is one compared figure: a statistic of one per-request metric.
type Metric struct {
	// Name is what the table shows ("TTFT p50").
	Name string
	// Tag is the per-request metric, Quantile the statistic (0.5: the
	// median).
	Tag      string
	Quantile float64
	Unit     string
	// HigherIsBetter says which way is "faster" (throughput per user).
	HigherIsBetter bool
	value          func(v *metrics.Values) float64
}

// Metrics are the compared figures.
var Metrics = []Metric{
	{Name: "TTFT p50", Tag: "time_to_first_token", Quantile: 0.5, Unit: "ms", value: func(v *metrics.Values) float64 { return v.TTFT }},
	{Name: "TTFT p90", Tag: "time_to_first_token", Quantile: 0.9, Unit: "ms", value: func(v *metrics.Values) float64 { return v.TTFT }},
	{Name: "ITL p50", Tag: "inter_token_latency", Quantile: 0.5, Unit: "ms", value: func(v *metrics.Values) float64 { return v.ITL }},
	{Name: "ITL p90", Tag: "inter_token_latency", Quantile: 0.9, Unit: "ms", value: func(v *metrics.Values) float64 { return v.ITL }},
	{Name: "E2E latency p50", Tag: "request_latency", Quantile: 0.5, Unit: "ms", value: func(v *metrics.Values) float64 { return v.RequestLatency }},
	{Name: "E2E latency p90", Tag: "request_latency", Quantile: 0.9, Unit: "ms", value: func(v *metrics.Values) float64 { return v.RequestLatency }},
	{Name: "tok/s per user p50", Tag: "output_token_throughput_per_user", Quantile: 0.5, Unit: "tokens/s", HigherIsBetter: true,
		value: func(v *metrics.Values) float64 { return v.OutputTPSPerUser }},
}

// Folder is one run folder's successful profiling requests and its
// settings.
type Folder struct {
	Dir string
	// Values are, per Metric, the values of the folder's successful
	// profiling requests.
	Values [][]float64
	// Runs is the number of runs pooled (the profile_runs of a repeated
	// run, else 1); PerRun are Values split by run (PerRun[run][metric]).
	Runs   int
	PerRun [][][]float64
	// Settings are the settings compared before anything else
	// ("metadata.scenario", "metadata.dataset.<key>").
	Settings map[string]string
}

// Load reads a run folder: its profile_export.jsonl, or, for a repeated
// run (a profile or a sweep point with --num-profile-runs), every run's
// its pooled summary lists (metrics.RunFolders), pooled and kept apart
// by run.
func Load(dir string) (*Folder, error) {
	runs, err := metrics.RunFolders(dir)
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("compare: %s is a repeated run whose pooled summary lists no finished run", dir)
	}
	f := &Folder{Dir: dir, Values: make([][]float64, len(Metrics)), Runs: len(runs), Settings: map[string]string{}}
	for i, rd := range runs {
		f.PerRun = append(f.PerRun, make([][]float64, len(Metrics)))
		p := filepath.Join(rd, metrics.FileRecords)
		fh, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("compare: %s is not a run folder (no %s): %w", dir, metrics.FileRecords, err)
		}
		_, err = metrics.ReadRecords(fh, p, false, func(l *metrics.RecordLine) error {
			if l.Record.Bucket != metrics.BucketProfilingOK {
				return nil
			}
			for k := range Metrics {
				if v := Metrics[k].value(&l.Values); metrics.Has(v) {
					f.Values[k] = append(f.Values[k], v)
					f.PerRun[i][k] = append(f.PerRun[i][k], v)
				}
			}
			return nil
		})
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		if i == 0 {
			if err := f.readSettings(rd); err != nil {
				return nil, err
			}
		}
	}
	return f, nil
}

// values are the folder's values of Metrics[k] (none when not loaded).
func (f *Folder) values(k int) []float64 {
	if k < len(f.Values) {
		return f.Values[k]
	}
	return nil
}

// runs are the folder's values of Metrics[k], by run.
func (f *Folder) runs(k int) [][]float64 {
	out := make([][]float64, len(f.PerRun))
	for i := range f.PerRun {
		if k < len(f.PerRun[i]) {
			out[i] = f.PerRun[i][k]
		}
	}
	return out
}

// readSettings reads the scenario and the corpus identity of the
// aggregate JSON.
func (f *Folder) readSettings(dir string) error {
	agg, err := metrics.ReadAggregateFile(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	f.Settings["metadata.scenario"] = agg.Metadata.Scenario
	if len(agg.Metadata.Dataset) > 0 {
		var ds map[string]any
		if err := json.Unmarshal(agg.Metadata.Dataset, &ds); err == nil {
			for k, v := range ds {
				b, _ := json.Marshal(v)
				f.Settings["metadata.dataset."+k] = string(b)
			}
		}
	}
	return nil
}

// DifferentSettingsError says which setting differs between two folders.
type DifferentSettingsError struct {
	Setting, A, B string
	DirA, DirB    string
}

func (e *DifferentSettingsError) Error() string {
	return fmt.Sprintf("compare: %s differs: %s in %s, %s in %s (different corpora or scenarios are not comparable; pass --allow-different to compare anyway)",
		e.Setting, show(e.A), e.DirA, show(e.B), e.DirB)
}

func show(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// SameSettings returns a *DifferentSettingsError for the first setting
// (sorted) in which b differs from a.
func SameSettings(a, b *Folder) error {
	keys := map[string]bool{}
	for k := range a.Settings {
		keys[k] = true
	}
	for k := range b.Settings {
		keys[k] = true
	}
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		if a.Settings[k] != b.Settings[k] {
			// An InputError (the user's to correct) holding the detail.
			return &InputError{Err: &DifferentSettingsError{Setting: k, A: a.Settings[k], B: b.Settings[k], DirA: a.Dir, DirB: b.Dir}}
		}
	}
	return nil
}

// Verdicts.
const (
	Faster       = "faster"
	Slower       = "slower"
	NoDifference = "no difference at 95%"
	NoData       = "no data"
)

// Row is one metric of one treatment against the baseline.
type Row struct {
	Metric   string  `json:"metric"`
	Unit     string  `json:"unit"`
	Baseline float64 `json:"baseline"`
	Value    float64 `json:"value"`
	// Ratio is Value / Baseline; Low and High its bootstrap interval.
	Ratio   float64 `json:"ratio"`
	Low     float64 `json:"ci_low"`
	High    float64 `json:"ci_high"`
	Verdict string  `json:"verdict"`
	// NA, NB are the requests behind each side.
	NA int `json:"n_baseline"`
	NB int `json:"n"`
}

// Result is a comparison: per treatment folder (B, C, …), its rows.
type Result struct {
	Baseline   string           `json:"baseline"`
	Treatments []string         `json:"treatments"`
	Rows       map[string][]Row `json:"rows"`
	// Over says what was resampled for each treatment: "requests", or
	// "runs" when both folders hold repeated runs.
	Over      map[string]string `json:"resampled_over"`
	Resamples int               `json:"bootstrap_resamples"`
	Level     float64           `json:"confidence_level"`
	Notes     []string          `json:"notes,omitempty"`
}

// Options configure Compare.
type Options struct {
	// Resamples of the bootstrap; 0 means 2000.
	Resamples int
	// Seed of the bootstrap's random numbers (the result is the same for
	// the same folders and seed).
	Seed uint64
	// AllowDifferent compares folders whose settings differ.
	AllowDifferent bool
}

// Compare compares every other folder to the first.
func Compare(folders []*Folder, o Options) (*Result, error) {
	if len(folders) < 2 {
		return nil, errors.New("compare: give at least two folders: the baseline A, then B [C…]")
	}
	if o.Resamples == 0 {
		o.Resamples = 2000
	}
	a := folders[0]
	res := &Result{Baseline: a.Dir, Rows: map[string][]Row{}, Over: map[string]string{}, Resamples: o.Resamples, Level: 0.95}
	for _, b := range folders[1:] {
		if err := SameSettings(a, b); err != nil {
			if !o.AllowDifferent {
				return nil, err
			}
			res.Notes = append(res.Notes, "compared although "+err.Error())
		}
		res.Treatments = append(res.Treatments, b.Dir)
		rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
		var rows []Row
		byRuns := a.Runs >= 2 && b.Runs >= 2
		res.Over[b.Dir] = "requests"
		if byRuns {
			res.Over[b.Dir] = "runs"
		}
		for k, m := range Metrics {
			var r Row
			if byRuns {
				r = rowOverRuns(m, a.runs(k), b.runs(k), o.Resamples, rng)
			} else {
				r = row(m, a.values(k), b.values(k), o.Resamples, rng)
			}
			rows = append(rows, r)
		}
		res.Rows[b.Dir] = rows
	}
	return res, nil
}

// row compares one metric: the ratio of the statistics and its
// percentile-bootstrap interval (requests resampled with replacement,
// each folder on its own).
func row(m Metric, va, vb []float64, n int, rng *rand.Rand) Row {
	r := Row{Metric: m.Name, Unit: m.Unit, NA: len(va), NB: len(vb), Verdict: NoData,
		Baseline: math.NaN(), Value: math.NaN(), Ratio: math.NaN(), Low: math.NaN(), High: math.NaN()}
	if len(va) < 2 || len(vb) < 2 {
		return r
	}
	sa, sb := sorted(va), sorted(vb)
	r.Baseline, r.Value = quantile(sa, m.Quantile), quantile(sb, m.Quantile)
	if r.Baseline == 0 {
		return r
	}
	r.Ratio = r.Value / r.Baseline
	ratios := make([]float64, 0, n)
	ba, bb := make([]float64, len(va)), make([]float64, len(vb))
	for range n {
		for i := range ba {
			ba[i] = va[rng.IntN(len(va))]
		}
		for i := range bb {
			bb[i] = vb[rng.IntN(len(vb))]
		}
		slices.Sort(ba)
		slices.Sort(bb)
		if qa := quantile(ba, m.Quantile); qa != 0 {
			ratios = append(ratios, quantile(bb, m.Quantile)/qa)
		}
	}
	if n == 0 {
		return r // the caller bootstraps
	}
	slices.Sort(ratios)
	r.Low, r.High = quantile(ratios, 0.025), quantile(ratios, 0.975)
	r.Verdict = verdict(m, r.Low, r.High)
	return r
}

// verdict reads an interval of the ratio treatment / baseline.
func verdict(m Metric, low, high float64) string {
	switch {
	case low > 1:
		if m.HigherIsBetter {
			return Faster
		}
		return Slower
	case high < 1:
		if m.HigherIsBetter {
			return Slower
		}
		return Faster
	}
	return NoDifference
}

// rowOverRuns compares one metric of two repeated runs: the statistic of
// each side's pooled requests, and a bootstrap that resamples whole runs
// (each side's runs drawn with replacement, their requests pooled), so
// the interval carries the run-to-run variation.
func rowOverRuns(m Metric, ra, rb [][]float64, n int, rng *rand.Rand) Row {
	r := row(m, concat(ra), concat(rb), 0, rng)
	if math.IsNaN(r.Ratio) {
		return r
	}
	ratios := make([]float64, 0, n)
	var ba, bb []float64
	for range n {
		ba, bb = ba[:0], bb[:0]
		for range ra {
			ba = append(ba, ra[rng.IntN(len(ra))]...)
		}
		for range rb {
			bb = append(bb, rb[rng.IntN(len(rb))]...)
		}
		if len(ba) == 0 || len(bb) == 0 {
			continue
		}
		slices.Sort(ba)
		slices.Sort(bb)
		if qa := quantile(ba, m.Quantile); qa != 0 {
			ratios = append(ratios, quantile(bb, m.Quantile)/qa)
		}
	}
	slices.Sort(ratios)
	r.Low, r.High = quantile(ratios, 0.025), quantile(ratios, 0.975)
	r.Verdict = verdict(m, r.Low, r.High)
	return r
}

func concat(vs [][]float64) []float64 {
	var out []float64
	for _, v := range vs {
		out = append(out, v...)
	}
	return out
}

func sorted(v []float64) []float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s
}

// quantile of sorted values, linear between neighbours (numpy's default,
// as the aggregates' percentiles).
func quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

// WriteTable writes the comparison as a terminal table.
func (r *Result) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "baseline A: %s\n", r.Baseline)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	for i, t := range r.Treatments {
		fmt.Fprintf(w, "\n%c: %s  (ratio = %c / A; %.0f%% bootstrap interval over %s, %d resamples)\n", 'B'+i, t, 'B'+i, 100*r.Level, r.Over[t], r.Resamples)
		fmt.Fprintf(w, "  %-26s %12s %12s %8s %20s  %s\n", "metric", "A", string(rune('B'+i)), "ratio", "interval", "verdict")
		for _, row := range r.Rows[t] {
			fmt.Fprintf(w, "  %-26s %12s %12s %8s %20s  %s\n", row.Metric+" ("+row.Unit+")", num(row.Baseline), num(row.Value), num(row.Ratio),
				"["+num(row.Low)+", "+num(row.High)+"]", row.Verdict)
		}
	}
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.4g", v)
}
