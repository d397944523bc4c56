package inferencex

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/agentperf/agentperf/metrics"
)

// Status says whether a run belongs in the sweep table.
type Status string

const (
	StatusOK       Status = "ok"
	StatusZero     Status = "zero_requests" // finished with no successful profiling request
	StatusFailed   Status = "failed"        // unreadable, aborted, cancelled or not adding up
	tpUnknownLabel        = "?"
)

// Labels place a run in the sweep: its tensor-parallel size (0 unknown),
// concurrency (0 unknown) and configuration name (empty: none).
type Labels struct {
	TP, Conc int
	Config   string
}

// Row is one run of the sweep table: the seed table's columns and what
// the Pareto plot needs. Unknown numbers are NaN.
type Row struct {
	Dir string
	Labels
	Status Status
	Reason string   // why the run is not in the table (Status != ok)
	Notes  []string // caveats of an included run

	Requests      int     // successful profiling requests
	RPS           float64 // requests / benchmark duration
	OutputTPS     float64 // output tokens / benchmark duration
	PrefixHitPct  float64 // GPU-local prefix-cache hit rate, %
	ExtHitPct     float64 // external (offload) hit rate, %, conditional on a GPU miss
	KVAvgPct      float64 // GPU KV usage averaged over non-idle slices, %
	TputPerGPU    float64 // (input + output) tokens/s per GPU, InferenceX's tput_per_gpu
	OutTputPerGPU float64 // output tokens/s per GPU
	Interactivity float64 // 1 / median ITL, tokens/s/user

	// Runs, for the row of a repeated run (PooledRow), is the number of
	// runs its figures are the mean of (0: one run). Pooled then holds
	// each figure over the runs that have it, by its CSV column name (rps,
	// output_tok_s, …), and Level the intervals' confidence level.
	Runs   int
	Level  float64
	Pooled map[string]metrics.Pooled
}

// pooledColumns are the figures of a row that PooledRow pools, by their
// CSV column name, with their unit.
var pooledColumns = []struct {
	key, unit string
	field     func(*Row) *float64
}{
	{"rps", "requests/s", func(r *Row) *float64 { return &r.RPS }},
	{"output_tok_s", "tokens/s", func(r *Row) *float64 { return &r.OutputTPS }},
	{"prefix_cache_pct", "%", func(r *Row) *float64 { return &r.PrefixHitPct }},
	{"ext_cache_pct", "%", func(r *Row) *float64 { return &r.ExtHitPct }},
	{"gpu_kv_avg_pct", "%", func(r *Row) *float64 { return &r.KVAvgPct }},
	{"tput_per_gpu", "tokens/s/GPU", func(r *Row) *float64 { return &r.TputPerGPU }},
	{"output_tput_per_gpu", "tokens/s/GPU", func(r *Row) *float64 { return &r.OutTputPerGPU }},
	{"interactivity_tok_s_user", "tokens/s/user", func(r *Row) *float64 { return &r.Interactivity }},
}

