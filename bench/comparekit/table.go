package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// tableCmd renders the rows analyze printed (one JSON object per line,
// labelled with mode, conc and cache) as the markdown section bench/compare
// writes into bench/RESULTS.md.
func tableCmd(args []string) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	rowsPath := fs.String("rows", "", "rows.jsonl")
	date := fs.String("date", "", "")
	commit := fs.String("commit", "", "")
	loadBefore := fs.String("load-before", "", "")
	loadAfter := fs.String("load-after", "", "")
	elapsed := fs.String("elapsed", "", "seconds")
	aiVer := fs.String("aiperf-version", "", "")
	aiStatus := fs.String("aiperf-status", "", "why aiperf has no rows, if so")
	ipVer := fs.String("ip-version", "", "")
	ipStatus := fs.String("ip-status", "", "why inference-perf has no rows, if so")
	dur := fs.String("duration", "", "")
	zdur := fs.String("zero-duration", "", "")
	concs := fs.String("concurrency", "", "")
	tools := fs.String("tools", "", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	type key struct {
		tool, mode string
		conc       int
	}
	rows := map[key]map[string]any{}
	err := eachLine(*rowsPath, func(b []byte) error {
		var r map[string]any
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		c, _ := r["conc"].(float64)
		rows[key{str(r["tool"]), str(r["mode"]), int(c)}] = r
		return nil
	})
	if err != nil {
		return err
	}
	var cs []int
	for _, f := range strings.Fields(*concs) {
		if n, err := strconv.Atoi(f); err == nil {
			cs = append(cs, n)
		}
	}
	toolList := strings.Fields(*tools)
	w := &strings.Builder{}
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }

	p("## agentperf and aiperf side by side (`bench/compare`)")
	p("")
	p("Produced by `bench/compare` on %s; commit %s; %s s; load average before %s, after %s (1/5/15 min). "+
		"Everything below was measured here, in this one run, on the same 2 cores (client and simulator share them).", *date, *commit, *elapsed, *loadBefore, *loadAfter)
	p("")
	p("| | |")
	p("|---|---|")
	p("| aiperf | %s |", orNA(*aiVer, *aiStatus))
	p("| inference-perf | %s |", orNA(*ipVer, *ipStatus))
	p("| corpus | `../shared/traces/kvct-200.jsonl.zst` as a directory of 200 one-trace `.json` files (aiperf's `weka_trace` loader reads one trace per file), the same directory for every tool |")
	p("| tokenizer | Qwen3 `tokenizer.json` from `../shared/tokenizers`: a folder for agentperf and the simulator, the same files in a Hugging Face cache layout for aiperf; `HF_HUB_OFFLINE=1` |")
	p("| server | one `agentperf sim --request-log` process per run; *timed*: the default timing model (8 ms decode step + 0.02 ms per sequence) with prefill at 2M tokens/s, no step-time growth with context (`--decode-ms-per-1k-context -1`), 1,024 sequences and 64M KV tokens; *zero*: `--zero-latency` |")
	p("| timed runs | `--scenario inferencex-agentx-mvp --unsafe-override`, the InferenceX flags (seed 42, start ratios 0.25–0.75, `--use-server-token-count`, threshold 0.05), streaming, `--benchmark-duration %s`, a fresh dataset cache (cold); aiperf with `AIPERF_DATASET_CONFIGURATION_TIMEOUT` and `AIPERF_SERVICE_PROFILE_CONFIGURE_TIMEOUT` at 1,800 s as InferenceX sets them (the 300 s default timed out here on a cold build) |", *dur)
	p("| replay semantics | each tool's own under the scenario: aiperf 0.13.0 replays AgentX v1.0 (t* snapshots, one-token primers, subagent trees, recorded gaps at the phase start); agentperf names its own in its run log (`replay semantics:`; before its session-tree core, the legacy v0.2/v0.3 lanes, subagents counted and skipped) |")
	p("| zero runs | no scenario, recorded delays off (agentperf before its session-tree core `--inter-turn-delay-cap-seconds 0.000001`, with it `--agentx-generation v0.3 --trace-idle-gap-cap-seconds 0.000001`; aiperf `--ignore-trace-delays`), `ignore_eos`, streaming, `--benchmark-duration %s`, a dataset cache built by a short priming run before the sweep (warm) |", *zdur)
	p("")
	p("Definitions. *Start-up*: process start (taken by the harness just before the exec) → the first request the simulator logged. " +
		"*CPU*: user + system seconds of the client's whole process tree (getrusage of the reaped tree, or the per-process /proc sum when larger) over the whole run, start-up included, per 1,000 requests the simulator completed. " +
		"*Peak RSS*: the largest sum of RSS over the tree's live processes, sampled every 100 ms (PSS, which counts shared pages once, in the JSON rows). " +
		"*Request rate*: profiling requests the simulator saw / their span. " +
		"*TTFT error*: the client's time to first token placed on the wall clock (request_start_ns + TTFT) − the time the simulator flushed the first content byte of the same X-Request-ID. " +
		"*ISL error*: per request, the simulator's token count of the message contents (chat template excluded) − the trace's recorded `in` (zero runs: no cache-bust marker).")
	p("")
	p("| concurrency | tool | start-up cold / warm (s) | CPU s per 1k requests, timed / zero | peak RSS (MB), timed / zero | zero-latency req/s | TTFT error p50 / p99 (ms) | ISL mean abs error / share exact | timed requests: warmup + profiling (errors) | subagent requests |")
	p("|---:|---|---|---|---|---:|---|---|---|---|")
	var notes []string
	for _, c := range cs {
		for _, t := range toolList {
			tr, zr := rows[key{t, "timed", c}], rows[key{t, "zero", c}]
			if tr == nil && zr == nil {
				continue
			}
			for _, r := range []map[string]any{tr, zr} {
				if r != nil && str(r["note"]) != "" {
					notes = append(notes, fmt.Sprintf("%s, %s run at concurrency %d: %s", t, str(r["mode"]), c, str(r["note"])))
				}
			}
			p("| %d | %s | %s / %s | %s / %s | %s / %s | %s | %s / %s | %s / %s | %s | %s |", c, t,
				num(tr, "startup_ms", 1e-3, 2), num(zr, "startup_ms", 1e-3, 2),
				num(tr, "cpu_s_per_1k", 1, 1), num(zr, "cpu_s_per_1k", 1, 1),
				num(tr, "peak_rss_mb", 1, 0), num(zr, "peak_rss_mb", 1, 0),
				num(zr, "profiling_req_per_s", 1, 1),
				num(tr, "ttft_err_p50_ms", 1, 2), num(tr, "ttft_err_p99_ms", 1, 2),
				num(zr, "isl_mean_abs_err", 1, 1), pctOf(zr, "isl_exact_share"),
				phases(tr), subagents(t, tr))
		}
	}
	p("")
	p("Same-run ratios, aiperf ÷ agentperf (above 1: agentperf is ahead; for the request rate agentperf ÷ aiperf):")
	p("")
	p("| concurrency | start-up cold | start-up warm | CPU per 1k requests (zero) | peak RSS (timed) | peak RSS (zero) | zero-latency request rate |")
	p("|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range cs {
		at, az := rows[key{"agentperf", "timed", c}], rows[key{"agentperf", "zero", c}]
		it, iz := rows[key{"aiperf", "timed", c}], rows[key{"aiperf", "zero", c}]
		if it == nil && iz == nil {
			continue
		}
		p("| %d | %s | %s | %s | %s | %s | %s |", c,
			ratio(it, at, "startup_ms"), ratio(iz, az, "startup_ms"), ratio(iz, az, "cpu_s_per_1k"),
			ratio(it, at, "peak_rss_mb"), ratio(iz, az, "peak_rss_mb"), ratio(az, iz, "profiling_req_per_s"))
	}
	p("")
	if len(notes) > 0 {
		p("Runs that did not complete as asked (the tool's own error text):")
		p("")
		for _, n := range notes {
			p("- %s", strings.ReplaceAll(n, "|", `\|`))
		}
		p("")
	}
	p("Per-run JSON rows (every field, PSS included), commands and client logs: `$COMPARE_HOME/runs/<time>/` (not in the repository).")
	fmt.Print(w.String())
	return nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func val(r map[string]any, k string) (float64, bool) {
	if r == nil {
		return 0, false
	}
	f, ok := r[k].(float64)
	return f, ok && !math.IsNaN(f)
}

