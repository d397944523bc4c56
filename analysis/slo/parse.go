package slo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentperf/agentperf/metrics"
)

// Op is a comparison.
type Op uint8

// Comparisons.
const (
	LE Op = iota // <=
	LT           // <
	GE           // >=
	GT           // >
)

func (o Op) String() string { return [...]string{"<=", "<", ">=", ">"}[o] }

// holds reports whether v op threshold.
func (o Op) holds(v, threshold float64) bool {
	switch o {
	case LE:
		return v <= threshold
	case LT:
		return v < threshold
	case GE:
		return v >= threshold
	default:
		return v > threshold
	}
}

// Kinds of metric.
type kind uint8

const (
	kindRecord kind = iota // a per-record metric with a statistic
	kindErrors             // the error share (%)
	kindRate               // a run throughput
)

// Term is one objective: Metric Stat Op Threshold.
type Term struct {
	// Metric is the export tag (time_to_first_token) or run figure
	// (errors, request_throughput).
	Metric string
	// Stat is the statistic of a per-request metric (p99, avg, …); empty
	// for a run figure.
	Stat string
	Op   Op
	// Threshold is in the export's unit: ms for times, percent for
	// shares, tokens, tokens/sec.
	Threshold float64
	// Unit is the export's unit of Metric ("ms", "%", "tokens/sec", …).
	Unit string
	// Text is the term as written; Pos its byte offset in the expression.
	Text string
	Pos  int

	kind   kind
	metric int // index into metrics.Metrics for kindRecord
}

// PerRequest reports whether the term applies to each request (goodput).
func (t *Term) PerRequest() bool { return t.kind == kindRecord }

// Name is the term's metric and statistic as the export names them
// (time_to_first_token.p99, errors).
func (t *Term) Name() string {
	if t.Stat == "" {
		return t.Metric
	}
	return t.Metric + "." + t.Stat
}

// String writes the term in canonical form (export names, export unit).
func (t Term) String() string {
	v := strconv.FormatFloat(t.Threshold, 'g', -1, 64)
	switch t.Unit {
	case "ms", "%":
		v += t.Unit
	}
	return t.Name() + t.Op.String() + v
}

// SLO is a parsed objective: every term must hold.
type SLO struct {
	Terms []Term
	// Text is the expression as given.
	Text string
}

// String is the canonical form of the objective; Parse(s.String())
// gives the same terms.
func (s SLO) String() string {
	parts := make([]string, len(s.Terms))
	for i, t := range s.Terms {
		parts[i] = t.String()
	}
	return strings.Join(parts, ",")
}

// NeedsStreaming lists the terms (as written) whose metric only a
// streamed response has (metrics.StreamingOnly: TTFT, ITL, …). A run
// without streaming has no value for them, so judging it on them is a
// usage error, found before any run.
func (s SLO) NeedsStreaming() []string {
	var out []string
	for _, t := range s.Terms {
		if t.kind == kindRecord && metrics.StreamingOnly(t.Metric) {
			out = append(out, t.Text)
		}
	}
	return out
}

// SyntaxError is a malformed objective: what is wrong and where.
type SyntaxError struct {
	Expr string
	Pos  int // byte offset of the problem
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("SLO %q, column %d: %s", e.Expr, e.Pos+1, e.Msg)
}

// aliases are the short names of per-request metrics.
var aliases = map[string]string{
	"ttft":    "time_to_first_token",
	"ttst":    "time_to_second_token",
	"ttfo":    "time_to_first_output_token",
	"itl":     "inter_token_latency",
	"tpot":    "time_per_output_token",
	"e2el":    "request_latency",
	"e2e":     "request_latency",
	"latency": "request_latency",
}

// runFigures are the metrics without a statistic, with their units.
var runFigures = map[string]string{
	"errors":                  "%",
	"request_throughput":      "requests/sec",
	"output_token_throughput": "tokens/sec",
	"input_token_throughput":  "tokens/sec",
	"total_token_throughput":  "tokens/sec",
}

// Stats are the statistics a per-request metric takes.
var Stats = []string{"avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99"}

func knownStat(s string) bool {
	for _, x := range Stats {
		if x == s {
			return true
		}
	}
	return false
}

// timeUnits scale a threshold to milliseconds.
var timeUnits = map[string]float64{"s": 1000, "ms": 1, "us": 1e-3, "µs": 1e-3}

// Parse reads an objective (see the package documentation). An empty
// expression is an error, as is a metric named twice with the same
// statistic.
func Parse(expr string) (SLO, error) {
	s := SLO{Text: expr}
	if strings.TrimSpace(expr) == "" {
		return s, &SyntaxError{expr, 0, "empty objective: give terms such as ttft.p99<=2s,itl.p99<=50ms,errors<=1%"}
	}
	seen := map[string]int{}
	pos := 0
	for _, part := range strings.Split(expr, ",") {
		t, err := parseTerm(expr, part, pos)
		if err != nil {
			return SLO{Text: expr}, err
		}
		key := t.Name() + t.Op.String()[:1]
		if p, dup := seen[key]; dup {
			return SLO{Text: expr}, &SyntaxError{expr, t.Pos, fmt.Sprintf("%s is bounded twice in the same direction (first at column %d): keep one", t.Name(), p+1)}
		}
		seen[key] = t.Pos
		s.Terms = append(s.Terms, t)
		pos += len(part) + 1
	}
	return s, nil
}