// PooledRow is the sweep row of a repeated run (one point run several
// times: metrics.PooledSummary) from its runs, loaded in the summary's
// order: each figure is the mean over the runs that have it, with its
// Student-t interval at the summary's confidence level (metrics.Pool);
// #Reqs is the sum over the runs. A run that is not in the table (failed,
// aborted, no successful request) takes the whole row out, its reason
// naming the run; notes say in how many runs they hold.
func PooledRow(runs []*Run, l Labels, sum metrics.PooledSummary) Row {
	nan := math.NaN()
	row := Row{Labels: l, Status: StatusOK, Runs: len(runs), Level: sum.Confidence, Pooled: map[string]metrics.Pooled{}}
	for _, c := range pooledColumns {
		*c.field(&row) = nan
	}
	if len(runs) == 0 {
		row.Status, row.Reason = StatusFailed, "a repeated run with no finished run (its pooled summary lists none)"
		return row
	}
	if row.Level == 0 {
		row.Level = 0.95
	}
	rows := make([]Row, len(runs))
	var noteOrder []string
	noteRuns := map[string]int{}
	for i, r := range runs {
		rows[i] = NewRow(r, l)
		row.Requests += rows[i].Requests
		if rows[i].Status != StatusOK && row.Status == StatusOK {
			row.Status, row.Reason = rows[i].Status, fmt.Sprintf("run %d of %d (%s): %s", i+1, len(runs), r.Dir, rows[i].Reason)
		}
		for _, n := range rows[i].Notes {
			if noteRuns[n] == 0 {
				noteOrder = append(noteOrder, n)
			}
			noteRuns[n]++
		}
	}
	for _, c := range pooledColumns {
		vs := make([]float64, len(rows))
		for i := range rows {
			vs[i] = *c.field(&rows[i])
		}
		p := metrics.Pool(vs, row.Level, c.unit)
		if p.N > 0 {
			*c.field(&row) = p.Mean
			row.Pooled[c.key] = p
		}
	}
	if sum.StoppedEarly != "" {
		row.Notes = append(row.Notes, fmt.Sprintf("%d of %d profile runs: %s", sum.RunsDone, sum.RunsRequested, sum.StoppedEarly))
	}
	for _, n := range noteOrder {
		if k := noteRuns[n]; k < len(runs) {
			n = fmt.Sprintf("%s (in %d of %d runs)", n, k, len(runs))
		}
		row.Notes = append(row.Notes, n)
	}
	return row
}

// cell is a figure of the row as the markdown shows it: for a pooled row,
// "mean ± half-width" of its interval.
func (r *Row) cell(key string, v float64, prec int) string {
	if r.Runs == 0 || math.IsNaN(v) {
		return fmtF(v, prec)
	}
	p, ok := r.Pooled[key]
	if !ok {
		return fmtF(v, prec)
	}
	c := fmtF(v, prec)
	if p.N > 1 { // one value has no interval
		c += " ± " + fmtF(p.HalfWidth(), prec)
	}
	if p.N < r.Runs {
		c += fmt.Sprintf(" (%d of %d runs)", p.N, r.Runs)
	}
	return c
}

// NewRow computes the sweep row of a loaded run.
func NewRow(r *Run, l Labels) Row {
	row := Row{Dir: r.Dir, Labels: l, Status: StatusOK}
	nan := math.NaN()
	row.RPS, row.OutputTPS, row.PrefixHitPct, row.ExtHitPct, row.KVAvgPct = nan, nan, nan, nan, nan
	row.TputPerGPU, row.OutTputPerGPU, row.Interactivity = nan, nan, nan
	s := r.Summary
	row.Requests = s.RequestCount
	if s.RequestCount > 0 {
		row.RPS, row.OutputTPS = s.RequestThroughput, s.OutputTokenThroughput
	}
	d := &r.Derived
	pct := func(v float64, ok bool) float64 {
		if !ok {
			return nan
		}
		return 100 * v
	}
	row.PrefixHitPct = pct(d.GPUPrefixHitRate, d.GPUPrefixHitRateValid)
	row.ExtHitPct = pct(d.ExternalHitRate, d.ExternalHitRateValid)
	row.KVAvgPct = pct(d.KVUsageMeanActive, d.KVUsageMeanActiveValid)
	switch {
	case r.Server == nil:
		row.Notes = append(row.Notes, "no server_metrics_export.json: server columns n/a")
	case d.KVUsageMeanActiveValid && !d.KVActiveByRunning:
		row.Notes = append(row.Notes, "no running-requests gauge: GPU KV avg % counts every slice")
	case !d.KVUsageMeanActiveValid && r.Server != nil:
		row.Notes = append(row.Notes, "GPU KV avg % n/a: the server metrics have no KV usage gauge with timeslices (run with --slice-duration)")
	}
	req := r.requests()
	if l.TP > 0 && req.hasTput {
		row.TputPerGPU = req.totTPS / float64(l.TP)
		row.OutTputPerGPU = req.outTPS / float64(l.TP)
	}
	if req.intvty.n > 0 {
		row.Interactivity = req.intvty.p50
	}
	ag := r.agg
	switch {
	case ag.agentperf("aborted") != "":
		row.Status, row.Reason = StatusFailed, "aborted ("+ag.agentperf("aborted")+")"
		if m := ag.agentperf("abort_message"); m != "" {
			row.Reason += ": " + m
		}
	case ag.WasCancelled || s.Info.Cancelled:
		row.Status, row.Reason = StatusFailed, "run cancelled"
	case s.AccountingErr != nil:
		row.Status, row.Reason = StatusFailed, s.AccountingErr.Error()
	case s.RequestCount == 0:
		row.Status = StatusZero
		row.Reason = fmt.Sprintf("0 successful profiling requests (%d errors, %d cancelled, %d context overflows; warmup %d ok, %d errors)",
			s.ErrorRequestCount, s.CancelledRequestCount, s.ContextOverflowCount, s.WarmupRequestCount, s.WarmupErrorCount)
	}
	if v := ag.Metadata.SubmissionValid; v != nil && !*v && row.Status == StatusOK {
		row.Notes = append(row.Notes, "submission not valid: "+strings.Join(ag.Metadata.SubmissionInvalidReasons, ", "))
	}
	row.Notes = append(row.Notes, r.Warnings...)
	return row
}

