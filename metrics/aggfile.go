package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// AggregateFile is profile_export_aiperf.json (docs/artifacts.md) as a
// value: what a run's Summary writes (Encode) and what every reader of the
// file decodes (DecodeAggregateFile, ReadAggregateFile). Encode writes a
// decoded file back byte for byte when agentperf wrote it.
//
// The open parts (input_config, metadata.agentperf and keys the schema
// does not know) are maps of what encoding/json decodes with UseNumber
// (numbers are json.Number, their text kept); they are written with
// sorted keys, as the writer writes every map. metadata.dataset keeps its
// key order (AggregateMetadata.Dataset).
type AggregateFile struct {
	SchemaVersion string
	AiperfVersion string
	BenchmarkID   string
	// Stats are the top-level stat objects in file order: a per-record
	// metric's (StatObject with percentiles), a scalar's (unit and avg),
	// theoretical_prefix_cache_hit (unit, avg, count, sum). A top-level
	// object with a "unit" is one.
	Stats       []NamedStat
	InputConfig map[string]any
	// RunInfoID is run_info.benchmark_id.
	RunInfoID     string
	WasCancelled  bool
	ErrorSummary  []ErrorCount
	StartTime     string // naive local time; "" is left out
	EndTime       string
	WarmupMetrics []NamedStat
	Metadata      AggregateMetadata
	// Extra holds the other top-level keys (aiperf's branch_stats,
	// telemetry_data …), written after metadata.
	Extra map[string]any
}

// AggregateMetadata is the metadata object of the aggregate JSON.
type AggregateMetadata struct {
	Scenario string // "" is left out
	// SubmissionValid is nil when the file records no verdict.
	SubmissionValid *bool
	// SubmissionInvalidReasons is left out when nil ([] when empty).
	SubmissionInvalidReasons []string
	MetricDurationCoverage   []PhaseCoverage
	// Dataset is metadata.dataset as JSON, its keys in the order written
	// (nil is left out): InferenceX copies it as is into its result, and
	// so does agentperf report.
	Dataset json.RawMessage
	// The two overflow counts and skipped_subagent_requests are always
	// written.
	ContextOverflowCount       int
	WarmupContextOverflowCount int
	// RequestAccounting is nil when the file has none (aiperf's).
	RequestAccounting       *RequestAccounting
	SkippedSubagentRequests int
	// Agentperf is metadata.agentperf (always written, {} when nil).
	Agentperf map[string]any
	Warnings  []string // left out when empty
	// Extra holds the metadata keys the schema does not know, written
	// last.
	Extra map[string]any
}

// RequestAccounting is metadata.request_accounting: the buckets, whether
// they add up and, when not, why.
type RequestAccounting struct {
	Accounting
	AddsUp     bool
	CheckError string // "" is left out
}

// NamedStat is one stat object of the aggregate JSON with its key.
type NamedStat struct {
	Tag string
	StatObject
}

// StatObject is a stat object as written: its keys in aiperf's order,
// each left out when not Set.
type StatObject struct {
	Unit                                                          string
	Avg, P1, P5, P10, P25, P50, P75, P90, P95, P99, Min, Max, Std Num
	Count, Sum                                                    Num
}

// Num is a number of the aggregate JSON: absent, a whole number written
// as an integer, or a float written as Python's repr writes it.
type Num struct {
	f    float64
	i    int64
	kind uint8 // numAbsent, numInt, numFloat
}

const (
	numAbsent = iota
	numInt
	numFloat
)

// IntNum is the integer n.
func IntNum(n int64) Num { return Num{f: float64(n), i: n, kind: numInt} }

// FloatNum is the float f, absent when f is NaN or infinite (the writer
// leaves such values out).
func FloatNum(f float64) Num {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Num{}
	}
	return Num{f: f, kind: numFloat}
}

// numOf is f as an integer when asInt and f is whole, else as a float.
func numOf(f float64, asInt bool) Num {
	if asInt && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return IntNum(int64(f))
	}
	return FloatNum(f)
}

// Set reports whether the number is present.
func (n Num) Set() bool { return n.kind != numAbsent }

