package metrics

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentperf/agentperf/internal/atomicfile"
)

// Identification written at the top of profile_export_aiperf.json.
const (
	// SchemaVersion is the JsonExportData schema of the SemiAnalysis aiperf
	// fork pinned by InferenceX.
	SchemaVersion = "1.4"
	// TheoreticalHitDefinition names how theoretical_prefix_cache_hit is
	// computed (definition C of docs/weka-traces.md).
	TheoreticalHitDefinition = "C: leading run of a turn's hash ids seen earlier in the same trace scope, over successful profiling requests"
)

// writeFileAtomic writes data to dir/name through a temporary file that is
// synced and renamed into place.
func writeFileAtomic(dir, name string, data []byte) error {
	return atomicfile.WriteBytes(filepath.Join(dir, name), data)
}

// statObj is the stat object of a per-record metric (docs/artifacts.md).
func statObj(m *Metric, s *Stat) obj {
	o := statObject(m, s)
	return o.obj()
}

// intOr returns f as a rawInt when asInt and f is whole, else f (nil
// when it is not finite).
func intOr(f float64, asInt bool) any { return numOf(f, asInt).value() }

func scalarObj(x *Scalar) obj {
	o := scalarObject(x)
	return o.obj()
}

// naiveLocal formats t as aiperf does: ISO-8601 naive local time with
// microseconds.
func naiveLocal(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return ""
	}
	return t.In(loc).Format("2006-01-02T15:04:05.000000")
}

// exportOptions are the writer settings shared by Finish and Recompute.
type exportOptions struct {
	version  string
	location *time.Location
}

// aggregateJSON renders profile_export_aiperf.json.
func (s *Summary) aggregateJSON(eo exportOptions) ([]byte, error) {
	a, err := s.aggregateFile(eo)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", FileAggregateJSON, err)
	}
	return a.Encode()
}

// aggregateFile is the aggregate JSON of the summary.
func (s *Summary) aggregateFile(eo exportOptions) (*AggregateFile, error) {
	info := &s.Info
	a := &AggregateFile{SchemaVersion: SchemaVersion, AiperfVersion: eo.version, BenchmarkID: info.BenchmarkID,
		RunInfoID: info.BenchmarkID, WasCancelled: info.Cancelled, Extra: info.keepTop}
	for i := range s.Metrics {
		a.Stats = append(a.Stats, NamedStat{s.Metrics[i].Metric.Tag, statObject(s.Metrics[i].Metric, &s.Metrics[i].Stat)})
	}
	for i := range s.Scalars {
		a.Stats = append(a.Stats, NamedStat{s.Scalars[i].Tag, scalarObject(&s.Scalars[i])})
	}
	if s.TheoreticalTotalBlocks > 0 {
		a.Stats = append(a.Stats, NamedStat{"theoretical_prefix_cache_hit", StatObject{Unit: "%", Avg: FloatNum(s.TheoreticalHitPct),
			Count: IntNum(s.TheoreticalTotalBlocks), Sum: IntNum(s.TheoreticalHitBlocks)}})
	}
	a.InputConfig, _ = redact(info.InputConfig).(map[string]any)
	a.ErrorSummary = s.Errors
	ps, pe := info.profilingWindow()
	a.StartTime, a.EndTime = naiveLocal(ps, eo.location), naiveLocal(pe, eo.location)
	for i := range s.WarmupMetrics {
		a.WarmupMetrics = append(a.WarmupMetrics, NamedStat{s.WarmupMetrics[i].Metric.Tag, statObject(s.WarmupMetrics[i].Metric, &s.WarmupMetrics[i].Stat)})
	}
	a.Metadata = s.metadata()
	if info.Dataset != nil {
		ds, err := appendJSON(nil, info.Dataset, 0)
		if err != nil {
			return nil, fmt.Errorf("dataset: %w", err)
		}
		a.Metadata.Dataset = ds
	}
	return a, nil
}