// FailedRow is the row of a folder that could not be read.
func FailedRow(dir string, l Labels, err error) Row {
	nan := math.NaN()
	return Row{Dir: dir, Labels: l, Status: StatusFailed, Reason: err.Error(),
		RPS: nan, OutputTPS: nan, PrefixHitPct: nan, ExtHitPct: nan, KVAvgPct: nan,
		TputPerGPU: nan, OutTputPerGPU: nan, Interactivity: nan}
}

// Name is the run's short label: TP8/conc32 (with its configuration).
func (r *Row) Name() string {
	tp := tpUnknownLabel
	if r.TP > 0 {
		tp = strconv.Itoa(r.TP)
	}
	conc := tpUnknownLabel
	if r.Conc > 0 {
		conc = strconv.Itoa(r.Conc)
	}
	s := "TP" + tp + "/conc" + conc
	if r.Config != "" {
		s = r.Config + " " + s
	}
	return s
}

// Table is a sweep: the included runs sorted by configuration, TP and
// concurrency, and the excluded ones apart.
type Table struct {
	Rows     []Row // Status ok
	Excluded []Row // zero-request and failed runs, with their reasons
}

// NewTable sorts rows into a table. Unknown TP and concurrency sort last.
func NewTable(rows []Row) *Table {
	t := &Table{}
	for _, r := range rows {
		if r.Status == StatusOK {
			t.Rows = append(t.Rows, r)
		} else {
			t.Excluded = append(t.Excluded, r)
		}
	}
	key := func(n int) int {
		if n <= 0 {
			return math.MaxInt
		}
		return n
	}
	order := func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Config, b.Config), cmp.Compare(key(a.TP), key(b.TP)),
			cmp.Compare(key(a.Conc), key(b.Conc)), cmp.Compare(a.Dir, b.Dir))
	}
	slices.SortStableFunc(t.Rows, order)
	slices.SortStableFunc(t.Excluded, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.Status, b.Status), order(a, b))
	})
	return t
}

// pooled reports whether any row of t is a repeated run's (PooledRow).
func (t *Table) pooled() bool {
	for _, r := range append(slices.Clone(t.Rows), t.Excluded...) {
		if r.Runs > 0 {
			return true
		}
	}
	return false
}

func (t *Table) hasConfig() bool {
	for _, r := range append(slices.Clone(t.Rows), t.Excluded...) {
		if r.Config != "" {
			return true
		}
	}
	return false
}