// Float returns the number (NaN when absent) and whether it is present.
func (n Num) Float() (float64, bool) {
	if n.kind == numAbsent {
		return math.NaN(), false
	}
	return n.f, true
}

// value is what appendJSON writes for n (nil when absent: left out).
func (n Num) value() any {
	switch n.kind {
	case numInt:
		return rawInt(n.i)
	case numFloat:
		return n.f
	}
	return nil
}

// Stat returns the top-level stat object tag.
func (a *AggregateFile) Stat(tag string) (StatObject, bool) {
	for i := range a.Stats {
		if a.Stats[i].Tag == tag {
			return a.Stats[i].StatObject, true
		}
	}
	return StatObject{}, false
}

// Value returns the statistic stat ("avg", "p99", …) of the top-level
// stat object tag, when the file has it as a number.
func (a *AggregateFile) Value(tag, stat string) (float64, bool) {
	st, _ := a.Stat(tag)
	return st.Get(stat).Float()
}

// statFields are the keys of a stat object in the order aiperf writes
// them.
var statFields = [...]string{"unit", "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std", "count", "sum"}

// num returns the field k of st (k one of statFields but unit), nil for
// another key.
func (st *StatObject) num(k string) *Num {
	switch k {
	case "avg":
		return &st.Avg
	case "p1":
		return &st.P1
	case "p5":
		return &st.P5
	case "p10":
		return &st.P10
	case "p25":
		return &st.P25
	case "p50":
		return &st.P50
	case "p75":
		return &st.P75
	case "p90":
		return &st.P90
	case "p95":
		return &st.P95
	case "p99":
		return &st.P99
	case "min":
		return &st.Min
	case "max":
		return &st.Max
	case "std":
		return &st.Std
	case "count":
		return &st.Count
	case "sum":
		return &st.Sum
	}
	return nil
}

// Get returns the field k of st ("avg", "p50", "count" …; absent for
// "unit" and other keys).
func (st *StatObject) Get(k string) Num {
	if n := st.num(k); n != nil {
		return *n
	}
	return Num{}
}

// obj is st as the writer lays it out.
func (st *StatObject) obj() obj {
	o := obj{{"unit", st.Unit}}
	for _, k := range statFields[1:] {
		if n := st.num(k); n.Set() {
			o = append(o, kv{k, n.value()})
		}
	}
	return o
}

// statObject is the stat object of a per-record metric's Stat (min, max
// and sum as integers for a whole-number metric).
func statObject(m *Metric, s *Stat) StatObject {
	return StatObject{Unit: s.Unit, Avg: FloatNum(s.Avg),
		P1: FloatNum(s.P1), P5: FloatNum(s.P5), P10: FloatNum(s.P10), P25: FloatNum(s.P25), P50: FloatNum(s.P50),
		P75: FloatNum(s.P75), P90: FloatNum(s.P90), P95: FloatNum(s.P95), P99: FloatNum(s.P99),
		Min: numOf(s.Min, m.Int), Max: numOf(s.Max, m.Int), Std: FloatNum(s.Std), Count: IntNum(int64(s.Count)), Sum: numOf(s.Sum, m.Int)}
}

// scalarObject is the stat object of a scalar: its unit and avg.
func scalarObject(x *Scalar) StatObject {
	if x.Int {
		return StatObject{Unit: x.Unit, Avg: IntNum(x.IntValue)}
	}
	return StatObject{Unit: x.Unit, Avg: FloatNum(x.Value)}
}

