package servermetrics

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"

	"github.com/agentperf/agentperf/internal/atomicfile"
)

// File names written by Export.
const (
	JSONFile = "server_metrics_export.json"
	CSVFile  = "server_metrics_export.csv"
)

// Export writes server_metrics_export.json and server_metrics_export.csv to
// dir (each to a temporary file, then renamed) and returns the derived
// figures. It may be called after Final; calling it earlier exports what
// has been collected so far. Timeslices are written when
// Config.SliceDuration > 0.
//
// Export never panics: after an internal error (see Err), or on one while
// exporting, it writes an export without metrics whose summary names the
// error, and the returned Derived carries it in CollectionError.
func (s *Scraper) Export(dir string) (*Derived, error) {
	if s.Err() == nil {
		if d, err, ok := s.tryExport(dir); ok {
			return d, err
		}
	}
	ex := s.stoppedExport()
	d := Derive(ex)
	d.ScrapeFailures, d.Scrapes, d.LastScrapeError = s.counts()
	d.CollectionError = ex.Summary.CollectionError
	return &d, WriteFiles(dir, ex)
}

// tryExport is Export while the scraper works; ok is false when it hit an
// internal error (the scraper is then stopped).
func (s *Scraper) tryExport(dir string) (d *Derived, err error, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			s.disable("writing the export", v, debug.Stack())
			ok = false
		}
	}()
	ex := s.Snapshot()
	if s.Err() != nil {
		return nil, nil, false
	}
	dv := Derive(ex)
	dv.ScrapeFailures, dv.Scrapes, dv.LastScrapeError = s.counts()
	file := ex
	if s.cfg.SliceDuration <= 0 {
		file = withoutSlices(ex)
	}
	return &dv, WriteFiles(dir, file), true
}

// counts returns the failed and total fetches over all endpoints and the
// most recent failure's text.
func (s *Scraper) counts() (failed, total int, lastErr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lastNs int64
	for _, e := range s.st.eps {
		failed += e.failures
		total += e.fetches
		if e.failures > 0 && e.lastErr != "" && e.lastFailNs >= lastNs {
			lastErr, lastNs = e.url+": "+e.lastErr, e.lastFailNs
		}
	}
	return failed, total, lastErr
}

func withoutSlices(ex *Export) *Export {
	cp := *ex
	strip := func(ms map[string]*Metric) map[string]*Metric {
		out := make(map[string]*Metric, len(ms))
		for name, m := range ms {
			mc := *m
			mc.Series = make([]*Series, len(m.Series))
			for i, s := range m.Series {
				sc := *s
				sc.Timeslices = nil
				mc.Series[i] = &sc
			}
			out[name] = &mc
		}
		return out
	}
	cp.Metrics = strip(ex.Metrics)
	cp.WarmupMetrics = strip(ex.WarmupMetrics)
	return &cp
}

// WriteFiles writes ex as server_metrics_export.json (Encode) and .csv in
// dir.
func WriteFiles(dir string, ex *Export) error {
	b, err := Encode(ex)
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, JSONFile), b); err != nil {
		return err
	}
	var cb bytes.Buffer
	if err := WriteCSV(&cb, ex); err != nil {
		return fmt.Errorf("encode %s: %w", CSVFile, err)
	}
	return writeAtomic(filepath.Join(dir, CSVFile), cb.Bytes())
}

func writeAtomic(path string, data []byte) error { return atomicfile.WriteBytes(path, data) }

// Encode writes ex as server_metrics_export.json: the Export's fields by
// their JSON names, indented by two spaces, maps by sorted key, < > &
// unescaped, a final newline. Decode reads it back.
func Encode(ex *Export) ([]byte, error) {
	var jb bytes.Buffer
	enc := json.NewEncoder(&jb)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ex); err != nil {
		return nil, fmt.Errorf("encode %s: %w", JSONFile, err)
	}
	return jb.Bytes(), nil
}

// Decode decodes server_metrics_export.json as Encode writes it (and as
// aiperf writes it: keys the Export does not have are ignored). An error
// names the field whose value has the wrong type.
func Decode(data []byte) (*Export, error) {
	var ex Export
	if err := json.Unmarshal(data, &ex); err != nil {
		return nil, err
	}
	return &ex, nil
}

// ReadExport reads a server_metrics_export.json file (Decode).
func ReadExport(path string) (*Export, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read server metrics export: %w", err)
	}
	ex, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w (the file is cut short or is not a server metrics export; a run with --no-server-metrics writes none)", path, err)
	}
	return ex, nil
}