func fmtF(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "n/a"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

func fmtInt(n int) string {
	if n <= 0 {
		return tpUnknownLabel
	}
	return strconv.Itoa(n)
}

// Columns are the sweep table's headers, as in the seed write-up.
var Columns = []string{"TP", "Conc", "#Reqs", "RPS", "Out tok/s", "Prefix cache %", "Ext cache %", "GPU KV avg %"}

func (r *Row) cells(pooled bool) []string {
	c := []string{fmtInt(r.TP), fmtInt(r.Conc), strconv.Itoa(r.Requests), r.cell("rps", r.RPS, 3), r.cell("output_tok_s", r.OutputTPS, 2),
		r.cell("prefix_cache_pct", r.PrefixHitPct, 1), r.cell("ext_cache_pct", r.ExtHitPct, 1), r.cell("gpu_kv_avg_pct", r.KVAvgPct, 1)}
	if pooled {
		runs := "1"
		if r.Runs > 0 {
			runs = strconv.Itoa(r.Runs)
		}
		c = slices.Insert(c, 2, runs)
	}
	return c
}

// pooledLegend says, under a table with repeated runs, what its cells
// are.
func (t *Table) pooledLegend() string {
	level := 0.95
	for _, r := range t.Rows {
		if r.Runs > 0 {
			level = r.Level
			break
		}
	}
	return fmt.Sprintf("Runs: the profile runs of the point (--num-profile-runs). Where Runs is above 1, #Reqs is the sum over the runs and every other figure is the mean over the runs ± the half-width of its %s%% Student-t confidence interval over the runs (the point's aggregate/%s lists its runs); a figure only some runs have is the mean of those, and says how many (one has no interval).\n",
		strconv.FormatFloat(100*level, 'f', -1, 64), metrics.FilePooledSummary)
}

// WriteMarkdown writes the table as the seed shows it, then the excluded
// runs with their reasons, the notes and the column definitions.
func (t *Table) WriteMarkdown(w io.Writer) error { return t.writeMarkdown(w, true) }

// WriteMarkdownBrief is WriteMarkdown without the column definitions.
func (t *Table) WriteMarkdownBrief(w io.Writer) error { return t.writeMarkdown(w, false) }

func (t *Table) writeMarkdown(w io.Writer, defs bool) error {
	var b strings.Builder
	cfg := t.hasConfig()
	pooled := t.pooled()
	head := Columns
	if pooled {
		head = slices.Insert(slices.Clone(head), 2, "Runs")
	}
	if cfg {
		head = append([]string{"Config"}, head...)
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for i := range head {
		if cfg && i == 0 {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		c := r.cells(pooled)
		if cfg {
			c = append([]string{r.Config}, c...)
		}
		b.WriteString("| " + strings.Join(c, " | ") + " |\n")
	}
	if len(t.Rows) == 0 {
		b.WriteString("\n(no run with successful requests)\n")
	}
	if pooled {
		b.WriteString("\n" + t.pooledLegend())
	}
	var zero, failed []Row
	for _, r := range t.Excluded {
		if r.Status == StatusZero {
			zero = append(zero, r)
		} else {
			failed = append(failed, r)
		}
	}
	if len(zero) > 0 {
		b.WriteString("\nExcluded (0 requests):\n")
		for _, r := range zero {
			fmt.Fprintf(&b, "- %s (%s): %s\n", r.Name(), r.Dir, r.Reason)
		}
	}
	if len(failed) > 0 {
		b.WriteString("\nFailed:\n")
		for _, r := range failed {
			fmt.Fprintf(&b, "- %s (%s): %s\n", r.Name(), r.Dir, r.Reason)
		}
	}
	first := true
	for _, r := range t.Rows {
		for _, n := range r.Notes {
			if first {
				b.WriteString("\nNotes:\n")
				first = false
			}
			fmt.Fprintf(&b, "- %s: %s\n", r.Name(), n)
		}
	}
	if defs {
		b.WriteString("\n" + Definitions)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Definitions explains the columns (printed under the markdown table).
const Definitions = `#Reqs: successful profiling requests. RPS: #Reqs / benchmark duration (first request sent to last response). Out tok/s: output tokens / the same duration.
Prefix cache %: GPU-local prefix-cache hits / queries over the profiling window (vllm:prefix_cache_*; SGLang device cached tokens / prompt tokens).
Ext cache %: external (offload) tier hits / queries (vllm:external_prefix_cache_*); the tier is only asked about tokens the GPU cache missed, so it does not add to Prefix cache %.
GPU KV avg %: GPU KV cache usage averaged over engines per timeslice (1 s with --slice-duration 1), then over the non-idle slices (those where the server's running-requests gauge is above zero).
`

// csvHeader is the header of WriteCSV.
var csvHeader = []string{"config", "tp", "conc", "requests", "rps", "output_tok_s", "prefix_cache_pct", "ext_cache_pct",
	"gpu_kv_avg_pct", "tput_per_gpu", "output_tput_per_gpu", "interactivity_tok_s_user", "status", "reason", "dir"}

// WriteCSV writes every run, the included ones first; unknown numbers are
// empty cells.
func (t *Table) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	pooled := t.pooled()
	head := csvHeader
	if pooled {
		head = slices.Clone(head)
		head = append(head, "runs", "confidence_level")
		for _, c := range pooledColumns {
			head = append(head, c.key+"_ci_low", c.key+"_ci_high")
		}
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	cell := func(v float64, prec int) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', prec, 64)
	}
	num := func(n int) string {
		if n <= 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	for _, r := range append(slices.Clone(t.Rows), t.Excluded...) {
		rec := []string{r.Config, num(r.TP), num(r.Conc), strconv.Itoa(r.Requests), cell(r.RPS, 6), cell(r.OutputTPS, 4),
			cell(r.PrefixHitPct, 3), cell(r.ExtHitPct, 3), cell(r.KVAvgPct, 3), cell(r.TputPerGPU, 4),
			cell(r.OutTputPerGPU, 4), cell(r.Interactivity, 4), string(r.Status), r.Reason, r.Dir}
		if pooled {
			rec = append(rec, strconv.Itoa(max(r.Runs, 1)), "")
			if r.Runs > 0 {
				rec[len(rec)-1] = strconv.FormatFloat(r.Level, 'f', -1, 64)
			}
			for _, c := range pooledColumns {
				p, ok := r.Pooled[c.key]
				if !ok || p.N < 2 {
					rec = append(rec, "", "")
					continue
				}
				rec = append(rec, cell(p.CILow, 6), cell(p.CIHigh, 6))
			}
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func (r *Row) jsonObj() obj {
	n := func(v float64) any { return num(v) }
	i := func(x int) any {
		if x <= 0 {
			return nil
		}
		return x
	}
	o := obj{
		{"dir", r.Dir}, {"config", r.Config}, {"tp", i(r.TP)}, {"conc", i(r.Conc)},
		{"requests", r.Requests}, {"rps", n(r.RPS)}, {"output_tok_s", n(r.OutputTPS)},
		{"prefix_cache_pct", n(r.PrefixHitPct)}, {"ext_cache_pct", n(r.ExtHitPct)}, {"gpu_kv_avg_pct", n(r.KVAvgPct)},
		{"tput_per_gpu", n(r.TputPerGPU)}, {"output_tput_per_gpu", n(r.OutTputPerGPU)},
		{"interactivity_tok_s_user", n(r.Interactivity)}, {"status", string(r.Status)},
	}
	if r.Runs > 0 {
		iv := obj{}
		for _, c := range pooledColumns {
			if p, ok := r.Pooled[c.key]; ok && p.N > 1 {
				iv = append(iv, field{c.key, []any{num(p.CILow), num(p.CIHigh)}})
			}
		}
		o = append(o, field{"runs", r.Runs}, field{"confidence_level", r.Level}, field{"intervals", iv})
	}
	if r.Reason != "" {
		o = append(o, field{"reason", r.Reason})
	}
	if len(r.Notes) > 0 {
		o = append(o, field{"notes", r.Notes})
	}
	return o
}

// WriteJSON writes {"runs": [...], "excluded": [...]}.
func (t *Table) WriteJSON(w io.Writer) error {
	list := func(rs []Row) []any {
		out := make([]any, len(rs))
		for i := range rs {
			out[i] = rs[i].jsonObj()
		}
		return out
	}
	b, err := json.MarshalIndent(obj{{"runs", list(t.Rows)}, {"excluded", list(t.Excluded)}}, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