// Encode writes a as profile_export_aiperf.json: indented by two spaces,
// the keys in the writer's order, a final newline.
func (a *AggregateFile) Encode() ([]byte, error) {
	top := obj{{"schema_version", a.SchemaVersion}, {"aiperf_version", a.AiperfVersion}, {"benchmark_id", a.BenchmarkID}}
	for i := range a.Stats {
		top = append(top, kv{a.Stats[i].Tag, a.Stats[i].obj()})
	}
	cfg := a.InputConfig
	if cfg == nil {
		cfg = map[string]any{}
	}
	top = append(top, kv{"input_config", cfg}, kv{"run_info", obj{{"benchmark_id", a.RunInfoID}}}, kv{"was_cancelled", a.WasCancelled})
	errs := make([]any, 0, len(a.ErrorSummary))
	for _, e := range a.ErrorSummary {
		d := obj{{"message", e.Message}}
		if e.Code != 0 {
			d = append(d, kv{"code", e.Code})
		}
		if e.Type != "" {
			d = append(d, kv{"type", e.Type})
		}
		if e.ServerType != "" {
			d = append(d, kv{"error_type", e.ServerType})
		}
		if e.Category != "" {
			d = append(d, kv{"details", obj{{"category", e.Category}}})
		}
		errs = append(errs, obj{{"error_details", d}, {"count", e.Count}})
	}
	top = append(top, kv{"error_summary", errs})
	if a.StartTime != "" {
		top = append(top, kv{"start_time", a.StartTime})
	}
	if a.EndTime != "" {
		top = append(top, kv{"end_time", a.EndTime})
	}
	if len(a.WarmupMetrics) > 0 {
		w := obj{}
		for i := range a.WarmupMetrics {
			w = append(w, kv{a.WarmupMetrics[i].Tag, a.WarmupMetrics[i].obj()})
		}
		top = append(top, kv{"warmup_metrics", w})
	}
	top = append(top, kv{"metadata", a.Metadata.obj()})
	top = appendKept(top, a.Extra)
	b, err := appendJSON(nil, top, 0)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", FileAggregateJSON, err)
	}
	return append(b, '\n'), nil
}

// obj is the metadata object as the writer lays it out.
func (md *AggregateMetadata) obj() obj {
	o := obj{}
	if md.Scenario != "" {
		o = append(o, kv{"scenario", md.Scenario})
	}
	if md.SubmissionValid != nil {
		o = append(o, kv{"submission_valid", *md.SubmissionValid})
	}
	if md.SubmissionInvalidReasons != nil {
		o = append(o, kv{"submission_invalid_reasons", md.SubmissionInvalidReasons})
	}
	if len(md.MetricDurationCoverage) > 0 {
		var cov []any
		for i := range md.MetricDurationCoverage {
			c := &md.MetricDurationCoverage[i]
			e := obj{}
			if c.PhaseName != "" {
				e = append(e, kv{"phase_name", c.PhaseName})
			}
			for _, r := range coverageRatios(c) {
				e = append(e, kv{r.key, *r.f})
			}
			cov = append(cov, e)
		}
		o = append(o, kv{"metric_duration_coverage", cov})
	}
	if md.Dataset != nil {
		o = append(o, kv{"dataset", md.Dataset})
	}
	o = append(o, kv{"context_overflow_count", md.ContextOverflowCount}, kv{"warmup_context_overflow_count", md.WarmupContextOverflowCount})
	if a := md.RequestAccounting; a != nil {
		acc := obj{}
		for _, c := range a.counts() {
			acc = append(acc, kv{c.key, *c.n})
		}
		acc = append(acc, kv{"adds_up", a.AddsUp})
		if a.CheckError != "" {
			acc = append(acc, kv{"check_error", a.CheckError})
		}
		o = append(o, kv{"request_accounting", acc})
	}
	o = append(o, kv{"skipped_subagent_requests", md.SkippedSubagentRequests})
	ap := md.Agentperf
	if ap == nil {
		ap = map[string]any{}
	}
	o = append(o, kv{"agentperf", ap})
	if len(md.Warnings) > 0 {
		o = append(o, kv{"warnings", md.Warnings})
	}
	return appendKept(o, md.Extra)
}

// ErrBadAggregate is wrapped by errors about an aggregate JSON that cannot
// be decoded.
var ErrBadAggregate = errors.New("malformed aggregate export")

// ReadAggregateFile decodes dir/profile_export_aiperf.json. A missing file
// is an error matching os.ErrNotExist; a malformed one wraps
// ErrBadAggregate and names the file and the field.
func ReadAggregateFile(dir string) (*AggregateFile, error) {
	path := filepath.Join(dir, FileAggregateJSON)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	a, err := DecodeAggregateFile(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadAggregate, path, err)
	}
	return a, nil
}

