package servermetrics

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricType is the export type of a metric family.
type metricType uint8

const (
	typeGauge metricType = iota
	typeCounter
	typeHistogram
	typeUnknown
)

func (t metricType) String() string {
	switch t {
	case typeCounter:
		return "counter"
	case typeHistogram:
		return "histogram"
	case typeUnknown:
		return "unknown"
	}
	return "gauge"
}

// gaugeLike reports whether samples of t are summarised as gauges.
func (t metricType) gaugeLike() bool { return t == typeGauge || t == typeUnknown }

type labelPair struct{ name, value string }

// parsedSeries is one series of one scrape.
type parsedSeries struct {
	labels []labelPair // sorted by name, without le/quantile
	value  float64     // gauge, counter, unknown
	// histogram: cumulative bucket counts by upper bound (ascending, +Inf
	// included when present), sample sum and count.
	les    []float64
	counts []float64
	sum    float64
	count  float64
}

// parsedFamily is one metric family of one scrape, already renamed to its
// export name (counters without _total).
type parsedFamily struct {
	name   string
	typ    metricType
	help   string
	series []parsedSeries
}

// parser converts Prometheus text exposition into parsedFamily values. It is
// not safe for concurrent use.
type parser struct {
	tp expfmt.TextParser
}

func newParser() *parser {
	return &parser{tp: expfmt.NewTextParser(model.UTF8Validation)}
}

// parse reads one /metrics page (Prometheus text format 0.0.4).
//
//   - Counters lose their _total suffix; untyped families whose name ends in
//     _total are treated as counters (exporters that omit TYPE lines).
//   - Other untyped families are "unknown" (summarised as gauges).
//   - Summaries become two counters, <name>_sum and <name>_count (aiperf has
//     no summary type; vLLM and SGLang export none).
//   - The <name>_created gauges that Python's prometheus_client writes next
//     to each counter and histogram are dropped (they are timestamps).
//
// The result is sorted by family name, series by label set.
func (p *parser) parse(body []byte) ([]parsedFamily, error) {
	mfs, err := p.tp.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("parse Prometheus text: %w", err)
	}
	// Bases of counters and histograms, to recognise their _created siblings.
	bases := map[string]bool{}
	for name, mf := range mfs {
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			bases[strings.TrimSuffix(name, "_total")] = true
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM, dto.MetricType_SUMMARY:
			bases[name] = true
		}
	}
	out := make([]parsedFamily, 0, len(mfs))
	for name, mf := range mfs {
		if b, ok := strings.CutSuffix(name, "_created"); ok && bases[b] &&
			(mf.GetType() == dto.MetricType_GAUGE || mf.GetType() == dto.MetricType_UNTYPED) {
			continue
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			f := parsedFamily{name: strings.TrimSuffix(name, "_total"), typ: typeCounter, help: mf.GetHelp()}
			for _, m := range mf.GetMetric() {
				f.series = append(f.series, parsedSeries{labels: labelsOf(m), value: m.GetCounter().GetValue()})
			}
			out = append(out, f)
		case dto.MetricType_GAUGE:
			f := parsedFamily{name: name, typ: typeGauge, help: mf.GetHelp()}
			for _, m := range mf.GetMetric() {
				f.series = append(f.series, parsedSeries{labels: labelsOf(m), value: m.GetGauge().GetValue()})
			}
			out = append(out, f)
		case dto.MetricType_UNTYPED:
			f := parsedFamily{name: name, typ: typeUnknown, help: mf.GetHelp()}
			if b, ok := strings.CutSuffix(name, "_total"); ok {
				f.name, f.typ = b, typeCounter
			}
			for _, m := range mf.GetMetric() {
				f.series = append(f.series, parsedSeries{labels: labelsOf(m), value: m.GetUntyped().GetValue()})
			}
			out = append(out, f)
		case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
			f := parsedFamily{name: name, typ: typeHistogram, help: mf.GetHelp()}
			for _, m := range mf.GetMetric() {
				h := m.GetHistogram()
				ps := parsedSeries{labels: labelsOf(m), sum: h.GetSampleSum(), count: h.GetSampleCountFloat()}
				if ps.count == 0 {
					ps.count = float64(h.GetSampleCount())
				}
				bs := h.GetBucket()
				sort.SliceStable(bs, func(i, j int) bool { return bs[i].GetUpperBound() < bs[j].GetUpperBound() })
				for _, b := range bs {
					c := b.GetCumulativeCountFloat()
					if c == 0 {
						c = float64(b.GetCumulativeCount())
					}
					if n := len(ps.les); n > 0 && ps.les[n-1] == b.GetUpperBound() {
						ps.counts[n-1] = c // duplicate bucket line: last wins
						continue
					}
					ps.les = append(ps.les, b.GetUpperBound())
					ps.counts = append(ps.counts, c)
				}
				f.series = append(f.series, ps)
			}
			out = append(out, f)
		case dto.MetricType_SUMMARY:
			fs := parsedFamily{name: name + "_sum", typ: typeCounter, help: mf.GetHelp()}
			fc := parsedFamily{name: name + "_count", typ: typeCounter, help: mf.GetHelp()}
			for _, m := range mf.GetMetric() {
				s := m.GetSummary()
				fs.series = append(fs.series, parsedSeries{labels: labelsOf(m), value: s.GetSampleSum()})
				fc.series = append(fc.series, parsedSeries{labels: labelsOf(m), value: float64(s.GetSampleCount())})
			}
			out = append(out, fs, fc)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	// Two source families may map to one export name (x and x_total both
	// typed counter); merge them so every export name appears once.
	merged := out[:0]
	for _, f := range out {
		if n := len(merged); n > 0 && merged[n-1].name == f.name {
			if merged[n-1].typ == f.typ {
				merged[n-1].series = append(merged[n-1].series, f.series...)
			}
			continue
		}
		merged = append(merged, f)
	}
	for i := range merged {
		ss := merged[i].series
		sort.SliceStable(ss, func(a, b int) bool { return labelKey(ss[a].labels) < labelKey(ss[b].labels) })
	}
	return merged, nil
}

func labelsOf(m *dto.Metric) []labelPair {
	lps := m.GetLabel()
	if len(lps) == 0 {
		return nil
	}
	out := make([]labelPair, 0, len(lps))
	for _, lp := range lps {
		out = append(out, labelPair{lp.GetName(), lp.GetValue()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// labelKey is a canonical string for a sorted label set.
func labelKey(ls []labelPair) string {
	if len(ls) == 0 {
		return ""
	}
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.name)
		b.WriteByte(0xfe)
		b.WriteString(l.value)
		b.WriteByte(0xff)
	}
	return b.String()
}

// formatLE renders a bucket upper bound as a buckets key ("0.05", "+Inf").
func formatLE(le float64) string {
	if math.IsInf(le, 1) {
		return "+Inf"
	}
	return fmt.Sprint(le)
}
