package inferencex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/server/servermetrics"
)

// seedRun is one run of the AgentX v0.3 results table (Kimi-K2.5 MI355X,
// LMCache offload; eight runs TP4/TP8 × concurrencies), the numbers the
// fixture folders are built to produce.
type seedRun struct {
	tp, conc, reqs  int
	rps, outTPS     float64
	prefix, ext, kv float64 // percent
	engines         int     // data-parallel engines reporting KV usage
	kvSpread        float64 // engines' KV usage = kv ± spread (averaged back to kv)
	itlMs           float64
	row             string // the seed table's row
	zeroOK, aborted bool
	suffix          string
}

var seedRuns = []seedRun{
	{tp: 4, conc: 16, reqs: 566, rps: 0.310, outTPS: 156.36, prefix: 47.6, ext: 65.7, kv: 68.1, row: "| 4 | 16 | 566 | 0.310 | 156.36 | 47.6 | 65.7 | 68.1 |"},
	{tp: 4, conc: 24, reqs: 352, rps: 0.190, outTPS: 95.61, prefix: 0, ext: 84.9, kv: 87.1, row: "| 4 | 24 | 352 | 0.190 | 95.61 | 0.0 | 84.9 | 87.1 |"},
	{tp: 4, conc: 32, reqs: 304, rps: 0.170, outTPS: 87.53, prefix: 0, ext: 79.7, kv: 85.2, row: "| 4 | 32 | 304 | 0.170 | 87.53 | 0.0 | 79.7 | 85.2 |"},
	{tp: 4, conc: 40, reqs: 372, rps: 0.210, outTPS: 96.14, prefix: 0, ext: 82.1, kv: 88.3, row: "| 4 | 40 | 372 | 0.210 | 96.14 | 0.0 | 82.1 | 88.3 |"},
	{tp: 8, conc: 32, reqs: 480, rps: 0.270, outTPS: 133.04, prefix: 0, ext: 83.9, kv: 86.9, engines: 2, kvSpread: 6.9, row: "| 8 | 32 | 480 | 0.270 | 133.04 | 0.0 | 83.9 | 86.9 |"},
	{tp: 8, conc: 40, reqs: 514, rps: 0.280, outTPS: 124.33, prefix: 0, ext: 83.3, kv: 86.5, row: "| 8 | 40 | 514 | 0.280 | 124.33 | 0.0 | 83.3 | 86.5 |"},
	{tp: 8, conc: 48, reqs: 537, rps: 0.300, outTPS: 141.13, prefix: 0, ext: 83.3, kv: 88.3, row: "| 8 | 48 | 537 | 0.300 | 141.13 | 0.0 | 83.3 | 88.3 |"},
	{tp: 8, conc: 56, reqs: 531, rps: 0.290, outTPS: 143.60, prefix: 0, ext: 82.4, kv: 88.3, row: "| 8 | 56 | 531 | 0.290 | 143.60 | 0.0 | 82.4 | 88.3 |"},
	// Listed apart: two runs that finished with no successful request
	// (as the seed's TP8/conc32 and TP8/conc40 reruns) and one that the
	// failed-request threshold aborted.
	{tp: 8, conc: 32, reqs: 12, zeroOK: true, suffix: "_amds_00"},
	{tp: 8, conc: 40, reqs: 0, zeroOK: true, suffix: "_amds_07"},
	{tp: 4, conc: 48, reqs: 40, rps: 0.2, outTPS: 50, prefix: 10, ext: 50, kv: 90, aborted: true},
}

var sweepT0 = time.Date(2027, 1, 15, 8, 0, 0, 0, time.UTC)

func f64(x float64) *float64 { return &x }

// runDirName is the folder InferenceX uploads a run in.
func runDirName(s seedRun) string {
	return fmt.Sprintf("agentic_kimik2.5_fp4_vllm_tp%d-pp1-dcp1-pcp1-ep1-dpa0_disagg-0_spec-0_conc%d_mi355x%s", s.tp, s.conc, s.suffix)
}