// DecodeAggregateFile decodes an aggregate JSON, as agentperf or aiperf
// writes it (docs/artifacts.md, "Reading the files back"): each key the
// schema knows must have its type (a number, string, bool, list or object
// as written, or null for nothing); a stat object's other keys and the
// other keys of the objects the schema types are ignored; the other
// top-level and metadata keys are kept in Extra. An error names the field.
func DecodeAggregateFile(data []byte) (*AggregateFile, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	doc, err := decodeOrdered(d)
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w (the file is cut short, or was not written by agentperf or aiperf)", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("text after the JSON object at byte %d", d.InputOffset())
	}
	top, ok := doc.(obj)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	a := &AggregateFile{}
	for _, e := range top {
		if err := a.decodeTop(e.k, e.v); err != nil {
			return nil, fmt.Errorf("%s: %w", e.k, err)
		}
	}
	if len(top) > 0 && len(a.Extra) == len(top) && !slices.ContainsFunc(top, func(e kv) bool {
		o, ok := e.v.(obj)
		return ok && hasKey(o, "avg")
	}) {
		keys := make([]string, 0, 3)
		for _, e := range top[:min(len(top), 3)] {
			keys = append(keys, strconv.Quote(e.k))
		}
		return nil, fmt.Errorf("not an aggregate export: none of its keys (%s…) is one an aggregate has (aiperf_version, benchmark_id, metadata, a metric's statistics {\"unit\": …}); was another file written under this name?", strings.Join(keys, ", "))
	}
	return a, nil
}

// decodeTop decodes the top-level member k.
func (a *AggregateFile) decodeTop(k string, v any) error {
	var err error
	switch k {
	case "schema_version":
		a.SchemaVersion, err = asString(v)
	case "aiperf_version":
		a.AiperfVersion, err = asString(v)
	case "benchmark_id":
		a.BenchmarkID, err = asString(v)
	case "input_config":
		a.InputConfig, err = asMap(v)
	case "run_info":
		var o obj
		if o, err = asObj(v); err == nil {
			for _, e := range o {
				if e.k == "benchmark_id" {
					if a.RunInfoID, err = asString(e.v); err != nil {
						return fmt.Errorf("benchmark_id: %w", err)
					}
				}
			}
		}
	case "was_cancelled":
		a.WasCancelled, err = asBool(v)
	case "error_summary":
		a.ErrorSummary, err = decodeErrorSummary(v)
	case "start_time":
		a.StartTime, err = asString(v)
	case "end_time":
		a.EndTime, err = asString(v)
	case "warmup_metrics":
		var o obj
		if o, err = asObj(v); err == nil {
			a.WarmupMetrics = nil
			for _, e := range o {
				st, err := decodeStat(e.v)
				if err != nil {
					return fmt.Errorf("%s: %w", e.k, err)
				}
				a.WarmupMetrics = append(a.WarmupMetrics, NamedStat{e.k, st})
			}
		}
	case "metadata":
		err = a.Metadata.decode(v)
	default:
		if o, ok := v.(obj); ok && hasKey(o, "unit") {
			st, err := decodeStat(o)
			if err != nil {
				return err
			}
			a.Stats = append(a.Stats, NamedStat{k, st})
			return nil
		}
		if a.Extra == nil {
			a.Extra = map[string]any{}
		}
		a.Extra[k] = plain(v)
	}
	return err
}

// decode decodes the metadata object v.
func (md *AggregateMetadata) decode(v any) error {
	o, err := asObj(v)
	if err != nil {
		return err
	}
	for _, e := range o {
		if err := md.decodeKey(e.k, e.v); err != nil {
			return fmt.Errorf("%s: %w", e.k, err)
		}
	}
	return nil
}