// metadata is the metadata block: aiperf's keys plus agentperf's
// request_accounting and run facts (docs/artifacts.md).
func (s *Summary) metadata() AggregateMetadata {
	info := &s.Info
	md := AggregateMetadata{ContextOverflowCount: s.ContextOverflowCount,
		WarmupContextOverflowCount: s.WarmupOverflowCount, SkippedSubagentRequests: info.SkippedSubagentRequests,
		Warnings: s.metadataWarnings(), Extra: info.keepMeta}
	if info.Scenario != "" {
		valid := info.Validity.Valid
		md.Scenario, md.SubmissionValid, md.SubmissionInvalidReasons = info.Scenario, &valid, info.Validity.Reasons
		if md.SubmissionInvalidReasons == nil {
			md.SubmissionInvalidReasons = []string{}
		}
		md.MetricDurationCoverage = info.Coverage
	}
	md.RequestAccounting = &RequestAccounting{Accounting: info.Accounting, AddsUp: s.AccountingErr == nil}
	if s.AccountingErr != nil {
		md.RequestAccounting.CheckError = s.AccountingErr.Error()
	}
	ap := map[string]any{}
	for k, v := range info.Extra {
		ap[k] = v
	}
	ap["concurrency"] = info.Concurrency
	ps, pe := info.profilingWindow()
	if !ps.IsZero() {
		ap["profiling_start_ns"] = ps.UnixNano()
	}
	if !pe.IsZero() {
		ap["profiling_end_ns"] = pe.UnixNano()
	}
	if !info.StartTime.IsZero() {
		ap["run_start_ns"] = info.StartTime.UnixNano()
	}
	if !info.EndTime.IsZero() {
		ap["run_end_ns"] = info.EndTime.UnixNano()
	}
	if s.SliceDuration > 0 {
		ap["slice_duration_sec"] = s.SliceDuration.Seconds()
	}
	ap["theoretical_prefix_cache_hit_definition"] = TheoreticalHitDefinition
	if len(s.Occupancy) > 0 {
		ap["achieved_concurrency"] = occupancyMetadata(s.Occupancy)
	}
	if w := s.Warnings(); len(w) > 0 {
		ap["warnings"] = w
	}
	md.Agentperf = ap
	return md
}

// appendKept appends the kept keys of an existing file, sorted, skipping
// keys o already has.
func appendKept(o obj, keep map[string]any) obj {
	if len(keep) == 0 {
		return o
	}
	have := make(map[string]bool, len(o))
	for _, e := range o {
		have[e.k] = true
	}
	keys := make([]string, 0, len(keep))
	for k := range keep {
		if !have[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		o = append(o, kv{k, keep[k]})
	}
	return o
}

// ErrorRateWarnAbove is the share of failed profiling requests (among
// those that completed) above which the summary's first line and
// metadata.warnings say so (docs/failed-request-threshold.md).
const ErrorRateWarnAbove = 0.05

// errorRateWarningPrefix starts the error-rate warning; a recomputed
// summary replaces the one it read.
const errorRateWarningPrefix = "error rate "

// ErrorRateWarning returns the warning for a run whose profiling requests
// failed more often than ErrorRateWarnAbove, or "".
func (s *Summary) ErrorRateWarning() string {
	if s.CompletedRequestCount == 0 {
		return ""
	}
	rate := float64(s.ErrorRequestCount) / float64(s.CompletedRequestCount)
	if rate <= ErrorRateWarnAbove {
		return ""
	}
	return fmt.Sprintf("%s%.2f %%: %d of the %d profiling requests that completed failed (above %g %%); the latency and throughput figures cover the successful ones only (the errors are listed in error_summary)",
		errorRateWarningPrefix, 100*rate, s.ErrorRequestCount, s.CompletedRequestCount, 100*ErrorRateWarnAbove)
}

// metadataWarnings are metadata.warnings: the run's warnings, with the
// error-rate warning of this summary in the place of any earlier one (or
// last).
func (s *Summary) metadataWarnings() []string {
	var out []string
	rate, placed := s.ErrorRateWarning(), false
	for _, w := range s.Info.Warnings {
		if !strings.HasPrefix(w, errorRateWarningPrefix) {
			out = append(out, w)
		} else if rate != "" && !placed {
			out, placed = append(out, rate), true
		}
	}
	if rate != "" && !placed {
		out = append(out, rate)
	}
	return out
}

// Warnings lists what a reader of the results should know is missing or
// inconsistent (never silent): accounting mismatches, no theoretical hit
// data, no successful requests.
func (s *Summary) Warnings() []string {
	var w []string
	if s.AccountingErr != nil {
		w = append(w, "request_accounting: "+s.AccountingErr.Error())
	}
	if s.timesliceProblem != "" {
		w = append(w, s.timesliceProblem)
	}
	if s.RequestCount == 0 {
		w = append(w, "no successful profiling requests: no latency or throughput aggregates")
	} else if s.TheoreticalTotalBlocks == 0 {
		w = append(w, "theoretical_prefix_cache_hit: no successful profiling record carried hash-id blocks; the metric is omitted")
	}
	return w
}

// csvCell quotes a CSV cell when needed (minimal quoting).
func csvCell(b []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return append(b, s...)
	}
	b = append(b, '"')
	b = append(b, strings.ReplaceAll(s, `"`, `""`)...)
	return append(b, '"')
}