// writeSeedRun writes an artifact folder (records through a real
// metrics.Collector, a server-metrics export with 1 s slices) whose sweep
// row is s.
func writeSeedRun(t *testing.T, root string, s seedRun) string {
	t.Helper()
	dir := filepath.Join(root, runDirName(s), "aiperf_artifacts")
	col, err := metrics.NewCollector(dir, metrics.CollectorOptions{Now: func() time.Time { return sweepT0 }})
	if err != nil {
		t.Fatal(err)
	}
	const ttft = 500 * time.Millisecond
	itl := time.Duration(s.itlMs * float64(time.Millisecond))
	if itl == 0 {
		itl = time.Duration((8 + 0.25*float64(s.conc)) * float64(time.Millisecond))
	}
	// Duration and output tokens chosen so that #Reqs/D and ΣOSL/D round
	// to the seed's RPS and Out tok/s.
	d := time.Duration(math.Round(float64(s.reqs)/s.rps)) * time.Second
	if s.zeroOK || s.reqs == 0 {
		d = 1800 * time.Second
	}
	outTotal := int(math.Round(s.outTPS * d.Seconds()))
	lat := func(osl int) time.Duration { return ttft + time.Duration(osl-1)*itl }
	t0 := sweepT0.UnixNano()
	n := s.reqs
	for i := range n {
		osl := outTotal / max(n, 1)
		if i < outTotal%max(n, 1) {
			osl++ // the extra tokens go to the first records
		}
		if s.zeroOK {
			osl = 100
		}
		lastStart := t0 + int64(d) - int64(lat(outTotal/max(n, 1)))
		start := t0
		if n > 1 {
			start = t0 + int64(i)*(lastStart-t0)/int64(n-1)
		}
		r := &metrics.Record{SessionNum: i, ConversationID: fmt.Sprintf("trace-%03d", i%50), TurnIndex: i,
			Phase: metrics.PhaseProfiling, RequestStartNs: start, CreditIssuedNs: start, RecordedOut: osl}
		if s.zeroOK {
			r.RequestEndNs = start + int64(time.Second)
			r.Error = &metrics.Error{Code: 500, Type: "Internal Server Error", Message: "EngineCore died", Category: metrics.CategoryHTTP}
			col.Add(r)
			continue
		}
		r.FirstChunkNs = start + int64(ttft)
		r.SecondChunkNs = r.FirstChunkNs + int64(itl)
		r.FirstOutputNs = r.FirstChunkNs
		r.LastChunkNs = start + int64(lat(osl))
		r.RequestEndNs = r.LastChunkNs
		r.ContentChunks = osl
		r.Usage = &metrics.Usage{PromptTokens: 60000, CompletionTokens: osl, TotalTokens: 60000 + osl}
		col.Add(r)
	}
	info := metrics.RunInfo{BenchmarkID: "seed-" + runDirName(s), Concurrency: s.conc,
		ProfilingStart: sweepT0, ProfilingEnd: sweepT0.Add(d)}
	if s.aborted {
		info.Extra = map[string]any{"aborted": "failed_request_threshold", "abort_message": "error rate 0.125 > 0.10 after 48 records"}
	}
	if _, err := col.Finish(info); err != nil {
		t.Fatal(err)
	}
	if s.zeroOK {
		return dir
	}
	writeSeedServer(t, dir, s, d)
	return dir
}