// parseTerm parses part, which starts at byte off of expr.
func parseTerm(expr, part string, off int) (Term, error) {
	bad := func(at int, format string, args ...any) (Term, error) {
		return Term{}, &SyntaxError{expr, off + at, fmt.Sprintf(format, args...)}
	}
	i := 0
	skip := func() {
		for i < len(part) && (part[i] == ' ' || part[i] == '\t') {
			i++
		}
	}
	skip()
	start := i
	if start == len(part) {
		return bad(start, "empty term (two commas, or a comma at an end)")
	}
	for i < len(part) && (isLetter(part[i]) || part[i] == '_' || part[i] == '.' || (i > start && isDigit(part[i]))) {
		i++
	}
	name := part[start:i]
	if name == "" {
		return bad(start, "expected a metric name such as ttft.p99, found %q", firstRune(part[start:]))
	}
	t := Term{Pos: off + start}
	metric, stat, hasStat := strings.Cut(name, ".")
	statAt := start + len(metric) + 1
	if a, ok := aliases[metric]; ok {
		metric = a
	}
	if u, ok := runFigures[metric]; ok {
		if hasStat {
			return bad(statAt, "%s is a run figure and takes no statistic (write %s<=…)", metric, metric)
		}
		t.Metric, t.Unit, t.kind = metric, u, kindRate
		if metric == "errors" {
			t.kind = kindErrors
		}
	} else {
		idx := -1
		for k := range metrics.Metrics {
			if metrics.Metrics[k].Tag == metric {
				idx = k
			}
		}
		if idx < 0 || metric == "error_isl" {
			return bad(start, "unknown metric %q: use ttft, ttst, ttfo, itl, tpot, e2el, a record metric of profile_export_aiperf.json (time_to_first_token, …) or errors, request_throughput, output_token_throughput, input_token_throughput, total_token_throughput", metric)
		}
		if !hasStat {
			return bad(start+len(name), "%s needs a statistic: %s.p99, .p50, .avg, … (one of %s)", name, name, strings.Join(Stats, " "))
		}
		if !knownStat(stat) {
			return bad(statAt, "unknown statistic %q: use one of %s", stat, strings.Join(Stats, " "))
		}
		t.Metric, t.Stat, t.Unit, t.kind, t.metric = metric, stat, metrics.Metrics[idx].Unit, kindRecord, idx
	}
	skip()
	opAt := i
	switch {
	case strings.HasPrefix(part[i:], "<="):
		t.Op, i = LE, i+2
	case strings.HasPrefix(part[i:], ">="):
		t.Op, i = GE, i+2
	case strings.HasPrefix(part[i:], "<"):
		t.Op, i = LT, i+1
	case strings.HasPrefix(part[i:], ">"):
		t.Op, i = GT, i+1
	default:
		found := "the end of the term"
		if i < len(part) {
			found = fmt.Sprintf("%q", firstRune(part[i:]))
			switch firstRune(part[i:]) {
			case "≤":
				found += " (write <=)"
			case "≥":
				found += " (write >=)"
			}
		}
		return bad(opAt, "expected a comparison (<=, <, >=, >) after %s, found %s", name, found)
	}
	skip()
	numAt := i
	for i < len(part) && (isDigit(part[i]) || part[i] == '.' || ((part[i] == 'e' || part[i] == 'E') && i+1 < len(part) && (isDigit(part[i+1]) || part[i+1] == '-' || part[i+1] == '+')) ||
		((part[i] == '-' || part[i] == '+') && i > numAt && (part[i-1] == 'e' || part[i-1] == 'E'))) {
		i++
	}
	num := part[numAt:i]
	v, err := strconv.ParseFloat(num, 64)
	if num == "" || err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return bad(numAt, "expected a non-negative number after %s, found %q", t.Op, strings.TrimSpace(part[numAt:]))
	}
	unitAt := i
	for i < len(part) && part[i] != ' ' && part[i] != '\t' {
		i++
	}
	unit := part[unitAt:i]
	skip()
	if i < len(part) {
		return bad(i, "unexpected text %q after the threshold (terms are separated by commas)", part[i:])
	}
	switch {
	case t.Unit == "ms":
		scale, ok := timeUnits[unit]
		if !ok {
			if unit == "" {
				return bad(unitAt, "%s is a time: give the threshold a unit (s, ms or us), e.g. %s%s%sms", name, name, t.Op, num)
			}
			return bad(unitAt, "unknown time unit %q: use s, ms or us", unit)
		}
		v *= scale
	case t.Unit == "%":
		if unit != "%" {
			return bad(unitAt, "%s is a share: write it in percent, e.g. %s%s%s%%", name, name, t.Op, num)
		}
		if v > 100 {
			return bad(numAt, "%s%% is more than 100%%", num)
		}
	default:
		if unit != "" {
			return bad(unitAt, "%s is in %s: give the threshold as a bare number, without %q", name, t.Unit, unit)
		}
	}
	t.Threshold = v
	t.Text = strings.TrimSpace(part)
	return t, nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// firstRune returns the first character of s (one byte of an invalid
// encoding): an error quotes "≤", not its first byte "\xe2".
func firstRune(s string) string {
	_, n := utf8.DecodeRuneInString(s)
	return s[:n]
}