// HasMetricPrefix reports whether the server metrics export at path holds
// the text `"<prefix>`: InferenceX's launcher searches the file for it
// (its required-server-metric check), so this is a text search of the
// file as written, not a decode.
func HasMetricPrefix(path, prefix string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	needle := []byte(`"` + prefix)
	buf := make([]byte, 0, 1<<16+len(needle))
	chunk := make([]byte, 1<<16)
	for {
		n, err := f.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if bytes.Contains(buf, needle) {
			return true, nil
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if keep := len(needle) - 1; len(buf) > keep {
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
	}
}

var (
	gaugeCols   = []string{"avg", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99"}
	counterCols = []string{"total", "rate", "rate_avg", "rate_min", "rate_max", "rate_std"}
	histCols    = []string{"count", "count_rate", "sum", "sum_rate", "avg", "p1_estimate", "p5_estimate", "p10_estimate",
		"p25_estimate", "p50_estimate", "p75_estimate", "p90_estimate", "p95_estimate", "p99_estimate"}
)

func (st *Stats) col(name string) *float64 {
	switch name {
	case "avg":
		return st.Avg
	case "min":
		return st.Min
	case "max":
		return st.Max
	case "std":
		return st.Std
	case "total":
		return st.Total
	case "rate":
		return st.Rate
	case "rate_avg":
		return st.RateAvg
	case "rate_min":
		return st.RateMin
	case "rate_max":
		return st.RateMax
	case "rate_std":
		return st.RateStd
	case "count":
		return st.Count
	case "sum":
		return st.Sum
	case "count_rate":
		return st.CountRate
	case "sum_rate":
		return st.SumRate
	}
	for i, q := range []string{"p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99"} {
		if name == q {
			return *st.percentiles()[i]
		}
		if name == q+"_estimate" {
			return *st.estimates()[i]
		}
	}
	return nil
}

// WriteCSV writes ex's profiling metrics as server_metrics_export.csv
// (docs/artifacts.md): six comment lines, then one section per type (gauge, counter,
// histogram) with a header row, then an _info section. Unknown-typed
// metrics are written in the gauge section.
func WriteCSV(w io.Writer, ex *Export) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# AIPerf Server Metrics Export (CSV)\n# aiperf_version: %s\n# schema_version: %s\n# benchmark_id: %s\n",
		ex.AIPerfVersion, ex.SchemaVersion, ex.BenchmarkID)
	fmt.Fprintf(bw, "# Note: profiling window only; counters are deltas over the window, histograms delta counts; written by agentperf\n#\n")
	cw := csv.NewWriter(bw)
	names := make([]string, 0, len(ex.Metrics))
	for n := range ex.Metrics {
		names = append(names, n)
	}
	sort.Strings(names)
	type row struct {
		name string
		m    *Metric
		s    *Series
	}
	sections := []struct {
		types []string
		cols  []string
	}{{[]string{"gauge", "unknown"}, gaugeCols}, {[]string{"counter"}, counterCols}, {[]string{"histogram"}, histCols}}
	var info []row
	wrote := false
	for _, sec := range sections {
		var rows []row
		labelSet := map[string]bool{}
		for _, n := range names {
			m := ex.Metrics[n]
			if !contains(sec.types, m.Type) {
				continue
			}
			for _, s := range m.Series {
				if m.Type == "gauge" && strings.HasSuffix(n, "_info") {
					info = append(info, row{n, m, s})
					continue
				}
				rows = append(rows, row{n, m, s})
				for k := range s.Labels {
					labelSet[k] = true
				}
			}
		}
		if len(rows) == 0 {
			continue
		}
		labels := make([]string, 0, len(labelSet))
		for k := range labelSet {
			labels = append(labels, k)
		}
		sort.Strings(labels)
		if wrote {
			cw.Write(nil)
		}
		wrote = true
		hdr := append([]string{"Endpoint", "Type", "Metric", "Unit"}, sec.cols...)
		hdr = append(hdr, labels...)
		hdr = append(hdr, "Description")
		if sec.cols[0] == "count" {
			hdr = append(hdr, "buckets")
		}
		cw.Write(hdr)
		for _, r := range rows {
			rec := []string{csvEndpoint(r.s.EndpointURL), csvType(r.m.Type), r.name, r.m.Unit}
			for _, c := range sec.cols {
				rec = append(rec, csvNum(r.s.Stats.col(c)))
			}
			for _, l := range labels {
				rec = append(rec, r.s.Labels[l])
			}
			rec = append(rec, r.m.Description)
			if sec.cols[0] == "count" {
				rec = append(rec, csvBuckets(r.s.Buckets))
			}
			cw.Write(rec)
		}
	}
	if len(info) > 0 {
		if wrote {
			cw.Write(nil)
		}
		cw.Write([]string{"Endpoint", "Metric", "Key", "Value", "Description"})
		for _, r := range info {
			keys := make([]string, 0, len(r.s.Labels))
			for k := range r.s.Labels {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				cw.Write([]string{csvEndpoint(r.s.EndpointURL), r.name, k, r.s.Labels[k], r.m.Description})
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return err
	}
	return bw.Flush()
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func csvType(t string) string {
	if t == "unknown" {
		return "gauge"
	}
	return t
}

// csvEndpoint drops the scheme and a trailing /metrics.
func csvEndpoint(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	return strings.TrimSuffix(u, "/metrics")
}

// csvNum formats integers as integers and other floats with 4 decimals.
func csvNum(p *float64) string {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
		return ""
	}
	v := *p
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

func csvBuckets(b map[string]int64) string {
	type kv struct {
		le  float64
		key string
		n   int64
	}
	var kvs []kv
	for k, n := range b {
		le, err := strconv.ParseFloat(k, 64)
		if err != nil {
			le = math.Inf(1)
		}
		kvs = append(kvs, kv{le, k, n})
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].le < kvs[j].le })
	parts := make([]string, len(kvs))
	for i, x := range kvs {
		parts[i] = x.key + "=" + strconv.FormatInt(x.n, 10)
	}
	return strings.Join(parts, ";")
}