func num(r map[string]any, k string, scale float64, prec int) string {
	f, ok := val(r, k)
	if !ok {
		return "–"
	}
	return strconv.FormatFloat(f*scale, 'f', prec, 64)
}

func pctOf(r map[string]any, k string) string {
	f, ok := val(r, k)
	if !ok {
		return "–"
	}
	return strconv.FormatFloat(100*f, 'f', 1, 64) + " %"
}

func ratio(a, b map[string]any, k string) string {
	x, ok1 := val(a, k)
	y, ok2 := val(b, k)
	if !ok1 || !ok2 || y == 0 {
		return "–"
	}
	return "**" + strconv.FormatFloat(x/y, 'f', 1, 64) + "×**"
}

func phases(r map[string]any) string {
	if r == nil {
		return "–"
	}
	w, _ := val(r, "warmup_records")
	p, _ := val(r, "profiling_records")
	e, _ := val(r, "error_records")
	return fmt.Sprintf("%.0f + %.0f (%.0f)", w, p, e)
}

func subagents(tool string, r map[string]any) string {
	if r == nil {
		return "–"
	}
	s, _ := val(r, "subagent_records")
	if k, ok := val(r, "skipped_subagent_requests"); ok && s == 0 {
		return fmt.Sprintf("0 sent (%.0f in the corpus counted and skipped: not replayed yet)", k)
	}
	return strconv.FormatFloat(s, 'f', 0, 64)
}

func orNA(version, status string) string {
	switch {
	case status != "":
		return "no rows: " + strings.ReplaceAll(status, "|", `\|`)
	case version == "":
		return "not run"
	}
	return version + " (pip, in a venv the harness owns; its `pip freeze` is in `bench/compare.aiperf-freeze.txt`)"
}
