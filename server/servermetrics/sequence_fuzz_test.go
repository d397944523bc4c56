package servermetrics

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// A scrape script is a text of /metrics page lines and directives, one per
// line. Page lines accumulate into the next page; directives are:
//
//	@scrape      the accumulated page becomes a scrape of endpoint 0
//	@scrape1     … of endpoint 1
//	@start       mark the profiling start (between the last scrape and the next)
//	@end         mark the profiling end
//
// Scrapes are one second apart. A page that does not parse is skipped, as
// a failed fetch would be. A trailing page without @scrape is scraped too.
const (
	scriptEP0   = "@scrape"
	scriptEP1   = "@scrape1"
	scriptStart = "@start"
	scriptEnd   = "@end"
)

var scriptURLs = []string{"http://a:8000/metrics", "http://b:8000/metrics"}

// scriptBase is the time of scrape 0.
var scriptBase = time.Unix(1_800_000_000, 0)

// runScrapeScript plays script against a Scraper (the store, the window
// marks and every read path the run uses) and returns the export. It fails
// t when a read path panics or produces an export that cannot be encoded.
func runScrapeScript(t *testing.T, script []byte) *Export {
	t.Helper()
	s := New(Config{URLs: scriptURLs, SliceDuration: 1500 * time.Millisecond})
	p := []*parser{newParser(), newParser()}
	k := 0
	var page bytes.Buffer
	scrape := func(ep int) {
		defer page.Reset()
		fams, err := p[ep].parse(page.Bytes())
		if err != nil {
			return
		}
		at := scriptBase.Add(time.Duration(k) * time.Second)
		k++
		s.mu.Lock()
		s.st.eps[ep].fetches++
		s.st.add(ep, at.UnixNano(), fams)
		s.mu.Unlock()
		_ = s.Live()
	}
	for _, line := range bytes.SplitAfter(script, []byte("\n")) {
		switch strings.TrimSpace(string(line)) {
		case scriptEP0:
			scrape(0)
		case scriptEP1:
			scrape(1)
		case scriptStart:
			s.MarkProfilingStart(scriptBase.Add(time.Duration(k)*time.Second - 500*time.Millisecond))
		case scriptEnd:
			s.MarkProfilingEnd(scriptBase.Add(time.Duration(k)*time.Second - 500*time.Millisecond))
		default:
			page.Write(line)
		}
	}
	if page.Len() > 0 {
		scrape(0)
	}
	if s.Err() != nil {
		t.Fatalf("the scraper disabled itself: %v", s.Err())
	}
	ex := s.Snapshot()
	b, err := json.Marshal(ex)
	if err != nil {
		t.Fatalf("encode the export: %v", err)
	}
	if !json.Valid(b) {
		t.Fatal("the export is not valid JSON")
	}
	var sb strings.Builder
	if err := WriteCSV(&sb, ex); err != nil {
		t.Fatalf("csv: %v", err)
	}
	_ = Derive(ex)
	if s.Err() != nil {
		t.Fatalf("the scraper disabled itself: %v", s.Err())
	}
	return ex
}

// checkIncreases: counter totals and histogram counts and buckets over a
// window are increases, never negative, whatever the sequence did
// (appear, disappear, reset, come back).
func checkIncreases(t *testing.T, ms map[string]*Metric) {
	t.Helper()
	for name, m := range ms {
		for _, se := range m.Series {
			st := se.Stats
			if st == nil {
				continue
			}
			for what, p := range map[string]*float64{"total": st.Total, "count": st.Count} {
				if p != nil && (*p < 0 || math.IsNaN(*p)) {
					t.Errorf("%s %v: %s %v is negative", name, se.Labels, what, *p)
				}
			}
			for le, v := range se.Buckets {
				if v < 0 {
					t.Errorf("%s %v: bucket le=%s delta %d is negative", name, se.Labels, le, v)
				}
			}
		}
	}
}