func (md *AggregateMetadata) decodeKey(k string, v any) error {
	var err error
	switch k {
	case "scenario":
		md.Scenario, err = asString(v)
	case "submission_valid":
		md.SubmissionValid = nil
		if _, null := v.(nilValue); !null {
			var b bool
			b, err = asBool(v)
			md.SubmissionValid = &b
		}
	case "submission_invalid_reasons":
		md.SubmissionInvalidReasons, err = asStrings(v)
	case "metric_duration_coverage":
		md.MetricDurationCoverage, err = decodeCoverage(v)
	case "dataset":
		md.Dataset = nil
		if _, null := v.(nilValue); !null {
			if _, err = asObj(v); err == nil {
				md.Dataset, err = appendJSON(nil, v, 0)
			}
		}
	case "context_overflow_count":
		md.ContextOverflowCount, err = asInt(v)
	case "warmup_context_overflow_count":
		md.WarmupContextOverflowCount, err = asInt(v)
	case "request_accounting":
		md.RequestAccounting, err = decodeAccounting(v)
	case "skipped_subagent_requests":
		md.SkippedSubagentRequests, err = asInt(v)
	case "agentperf":
		md.Agentperf, err = asMap(v)
	case "warnings":
		md.Warnings, err = asStrings(v)
	default:
		if md.Extra == nil {
			md.Extra = map[string]any{}
		}
		md.Extra[k] = plain(v)
	}
	return err
}

// intField and floatField name a field of a schema type by its JSON key,
// so that its encoder and decoder share one list of keys.
type (
	intField struct {
		key string
		n   *int
	}
	floatField struct {
		key string
		f   *float64
	}
)

// counts are the buckets of request_accounting, in the order written.
func (a *RequestAccounting) counts() []intField {
	return []intField{{"sent", &a.Sent}, {"profiling_ok", &a.ProfilingOK}, {"profiling_errors", &a.ProfilingErrors},
		{"warmup_ok", &a.WarmupOK}, {"warmup_errors", &a.WarmupErrors}, {"context_overflows", &a.Overflows},
		{"cancelled", &a.Cancelled}}
}