// csvNum formats a CSV number: integers as integers, floats with two
// decimals, NaN as an empty cell.
func csvNum(b []byte, v any) []byte {
	switch x := v.(type) {
	case rawInt:
		return strconv.AppendInt(b, int64(x), 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return b
		}
		return strconv.AppendFloat(b, x, 'f', 2, 64)
	}
	return b
}

// metricLabel is the CSV Metric cell: header plus " (unit)" unless the unit
// is empty, count or requests.
func metricLabel(header, unit string) string {
	switch unit {
	case "", "count", "requests":
		return header
	}
	return header + " (" + unit + ")"
}

// csvStats are the distribution stats in CSV column order.
func csvStats(m *Metric, s *Stat) [14]any {
	return [14]any{s.Avg, intOr(s.Min, m.Int), intOr(s.Max, m.Int), intOr(s.Sum, m.Int),
		s.P1, s.P5, s.P10, s.P25, s.P50, s.P75, s.P90, s.P95, s.P99, s.Std}
}

var csvStatNames = [14]string{"avg", "min", "max", "sum", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std"}

// scalarRow is one row of the scalar section.
type scalarRow struct {
	tag, label string
	val        any
}

// aggregateCSV renders profile_export_aiperf.csv (docs/artifacts.md).
func (s *Summary) aggregateCSV() []byte {
	ms := slices.Clone(s.Metrics)
	slices.SortFunc(ms, func(a, b MetricStat) int { return strings.Compare(a.Metric.Tag, b.Metric.Tag) })
	var b []byte
	b = append(b, "Metric,avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\r\n"...)
	for i := range ms {
		b = csvCell(b, metricLabel(ms[i].Metric.Header, ms[i].Unit))
		for _, v := range csvStats(ms[i].Metric, &ms[i].Stat) {
			b = append(b, ',')
			b = csvNum(b, v)
		}
		b = append(b, '\r', '\n')
	}
	var rows []scalarRow
	for i := range s.Scalars {
		x := &s.Scalars[i]
		var v any = x.Value
		if x.Int {
			v = rawInt(x.IntValue)
		}
		rows = append(rows, scalarRow{x.Tag, metricLabel(x.Header, x.Unit), v})
	}
	if s.TheoreticalTotalBlocks > 0 {
		rows = append(rows, scalarRow{"theoretical_prefix_cache_hit", "Theoretical Prefix Cache Hit (%)", s.TheoreticalHitPct})
	}
	slices.SortFunc(rows, func(a, b scalarRow) int { return strings.Compare(a.tag, b.tag) })
	b = append(b, "\r\nMetric,Value\r\n"...)
	for _, r := range rows {
		b = csvCell(b, r.label)
		b = append(b, ',')
		b = csvNum(b, r.val)
		b = append(b, '\r', '\n')
	}
	return b
}

// timeslicesJSON renders profile_export_aiperf_timeslices.json
// (docs/artifacts.md).
func (s *Summary) timeslicesJSON() ([]byte, error) {
	sl := make([]any, 0, len(s.Timeslices))
	for i := range s.Timeslices {
		ts := &s.Timeslices[i]
		o := obj{{"start_ns", ts.StartNs}, {"end_ns", ts.EndNs}}
		if !ts.Complete {
			o = append(o, kv{"is_complete", false})
		}
		for j := range ts.Metrics {
			o = append(o, kv{ts.Metrics[j].Metric.Tag, statObj(ts.Metrics[j].Metric, &ts.Metrics[j].Stat)})
		}
		for j := range ts.Scalars {
			o = append(o, kv{ts.Scalars[j].Tag, scalarObj(&ts.Scalars[j])})
		}
		sl = append(sl, o)
	}
	cfg, _ := redact(s.Info.InputConfig).(map[string]any)
	if cfg == nil {
		cfg = map[string]any{}
	}
	b, err := appendJSON(nil, obj{{"timeslices", sl}, {"input_config", cfg}}, 0)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", FileTimeslicesJSON, err)
	}
	return append(b, '\n'), nil
}