// scrapeScriptSeeds are sequences that real servers produce: series born
// mid-run (a fresh llm-d-inference-sim, new label values), bounds added to
// a histogram, series that vanish for longer than the bucket ring and come
// back reset, two endpoints with different life cycles.
var scrapeScriptSeeds = []string{
	// A histogram that first appears at scrape 2 (index out of range [-1]
	// in bucketAcc.observe before the fix).
	"# TYPE g gauge\ng 1\n@scrape\n@start\ng 2\n@scrape\n# TYPE h histogram\nh_bucket{le=\"0.1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.5\nh_count 2\n@scrape\n# TYPE h histogram\nh_bucket{le=\"0.1\"} 3\nh_bucket{le=\"+Inf\"} 5\nh_sum 1\nh_count 5\n@scrape\n@end\n@scrape\n",
	// A bound added to an existing histogram, then a reset.
	"# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n@scrape\n@start\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 3\nh_sum 2\nh_count 3\n@scrape\n# TYPE h histogram\nh_bucket{le=\"1\"} 0\nh_bucket{le=\"+Inf\"} 1\nh_sum 0.1\nh_count 1\n@scrape\n@end\n",
	// A labelled counter born late, gone for 20 scrapes (longer than the
	// bucket ring), back after a restart.
	"# TYPE c counter\nc_total{r=\"stop\"} 1\n@scrape\n@start\n# TYPE c counter\nc_total{r=\"stop\"} 2\nc_total{r=\"length\"} 5\n@scrape\n" + strings.Repeat("# TYPE c counter\n@scrape\n", 20) + "# TYPE c counter\nc_total{r=\"length\"} 1\nc_total{r=\"stop\"} 1\n@scrape\n@end\n@scrape\n",
	// A histogram that vanishes for 20 scrapes and comes back larger.
	"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n@scrape\n@start\n" + strings.Repeat("# TYPE h histogram\n@scrape\n", 20) + "# TYPE h histogram\nh_bucket{le=\"1\"} 4\nh_bucket{le=\"+Inf\"} 9\nh_sum 9\nh_count 9\n@scrape\n@end\n",
	// Two endpoints; the second one's histogram is born after the window.
	"# TYPE g gauge\ng 1\n@scrape\n# TYPE g gauge\ng 3\n@scrape1\n@start\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n@scrape\n@end\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 4\nh_sum 2\nh_count 4\n@scrape1\n",
	// The window is marked before any scrape exists.
	"@start\n@end\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n@scrape\n",
	// A vLLM page that grows its series over the run.
	vllmPage(1) + "@scrape\n@start\n" + vllmPage(2) + "@scrape\n" + vllmPage(3) + "@scrape\n@end\n" + vllmPage(4) + "@scrape\n",
}

// FuzzScrapeSequence drives the scraper with sequences of scrapes (a
// script, see runScrapeScript), not single pages: series and histogram
// bounds that appear, disappear and reset at any scrape, across two
// endpoints, with the profiling window marked anywhere. It must never
// panic, the export must encode, and window increases are never negative.
func FuzzScrapeSequence(f *testing.F) {
	for _, s := range scrapeScriptSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 1<<16 {
			return // long scripts only slow the fuzzer down
		}
		ex := runScrapeScript(t, script)
		checkIncreases(t, ex.Metrics)
		checkIncreases(t, ex.WarmupMetrics)
	})
}

// TestScrapeSequenceSeeds runs every seed of FuzzScrapeSequence and checks
// the first one's figures: the histogram born at scrape 2 counts all of
// its observations inside the window (it started at zero).
func TestScrapeSequenceSeeds(t *testing.T) {
	t.Parallel()
	for _, s := range scrapeScriptSeeds {
		ex := runScrapeScript(t, []byte(s))
		checkIncreases(t, ex.Metrics)
	}
	ex := runScrapeScript(t, []byte(scrapeScriptSeeds[0]))
	h := ex.Metrics["h"]
	if h == nil || len(h.Series) != 1 {
		t.Fatalf("histogram missing: %+v", h)
	}
	se := h.Series[0]
	if se.Stats.Count == nil || *se.Stats.Count != 5 || se.Buckets["0.1"] != 3 || se.Buckets["+Inf"] != 5 {
		t.Errorf("late histogram over the window: count %v buckets %v, want 5 and 0.1=3 +Inf=5", ptrVal(se.Stats.Count), se.Buckets)
	}
}

func ptrVal(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