func writeSeedServer(t *testing.T, dir string, s seedRun, d time.Duration) {
	t.Helper()
	const queries = 1e6
	engines := max(s.engines, 1)
	ep := "http://127.0.0.1:8000/metrics"
	counter := func(total float64) *servermetrics.Metric {
		return &servermetrics.Metric{Type: "counter", Unit: "tokens", Series: []*servermetrics.Series{{EndpointURL: ep,
			Labels: map[string]string{"engine": "0"}, Stats: &servermetrics.Stats{Total: f64(total)}}}}
	}
	const slices, idle = 10, 2 // the last two slices have no request running
	kv := &servermetrics.Metric{Type: "gauge", Unit: "ratio"}
	run := &servermetrics.Metric{Type: "gauge", Unit: "requests"}
	step := int64(d) / slices
	for e := range engines {
		u := s.kv / 100
		if engines > 1 {
			u += (float64(2*e) - float64(engines-1)) / float64(engines-1) * s.kvSpread / 100
		}
		ks := &servermetrics.Series{EndpointURL: ep, Labels: map[string]string{"engine": fmt.Sprint(e)},
			Stats: &servermetrics.Stats{Avg: f64(u), Max: f64(u)}}
		rs := &servermetrics.Series{EndpointURL: ep, Labels: map[string]string{"engine": fmt.Sprint(e)},
			Stats: &servermetrics.Stats{Avg: f64(3), Max: f64(4)}}
		for k := range slices {
			st := sweepT0.UnixNano() + int64(k)*step
			v, running := u, 3.0
			if k >= slices-idle {
				v, running = 0.05, 0 // idle: a little KV left, nothing running
			}
			ks.Timeslices = append(ks.Timeslices, servermetrics.Slice{StartNs: st, EndNs: st + step, Avg: f64(v), Max: f64(v)})
			rs.Timeslices = append(rs.Timeslices, servermetrics.Slice{StartNs: st, EndNs: st + step, Avg: f64(running), Max: f64(running)})
		}
		kv.Series = append(kv.Series, ks)
		run.Series = append(run.Series, rs)
	}
	ex := &servermetrics.Export{SchemaVersion: "1.0", Summary: servermetrics.Summary{EndpointsConfigured: []string{ep}, EndpointsSuccessful: []string{ep}},
		Metrics: map[string]*servermetrics.Metric{
			"vllm:prefix_cache_hits":             counter(math.Round(s.prefix / 100 * queries)),
			"vllm:prefix_cache_queries":          counter(queries),
			"vllm:external_prefix_cache_hits":    counter(math.Round(s.ext / 100 * queries)),
			"vllm:external_prefix_cache_queries": counter(queries),
			"vllm:kv_cache_usage_perc":           kv,
			"vllm:num_requests_running":          run,
		}, WarmupMetrics: map[string]*servermetrics.Metric{}}
	b, err := json.Marshal(ex)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, servermetrics.JSONFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// seedSweep writes every seed run and a folder without records; it
// returns the root and the folders in a scrambled order.
func seedSweep(t *testing.T) (string, []string) {
	t.Helper()
	root := t.TempDir()
	var dirs []string
	for i := len(seedRuns) - 1; i >= 0; i-- { // reverse: the table sorts them
		dirs = append(dirs, writeSeedRun(t, root, seedRuns[i]))
	}
	broken := filepath.Join(root, "agentic_kimik2.5_fp4_vllm_tp8-pp1-dcp1-pcp1-ep1-dpa0_disagg-0_spec-0_conc64_mi355x")
	if err := os.MkdirAll(broken, 0o755); err != nil {
		t.Fatal(err)
	}
	return root, append(dirs, broken)
}

func sweepTable(t *testing.T, dirs []string) *Table {
	t.Helper()
	rows := make([]Row, len(dirs))
	for i, d := range dirs {
		tp, conc := LabelsFromPath(d)
		run, err := Load(d)
		if err != nil {
			rows[i] = FailedRow(d, Labels{TP: tp, Conc: conc}, err)
			continue
		}
		rows[i] = NewRow(run, Labels{TP: tp, Conc: conc})
	}
	return NewTable(rows)
}

// TestSweepReproducesSeedTable: from folders shaped like the seed's eight
// runs, the markdown table has the seed's rows in the seed's order (TP,
// then concurrency), and the zero-request, aborted and unreadable runs are
// listed apart with their reasons.
func TestSweepReproducesSeedTable(t *testing.T) {
	t.Parallel()
	root, dirs := seedSweep(t)
	tab := sweepTable(t, dirs)
	var md bytes.Buffer
	if err := tab.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	out := md.String()
	lines := strings.Split(out, "\n")
	if lines[0] != "| TP | Conc | #Reqs | RPS | Out tok/s | Prefix cache % | Ext cache % | GPU KV avg % |" {
		t.Errorf("header %q", lines[0])
	}
	for i, s := range seedRuns[:8] {
		if got := lines[2+i]; got != s.row {
			t.Errorf("row %d = %q\n          want %q", i, got, s.row)
		}
	}
	if len(tab.Rows) != 8 || len(tab.Excluded) != 4 {
		t.Fatalf("%d rows, %d excluded; want 8 and 4:\n%s", len(tab.Rows), len(tab.Excluded), out)
	}
	for _, want := range []string{
		"Excluded (0 requests):\n- TP8/conc32 (" + filepath.Join(root, runDirName(seedRuns[8]), "aiperf_artifacts") + "): 0 successful profiling requests (12 errors",
		"- TP8/conc40 (" + filepath.Join(root, runDirName(seedRuns[9]), "aiperf_artifacts") + "): 0 successful profiling requests (0 errors",
		"Failed:\n- TP4/conc48 (",
		"aborted (failed_request_threshold): error rate 0.125 > 0.10 after 48 records",
		"- TP8/conc64 (" + dirs[len(dirs)-1] + "): not an artifact folder",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
	// The one two-engine run (TP8/conc32) reads 86.9 % from engines at
	// 80.0 % and 93.8 %: averaged, not summed; and the idle slices (5 %
	// KV, nothing running) are left out everywhere.
	got := strings.ReplaceAll(out, root, "$ROOT")
	checkGolden(t, "sweep.md", []byte(got))
	var js, cs bytes.Buffer
	if err := tab.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := tab.WriteCSV(&cs); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "sweep.json", []byte(strings.ReplaceAll(js.String(), root, "$ROOT")))
	checkGolden(t, "sweep.csv", []byte(strings.ReplaceAll(cs.String(), root, "$ROOT")))
	var doc struct {
		Runs     []map[string]any `json:"runs"`
		Excluded []map[string]any `json:"excluded"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Runs) != 8 || len(doc.Excluded) != 4 || doc.Excluded[0]["status"] != "failed" || doc.Excluded[3]["status"] != "zero_requests" {
		t.Errorf("JSON: %d runs, %d excluded (%v … %v)", len(doc.Runs), len(doc.Excluded), doc.Excluded[0]["status"], doc.Excluded[3]["status"])
	}
}

// TestPooledRow: the row of a repeated point is the mean of its runs'
// figures with their Student-t intervals, #Reqs summed; the markdown says
// so (a Runs column, "mean ± half-width" cells, a legend line) and the CSV
// and JSON carry the intervals; a run that is not in the table takes the
// whole point out, naming the run.
func TestPooledRow(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var runs []*Run
	var single []Row
	l := Labels{TP: 4, Conc: 16}
	for _, s := range seedRuns[:3] { // three runs of one point (their figures differ)
		r, err := Load(writeSeedRun(t, root, s))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
		single = append(single, NewRow(r, l))
	}
	row := PooledRow(runs, l, metrics.PooledSummary{RunsRequested: 3, RunsDone: 3, Confidence: 0.9})
	want := metrics.Pool([]float64{single[0].RPS, single[1].RPS, single[2].RPS}, 0.9, "")
	if row.Status != StatusOK || row.Runs != 3 || row.Requests != 566+352+304 || math.Abs(row.RPS-want.Mean) > 1e-12 {
		t.Fatalf("row %+v: want 3 runs, %d requests, RPS %v", row, 566+352+304, want.Mean)
	}
	if p := row.Pooled["rps"]; math.Abs(p.CILow-want.CILow) > 1e-12 || math.Abs(p.CIHigh-want.CIHigh) > 1e-12 || !(p.CIHigh > p.CILow) {
		t.Errorf("RPS interval [%v, %v], want [%v, %v] at 90%%", p.CILow, p.CIHigh, want.CILow, want.CIHigh)
	}
	tab := NewTable([]Row{row})
	var md, cs, js bytes.Buffer
	tab.WriteMarkdown(&md)
	tab.WriteCSV(&cs)
	tab.WriteJSON(&js)
	lines := strings.Split(md.String(), "\n")
	if lines[0] != "| TP | Conc | Runs | #Reqs | RPS | Out tok/s | Prefix cache % | Ext cache % | GPU KV avg % |" {
		t.Errorf("header %q", lines[0])
	}
	if cell := fmtF(want.Mean, 3) + " ± " + fmtF(want.HalfWidth(), 3); !strings.Contains(lines[2], "| 3 | 1222 | "+cell+" |") {
		t.Errorf("row %q lacks Runs 3, #Reqs 1222 and RPS %q", lines[2], cell)
	}
	if !strings.Contains(md.String(), "the mean over the runs ± the half-width of its 90% Student-t confidence interval") {
		t.Errorf("the markdown does not say what its cells are:\n%s", md.String())
	}
	var tj struct {
		Runs []struct {
			Runs      int                  `json:"runs"`
			Intervals map[string][]float64 `json:"intervals"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(js.Bytes(), &tj); err != nil || len(tj.Runs) != 1 || tj.Runs[0].Runs != 3 || len(tj.Runs[0].Intervals["rps"]) != 2 {
		t.Errorf("JSON without the runs and intervals (%v):\n%s", err, js.String())
	}
	if !strings.Contains(cs.String(), ",runs,confidence_level,rps_ci_low,rps_ci_high,") {
		t.Errorf("CSV without the intervals:\n%s", cs.String())
	}
	// A failed run (aborted) takes the point out.
	bad, err := Load(writeSeedRun(t, root, seedRuns[10]))
	if err != nil {
		t.Fatal(err)
	}
	out := PooledRow([]*Run{runs[0], bad}, l, metrics.PooledSummary{Confidence: 0.95})
	if out.Status != StatusFailed || !strings.HasPrefix(out.Reason, "run 2 of 2 (") || !strings.Contains(out.Reason, "aborted") {
		t.Errorf("with an aborted run: %s %q", out.Status, out.Reason)
	}
	// A figure only some runs have: the mean of those, saying how many;
	// one has no interval.
	part := PooledRow(runs[:2], l, metrics.PooledSummary{Confidence: 0.95})
	part.Pooled["ext_cache_pct"] = metrics.Pool([]float64{single[0].ExtHitPct, math.NaN()}, 0.95, "%")
	if c := part.cell("ext_cache_pct", single[0].ExtHitPct, 1); c != fmtF(single[0].ExtHitPct, 1)+" (1 of 2 runs)" {
		t.Errorf("a figure one of two runs has: %q", c)
	}
	// The Pareto plot draws the means with interval bars and says so.
	if g := groupName(&row); g != "TP4, each point the mean of its repeated runs, bars its 90% interval over the runs" {
		t.Errorf("Pareto group %q", g)
	}
	groups, _, _ := paretoGroups(NewTable([]Row{row}), ParetoTotal)
	for _, pts := range groups {
		if p := pts[0]; !p.iv || p.ylo != row.Pooled["tput_per_gpu"].CILow || p.xhi != row.Pooled["interactivity_tok_s_user"].CIHigh {
			t.Errorf("Pareto point %+v without the row's intervals", p)
		}
	}
	if _, err := WritePareto(NewTable([]Row{row}), filepath.Join(root, "pareto.png"), ParetoOptions{}); err != nil {
		t.Errorf("Pareto of a pooled row: %v", err)
	}
	// One run only (no pooled rows): the table is as before.
	var plain bytes.Buffer
	NewTable(single[:1]).WriteMarkdown(&plain)
	if strings.Contains(plain.String(), "Runs") || strings.Contains(plain.String(), "±") {
		t.Errorf("a table of single runs changed:\n%s", plain.String())
	}
}