// timeslicesCSV renders the tidy timeslice CSV (docs/artifacts.md).
func (s *Summary) timeslicesCSV() []byte {
	var b []byte
	b = append(b, "Timeslice,Metric,Unit,Stat,Value\r\n"...)
	type item struct {
		tag, header, unit string
		names             []string
		vals              []any
	}
	for i := range s.Timeslices {
		ts := &s.Timeslices[i]
		var items []item
		for j := range ts.Metrics {
			m := &ts.Metrics[j]
			v := csvStats(m.Metric, &m.Stat)
			items = append(items, item{m.Metric.Tag, m.Metric.Header, m.Unit, csvStatNames[:], v[:]})
		}
		for j := range ts.Scalars {
			x := &ts.Scalars[j]
			items = append(items, item{x.Tag, x.Header, x.Unit, []string{"avg"}, []any{x.Value}})
		}
		slices.SortFunc(items, func(a, b item) int { return strings.Compare(a.tag, b.tag) })
		for _, it := range items {
			for k, name := range it.names {
				cell := csvNum(nil, it.vals[k])
				if len(cell) == 0 {
					continue
				}
				b = strconv.AppendInt(b, int64(i), 10)
				b = append(b, ',')
				b = csvCell(b, it.header)
				b = append(b, ',')
				b = csvCell(b, it.unit)
				b = append(b, ',')
				b = append(b, name...)
				b = append(b, ',')
				b = append(b, cell...)
				b = append(b, '\r', '\n')
			}
		}
	}
	return b
}

// writeAggregates writes the aggregate JSON and CSV, and the timeslice
// files when the summary has slices.
func (s *Summary) writeAggregates(dir string, eo exportOptions, slices bool) error {
	j, err := s.aggregateJSON(eo)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(dir, FileAggregateJSON, j); err != nil {
		return err
	}
	if err := writeFileAtomic(dir, FileAggregateCSV, s.aggregateCSV()); err != nil {
		return err
	}
	if !slices || s.SliceDuration <= 0 {
		return nil
	}
	tj, err := s.timeslicesJSON()
	if err != nil {
		return err
	}
	if err := writeFileAtomic(dir, FileTimeslicesJSON, tj); err != nil {
		return err
	}
	return writeFileAtomic(dir, FileTimeslicesCSV, s.timeslicesCSV())
}
