package gputelemetry

import (
	"bytes"
	"fmt"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// GPUID identifies one GPU on one exporter.
type GPUID struct {
	// Endpoint is the exporter's URL.
	Endpoint string `json:"endpoint"`
	// Vendor is the exporter's kind.
	Vendor Vendor `json:"vendor"`
	// Index is the exporter's GPU index (DCGM's gpu label, AMD's gpu_id,
	// with the partition after a dot when AMD reports one).
	Index string `json:"index"`
}

// Reading is one GPU's values on one page: NaN where the page has no
// value for the field.
type Reading struct {
	GPU    GPUID
	UUID   string
	Model  string
	Values [numFields]float64
}

// Page is one parsed exporter page.
type Page struct {
	// Readings are sorted by GPU index.
	Readings []Reading
	// Ignored names the families of a known name that could not be read
	// (a histogram or summary where a gauge was expected), sorted.
	Ignored []string
}

// ParsePage reads one Prometheus text page of a DCGM or AMD exporter.
// Families it does not know are skipped; a known family of an unexpected
// type is named in Page.Ignored and skipped. A page that is not
// Prometheus text is an error.
func ParsePage(endpoint string, body []byte) (Page, error) {
	tp := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := tp.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		return Page{}, fmt.Errorf("parse Prometheus text: %w", err)
	}
	type acc struct {
		rank [numFields]int
		sum  [numFields]float64
		n    [numFields]int
		r    Reading
	}
	byGPU := map[GPUID]*acc{}
	var ignored []string
	for name, mf := range mfs {
		srcs := lookup(name)
		if len(srcs) == 0 {
			continue
		}
		for _, m := range mf.GetMetric() {
			v, ok := value(mf.GetType(), m)
			if !ok {
				ignored = append(ignored, name)
				break
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			for _, s := range srcs {
				if s.labelName != "" && labels[s.labelName] != s.labelValue {
					continue
				}
				gl := gpuLabels[s.vendor]
				id := GPUID{Endpoint: endpoint, Vendor: s.vendor, Index: labels[gl.index]}
				if p := labels[gl.partition]; gl.partition != "" && p != "" && p != "0" {
					id.Index += "." + p
				}
				if id.Index == "" {
					id.Index = "?"
				}
				a := byGPU[id]
				if a == nil {
					a = &acc{r: Reading{GPU: id}}
					for f := range a.rank {
						a.rank[f] = math.MaxInt
					}
					byGPU[id] = a
				}
				if u := labels[gl.uuid]; u != "" {
					a.r.UUID = u
				}
				if md := labels[gl.model]; md != "" {
					a.r.Model = md
				}
				f := s.field
				switch {
				case s.rank < a.rank[f]:
					a.rank[f], a.sum[f], a.n[f] = s.rank, v*s.scale, 1
				case s.rank == a.rank[f]:
					a.sum[f] += v * s.scale
					a.n[f]++
				}
			}
		}
	}
	page := Page{Readings: make([]Reading, 0, len(byGPU))}
	for _, a := range byGPU {
		for f := range a.r.Values {
			a.r.Values[f] = math.NaN()
			if a.n[f] > 0 {
				a.r.Values[f] = a.sum[f] / float64(a.n[f])
			}
		}
		page.Readings = append(page.Readings, a.r)
	}
	sort.Slice(page.Readings, func(i, j int) bool { return lessIndex(page.Readings[i].GPU, page.Readings[j].GPU) })
	sort.Strings(ignored)
	page.Ignored = ignored
	return page, nil
}

// value is a sample's value when the family is of a scalar type.
func value(t dto.MetricType, m *dto.Metric) (float64, bool) {
	switch t {
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue(), true
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue(), true
	case dto.MetricType_UNTYPED:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// lessIndex orders GPUs by endpoint, vendor, then index numerically
// where both indexes are numbers.
func lessIndex(a, b GPUID) bool {
	if a.Endpoint != b.Endpoint {
		return a.Endpoint < b.Endpoint
	}
	if a.Vendor != b.Vendor {
		return a.Vendor < b.Vendor
	}
	if len(a.Index) != len(b.Index) && isDigits(a.Index) && isDigits(b.Index) {
		return len(a.Index) < len(b.Index)
	}
	return a.Index < b.Index
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
