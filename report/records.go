package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/agentperf/agentperf/metrics"
)

// ErrBadRecords is wrapped by errors about a malformed profile_export.jsonl.
var ErrBadRecords = errors.New("malformed record export")

// record is one kept request as InferenceX's processor sees it: a
// profiling-phase record (a missing phase counts as profiling) without an
// error. Absent metric values are NaN.
type record struct {
	startNs, endNs int64 // 0 when absent
	ttftMs         float64
	e2elMs         float64
	itlMs          float64
	fullITLMs      float64 // full_response_inter_token_latency
	isl, osl       float64
	cacheRead      float64 // usage_prompt_cache_read_tokens
	expectedOut    float64 // metadata.recorded_output_tokens (agentperf)
	hit, total     int64   // theoretical prefix-cache blocks; total 0 when absent
}

// records is what readRecords keeps of profile_export.jsonl.
type records struct {
	// Total is the number of records (non-blank lines).
	Total int
	// Warmup counts records of a phase other than profiling; Errored
	// those with an error (cancelled requests included). A warmup record
	// with an error is in both.
	Warmup, Errored int
	// Profiling counts profiling-phase records, kept or not (v2's
	// num_requests_total).
	Profiling int
	// Categories counts errored records by category.
	Categories map[string]int
	// MissingTokens counts kept records without input or output length.
	MissingTokens int
	// MissingTimes counts kept records without request_start_ns or
	// request_end_ns.
	MissingTimes int
	kept         []record
}

// lineJSON is the subset of a record line read here.
type lineJSON struct {
	Metadata struct {
		Phase          *string         `json:"benchmark_phase"`
		RequestStartNs json.RawMessage `json:"request_start_ns"`
		RequestEndNs   json.RawMessage `json:"request_end_ns"`
		RecordedOut    json.RawMessage `json:"recorded_output_tokens"`
		HitBlocks      json.RawMessage `json:"theoretical_hit_blocks"`
		TotalBlocks    json.RawMessage `json:"theoretical_total_blocks"`
	} `json:"metadata"`
	Metrics map[string]json.RawMessage `json:"metrics"`
	Error   json.RawMessage            `json:"error"`
}

// readRecords parses profile_export.jsonl. name is used in errors, which
// give the line number. A record is kept when its phase is profiling (or
// missing) and its error is absent or empty; every other record is
// counted, never lost.
//
// With tornTail (a .partial file that does not end with a newline: the
// process died mid-write) a malformed last line is left out instead.
func readRecords(r io.Reader, name string, tornTail bool) (*records, error) {
	rs := &records{Categories: map[string]int{}}
	if _, err := metrics.ReadJSONL(r, name, tornTail, ErrBadRecords, rs.add); err != nil {
		return nil, err
	}
	return rs, nil
}

func (rs *records) add(b []byte) error {
	var l lineJSON
	if err := json.Unmarshal(b, &l); err != nil {
		return err
	}
	rs.Total++
	warm := l.Metadata.Phase != nil && *l.Metadata.Phase != "profiling"
	if warm {
		rs.Warmup++
	} else {
		rs.Profiling++
	}
	errored, cat, err := errorCategory(l.Error)
	if err != nil {
		return fmt.Errorf("error: %v", err)
	}
	if errored {
		rs.Errored++
		rs.Categories[cat]++
	}
	if warm || errored {
		return nil
	}
	rec := record{}
	var ok bool
	if rec.startNs, ok = intOf(l.Metadata.RequestStartNs); !ok {
		rec.startNs = 0
	}
	if rec.endNs, ok = intOf(l.Metadata.RequestEndNs); !ok {
		rec.endNs = 0
	}
	if rec.startNs == 0 || rec.endNs == 0 {
		rs.MissingTimes++
	}
	eo, ok := intOf(l.Metadata.RecordedOut)
	rec.expectedOut = math.NaN()
	if ok && eo > 0 {
		rec.expectedOut = float64(eo)
	}
	if t, ok := intOf(l.Metadata.TotalBlocks); ok && t > 0 {
		if h, ok := intOf(l.Metadata.HitBlocks); ok && h >= 0 && h <= t {
			rec.hit, rec.total = h, t
		}
	}
	for _, m := range []struct {
		tag string
		dst *float64
	}{
		{"time_to_first_token", &rec.ttftMs}, {"request_latency", &rec.e2elMs},
		{"inter_token_latency", &rec.itlMs}, {"full_response_inter_token_latency", &rec.fullITLMs},
		{"input_sequence_length", &rec.isl}, {"output_sequence_length", &rec.osl},
		{"usage_prompt_cache_read_tokens", &rec.cacheRead},
	} {
		v, err := metricValue(l.Metrics[m.tag])
		if err != nil {
			return fmt.Errorf("metrics.%s: %v", m.tag, err)
		}
		*m.dst = v
	}
	if math.IsNaN(rec.isl) || math.IsNaN(rec.osl) {
		rs.MissingTokens++
	}
	rs.kept = append(rs.kept, rec)
	return nil
}

// metricValue decodes a metric as {value, unit} or a bare number; absent,
// null, list or non-finite values are NaN. A value of another type is an
// error.
func metricValue(raw json.RawMessage) (float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' {
		return math.NaN(), nil
	}
	if raw[0] == '{' {
		var o struct {
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(raw, &o); err != nil {
			return math.NaN(), err
		}
		raw = bytes.TrimSpace(o.Value)
		if len(raw) == 0 || raw[0] == 'n' || raw[0] == '[' {
			return math.NaN(), nil
		}
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return math.NaN(), fmt.Errorf("value %.40q is not a number", raw)
	}
	if math.IsInf(f, 0) {
		return math.NaN(), nil
	}
	return f, nil
}

// intOf decodes an integer (a float with no fraction is accepted).
func intOf(raw json.RawMessage) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return int64(f), true
}

// errorCategory reports whether a record's error field marks a failure
// (present and not null, false, 0, "" or empty) and its category: the
// first non-empty of type, error_type, code, class and status, else the
// first line of the message up to its first colon (at most 120
// characters), else "unknown".
func errorCategory(raw json.RawMessage) (bool, string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false, "", nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, "", err
	}
	var message string
	switch t := v.(type) {
	case nil:
		return false, "", nil
	case bool:
		if !t {
			return false, "", nil
		}
		message = "True"
	case float64:
		if t == 0 {
			return false, "", nil
		}
		message = strconv.FormatFloat(t, 'f', -1, 64)
	case string:
		if t == "" {
			return false, "", nil
		}
		message = t
	case []any:
		if len(t) == 0 {
			return false, "", nil
		}
		message = string(raw)
	case map[string]any:
		if len(t) == 0 {
			return false, "", nil
		}
		for _, k := range []string{"type", "error_type", "code", "class", "status"} {
			if s := scalarString(t[k]); s != "" {
				return true, s, nil
			}
		}
		message = scalarString(t["message"])
		if message == "" {
			message = scalarString(t["error"])
		}
	}
	message = strings.TrimSpace(message)
	if message == "" {
		return true, "unknown", nil
	}
	first, _, _ := strings.Cut(message, "\n")
	first, _, _ = strings.Cut(first, ":")
	if first == "" {
		return true, "unknown", nil
	}
	if r := []rune(first); len(r) > 120 {
		first = string(r[:120])
	}
	return true, first, nil
}

// scalarString formats a JSON scalar (strings as they are, numbers
// without a trailing .0, booleans as Python prints them); other values
// and null give "".
func scalarString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case bool:
		if t {
			return "True"
		}
		return "False"
	}
	return ""
}