func decodeAccounting(v any) (*RequestAccounting, error) {
	if _, null := v.(nilValue); null {
		return nil, nil
	}
	o, err := asObj(v)
	if err != nil {
		return nil, err
	}
	a := &RequestAccounting{}
	counts := a.counts()
	for _, e := range o {
		var err error
		switch e.k {
		case "adds_up":
			a.AddsUp, err = asBool(e.v)
		case "check_error":
			a.CheckError, err = asString(e.v)
		default:
			for _, c := range counts {
				if c.key == e.k {
					*c.n, err = asInt(e.v)
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.k, err)
		}
	}
	return a, nil
}

// coverageRatios are the numbers of a metric_duration_coverage entry, in
// the order written (after its phase_name).
func coverageRatios(c *PhaseCoverage) []floatField {
	return []floatField{{"expected_duration_seconds", &c.ExpectedDurationSeconds}, {"required_ratio", &c.RequiredRatio},
		{"ttft_ratio", &c.TTFTRatio}, {"inter_token_latency_ratio", &c.ITLRatio}, {"streaming_content_ratio", &c.ContentRatio}}
}

func decodeCoverage(v any) ([]PhaseCoverage, error) {
	l, err := asList(v)
	if err != nil {
		return nil, err
	}
	var out []PhaseCoverage
	for i, x := range l {
		o, err := asObj(x)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		var c PhaseCoverage
		ratios := coverageRatios(&c)
		for _, e := range o {
			var err error
			if e.k == "phase_name" {
				c.PhaseName, err = asString(e.v)
			}
			for _, r := range ratios {
				if r.key == e.k {
					*r.f, err = asFloat(e.v)
				}
			}
			if err != nil {
				return nil, fmt.Errorf("[%d].%s: %w", i, e.k, err)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func decodeErrorSummary(v any) ([]ErrorCount, error) {
	l, err := asList(v)
	if err != nil {
		return nil, err
	}
	out := []ErrorCount{}
	for i, x := range l {
		o, err := asObj(x)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		var c ErrorCount
		for _, e := range o {
			var err error
			switch e.k {
			case "count":
				c.Count, err = asInt(e.v)
			case "error_details":
				err = decodeErrorDetails(e.v, &c)
			}
			if err != nil {
				return nil, fmt.Errorf("[%d].%s: %w", i, e.k, err)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func decodeErrorDetails(v any, c *ErrorCount) error {
	o, err := asObj(v)
	if err != nil {
		return err
	}
	for _, e := range o {
		var err error
		switch e.k {
		case "message":
			c.Message, err = asString(e.v)
		case "code":
			c.Code, err = asInt(e.v)
		case "type":
			c.Type, err = asString(e.v)
		case "error_type":
			c.ServerType, err = asString(e.v)
		case "details":
			if d, ok := e.v.(obj); ok {
				for _, f := range d {
					if f.k == "category" {
						if c.Category, err = asString(f.v); err != nil {
							return fmt.Errorf("details.category: %w", err)
						}
					}
				}
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", e.k, err)
		}
	}
	return nil
}

// decodeStat decodes a stat object.
func decodeStat(v any) (StatObject, error) {
	var st StatObject
	o, err := asObj(v)
	if err != nil {
		return st, err
	}
	for _, e := range o {
		if e.k == "unit" {
			if st.Unit, err = asString(e.v); err != nil {
				return st, fmt.Errorf("unit: %w", err)
			}
			continue
		}
		n := st.num(e.k)
		if n == nil {
			continue // not a key of aiperf's stat object: ignored
		}
		if *n, err = asNum(e.v); err != nil {
			return st, fmt.Errorf("%s: %w", e.k, err)
		}
	}
	return st, nil
}

// The value readers below take what decodeOrdered gives (obj, []any,
// json.Number, string, bool, nilValue); null reads as the zero value.

func typeOf(v any) string {
	switch x := v.(type) {
	case obj:
		return "an object"
	case []any:
		return "a list"
	case json.Number:
		return "the number " + string(x)
	case string:
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	}
	return "null"
}

// as reads a value of type T, or null (T's zero value); want words T
// for the error.
func as[T any](v any, want string) (T, error) {
	switch x := v.(type) {
	case T:
		return x, nil
	case nilValue:
		var zero T
		return zero, nil
	}
	var zero T
	return zero, fmt.Errorf("expected %s, found %s", want, typeOf(v))
}

func asString(v any) (string, error) { return as[string](v, "a string") }

func asBool(v any) (bool, error) { return as[bool](v, "true or false") }

// asNum reads a number, keeping whether it was written as an integer.
func asNum(v any) (Num, error) {
	switch x := v.(type) {
	case nilValue:
		return Num{}, nil
	case json.Number:
		if !strings.ContainsAny(string(x), ".eE") {
			if i, err := x.Int64(); err == nil {
				return IntNum(i), nil
			}
		}
		f, err := x.Float64()
		if err != nil {
			return Num{}, fmt.Errorf("the number %s is out of range", x)
		}
		return Num{f: f, kind: numFloat}, nil
	}
	return Num{}, fmt.Errorf("expected a number, found %s", typeOf(v))
}

func asFloat(v any) (float64, error) {
	n, err := asNum(v)
	return n.f, err
}

// asInt reads a whole number (written as an integer or as a float).
func asInt(v any) (int, error) {
	n, err := asNum(v)
	if err != nil {
		return 0, err
	}
	if n.kind == numFloat {
		if n.f != math.Trunc(n.f) || math.Abs(n.f) > 1<<53 {
			return 0, fmt.Errorf("expected a whole number, found %v", n.f)
		}
		return int(n.f), nil
	}
	return int(n.i), nil
}

func asObj(v any) (obj, error) { return as[obj](v, "an object") }

func asList(v any) ([]any, error) { return as[[]any](v, "a list") }

func asStrings(v any) ([]string, error) {
	if _, null := v.(nilValue); null {
		return nil, nil
	}
	l, err := asList(v)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(l))
	for i, x := range l {
		s, err := asString(x)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func asMap(v any) (map[string]any, error) {
	if _, null := v.(nilValue); null {
		return nil, nil
	}
	if _, ok := v.(obj); !ok {
		return nil, fmt.Errorf("expected an object, found %s", typeOf(v))
	}
	return plain(v).(map[string]any), nil
}

// plain turns a decodeOrdered value into what encoding/json gives with
// UseNumber: maps, []any, json.Number, string, bool, nil.
func plain(v any) any {
	switch x := v.(type) {
	case obj:
		m := make(map[string]any, len(x))
		for _, e := range x {
			m[e.k] = plain(e.v)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = plain(x[i])
		}
		return out
	case nilValue:
		return nil
	}
	return v
}

func hasKey(o obj, k string) bool {
	for _, e := range o {
		if e.k == k {
			return true
		}
	}
	return false
}
