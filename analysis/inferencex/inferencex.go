package inferencex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/agentperf/agentperf/server/servermetrics"
)

// Schema is a generation of InferenceX's agentic result JSON.
type Schema string

const (
	// SchemaV3 is the nested schema of InferenceX v1.0 and later
	// (request_metrics, server_metrics), the default.
	SchemaV3 Schema = "v3"
	// SchemaV2 is the flat schema of InferenceX v0.1–v0.3.
	SchemaV2 Schema = "v2"
)

// ErrSchema is returned for a schema name other than v3 and v2.
var ErrSchema = errors.New("unknown result schema")

// ParseSchema accepts "v3" and "v2".
func ParseSchema(s string) (Schema, error) {
	switch Schema(s) {
	case SchemaV3, SchemaV2:
		return Schema(s), nil
	}
	return "", fmt.Errorf("%w %q: use v3 (InferenceX v1.0 and later, nested) or v2 (v0.2/v0.3, flat)", ErrSchema, s)
}

// Options configure Run.InferenceX.
type Options struct {
	Schema Schema // default SchemaV3
	Env    Env
	// ServerLogs are parsed inference-server logs (ParseServerLog); when
	// one states the KV pool size it is used, else the server metrics'.
	ServerLogs []*ServerLog
}

// Result is an InferenceX result JSON, ready to write.
type Result struct {
	Schema Schema
	// Warnings are the problems found while building it (also written in
	// the JSON: "warnings").
	Warnings []string
	doc      obj
}

// WriteJSON writes the result as InferenceX does: one object, indented
// by two spaces, with a trailing newline.
func (res *Result) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(res.doc)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return err
	}
	out.WriteByte('\n')
	_, err = w.Write(out.Bytes())
	return err
}

// MarshalJSON returns the result's compact JSON.
func (res *Result) MarshalJSON() ([]byte, error) { return json.Marshal(res.doc) }

// resolved holds what both schemas share.
type resolved struct {
	env      Env
	conc     int
	shape    obj
	gpus     int
	tp, ep   int
	dpa      string
	req      requestFigures
	srv      serverFigures
	pool     KVPool
	poolOK   bool
	warnings []string
}

func (r *Run) resolve(opt Options, v3 bool) (*resolved, error) {
	e := opt.Env
	x := &resolved{env: e, warnings: append([]string(nil), r.Warnings...)}
	warn := func(format string, a ...any) { x.warnings = append(x.warnings, fmt.Sprintf(format, a...)) }
	x.conc = e.Conc
	if !e.ConcSet {
		if c, ok := r.Concurrency(); ok {
			x.conc = c
			warn("CONC not set: conc is the concurrency recorded in the run (%d)", c)
		} else {
			warn("CONC not set and the run records no concurrency: conc is 0")
		}
	}
	if !e.TPSet && !e.IsMultinode {
		if tp, _ := LabelsFromPath(r.Dir); tp > 0 {
			e.TP = tp
			warn("TP not set: tp %d is taken from the folder name %s", tp, r.Dir)
		} else {
			warn("TP not set: assuming tp 1, so every per-GPU throughput counts one GPU")
		}
	}
	if e.Model == "" {
		if m, ok := r.agg.model(); ok {
			e.Model = m
			warn("MODEL not set: model is the run's served model (%s)", m)
		}
	}
	// Every field left empty is named; every other setting that took
	// InferenceX's default is listed once (v3).
	empty := []struct{ variable, field, value string }{
		{"MODEL", "model", e.Model}, {"RUNNER_TYPE", "hw", e.HW}, {"FRAMEWORK", "framework", e.Framework},
		{"PRECISION", "precision", e.Precision}, {"IMAGE", "image", e.Image},
		{"MODEL_PREFIX", "infmax_model_prefix", e.ModelPrefix}, {"RECIPE_FINGERPRINT", "recipe_fingerprint", e.RecipeFingerprint},
	}
	named := map[string]bool{"CONC": true, "TP": true, "KV_OFFLOADING": true}
	for _, f := range empty {
		named[f.variable] = true
		if f.value == "" {
			warn("%s not set: %s is empty", f.variable, f.field)
		}
	}
	if v3 {
		var defaulted []string
		for _, u := range e.Unset {
			name, _, _ := strings.Cut(strings.TrimSuffix(u, " (empty)"), "=")
			if !named[name] && name != "OFFLOADING" { // OFFLOADING is v2's
				defaulted = append(defaulted, u)
			}
		}
		if len(defaulted) > 0 {
			warn("not set, so InferenceX's defaults are used: %s", strings.Join(defaulted, ", "))
		}
	}
	if v := r.Validity(); v.Known && !v.Valid {
		warn("not a valid submission (%s): %s", scenarioName(v.Scenario), strings.Join(v.Reasons, ", "))
	}
	x.env = e
	x.shape, x.gpus, x.tp, x.ep, x.dpa = x.env.gpuShape(v3)
	x.req = r.requests()
	x.srv = computeServer(r.Server, e.Framework, &x.req)
	x.warnings = append(x.warnings, x.srv.warnings...)
	if !x.req.theoreticalOK {
		warn("theoretical_cache_hit_rate is null: neither the records nor %s carry theoretical prefix-cache blocks", "profile_export_aiperf.json")
	}
	if x.req.kept > 0 && x.req.outExpec.n == 0 {
		warn("output_tokens_expected is empty: the records carry no recorded_output_tokens (not written by agentperf)")
	}
	if n := r.recs.MissingTokens; n > 0 {
		warn("%d successful profiling records lack input_sequence_length or output_sequence_length", n)
	}
	var logPool KVPool
	logOK := false
	if len(opt.ServerLogs) > 0 {
		logPool, logOK = mergeLogs(opt.ServerLogs)
		if !logOK {
			warn("the server log states no KV pool size (no \"GPU KV cache size: N tokens\", max_total_num_tokens or llama.cpp \"n_ctx = N\" line)")
		}
	}
	metPool, metOK := poolFromMetrics(r.Server)
	switch {
	case logOK:
		x.pool, x.poolOK = logPool, true
		if metOK && metPool.Tokens != logPool.Tokens {
			warn("KV pool: the server log states %d tokens, %s %d; the log's figure is used", logPool.Tokens, metPool.Source, metPool.Tokens)
		}
	case metOK:
		x.pool, x.poolOK = metPool, true
	default:
		warn("kv_cache_pool_tokens is null: %s; pass the server log (--server-log)", kvPoolWhere(servermetrics.DetectEngine(r.Server)))
	}
	if r.recs.kept == nil {
		warn("no successful profiling records: request metrics are empty")
	}
	return x, nil
}

// InferenceX builds the result JSON of the run for opt.Schema.
func (r *Run) InferenceX(opt Options) (*Result, error) {
	if opt.Schema == "" {
		opt.Schema = SchemaV3
	}
	if _, err := ParseSchema(string(opt.Schema)); err != nil {
		return nil, err
	}
	v3 := opt.Schema == SchemaV3
	x, err := r.resolve(opt, v3)
	if err != nil {
		return nil, err
	}
	var doc obj
	if v3 {
		doc, err = r.v3(x)
	} else {
		doc = r.v2(x)
	}
	if err != nil {
		return nil, err
	}
	doc = append(doc, field{"validity", r.validityJSON()})
	res := &Result{Schema: opt.Schema, Warnings: x.warnings, doc: doc}
	if len(x.warnings) > 0 {
		ws := make([]any, len(x.warnings))
		for i, w := range x.warnings {
			ws[i] = w
		}
		res.doc = append(res.doc, field{"warnings", ws})
	}
	if v3 {
		roundTree(res.doc)
	}
	res.doc = append(res.doc, r.powerFields()...)
	return res, nil
}

// powerFields are the power fields InferenceX's power adapter patches into
// the result (power_metric_schema_version 2), from the run's GPU
// telemetry: power_valid, and when valid the whole-deployment power and
// energy figures over the profiling window, rounded as the adapter rounds
// them (3 decimals for watts and joules, 6 otherwise), plus agentperf's
// output_tokens_per_joule. Nothing when the run collected no GPU
// telemetry (the adapter then works from its own nvidia-smi samples).
func (r *Run) powerFields() obj {
	g := r.GPU
	if g == nil {
		return nil
	}
	out := obj{{"power_metric_schema_version", 2}}
	n := len(g.GPUs)
	req := len(r.recs.kept)
	var in, outTok float64
	if r.Summary != nil {
		isl, _ := r.Summary.Scalar("total_isl")
		osl, _ := r.Summary.Scalar("total_osl")
		in, outTok = isl.Value, osl.Value
	}
	valid := g.TotalEnergyJ != nil && g.P75TotalPowerW != nil && g.P90TotalPowerW != nil && n > 0 &&
		g.WindowSeconds > 0 && req > 0 && in > 0 && outTok > 0
	if !valid {
		return append(out, field{"power_valid", 0})
	}
	e := *g.TotalEnergyJ
	round := func(v float64, places int) any {
		p := math.Pow(10, float64(places))
		return math.Round(v*p) / p
	}
	w := func(v float64) any { return round(v, 3) }
	x := func(v float64) any { return round(v, 6) }
	avgTotal := e / g.WindowSeconds
	return append(out,
		field{"power_valid", 1},
		field{"avg_power_w", w(avgTotal / float64(n))},
		field{"p75_power_w", w(*g.P75TotalPowerW / float64(n))},
		field{"p75_total_gpu_power_w", w(*g.P75TotalPowerW)},
		field{"p90_power_w", w(*g.P90TotalPowerW / float64(n))},
		field{"p90_total_gpu_power_w", w(*g.P90TotalPowerW)},
		field{"avg_total_gpu_power_w", w(avgTotal)},
		field{"total_gpu_energy_j", w(e)},
		field{"joules_per_successful_query", x(e / float64(req))},
		field{"joules_per_input_token", x(e / in)},
		field{"joules_per_output_token", x(e / outTok)},
		field{"joules_per_total_token", x(e / (in + outTok))},
		field{"output_tokens_per_joule", x(outTok / e)},
	)
}

// validityJSON is the result's "validity": the submission verdict the
// run recorded (submission_valid null when it recorded none: no
// scenario).
func (r *Run) validityJSON() obj {
	v := r.Validity()
	var valid any
	if v.Known {
		valid = v.Valid
	}
	reasons := make([]any, len(v.Reasons))
	for i, s := range v.Reasons {
		reasons[i] = s
	}
	var sc any
	if v.Scenario != "" {
		sc = v.Scenario
	}
	return obj{{"scenario", sc}, {"submission_valid", valid}, {"submission_invalid_reasons", reasons}}
}

// perGPU divides by the GPU count (null without GPUs).
func perGPU(v float64, gpus int) any {
	if gpus <= 0 {
		return nil
	}
	return num(v / float64(gpus))
}

func (r *Run) v3(x *resolved) (obj, error) {
	e := &x.env
	backend, err := e.kvOffloadBackend()
	if err != nil {
		return nil, err
	}
	if !e.KVOffloadingSet {
		x.warnings = append(x.warnings, "KV_OFFLOADING not set: kv_offloading is \"none\"")
	}
	rs := r.recs
	cats := obj{}
	for _, k := range sortedKeys(rs.Categories) {
		cats = append(cats, field{k, rs.Categories[k]})
	}
	doc := obj{
		{"result_schema_version", resultSchemaVersion},
		{"hw", e.HW}, {"conc", x.conc}, {"image", e.Image}, {"recipe_fingerprint", e.RecipeFingerprint},
		{"model", e.Model}, {"infmax_model_prefix", e.ModelPrefix}, {"framework", e.Framework},
		{"precision", e.Precision}, {"spec_decoding", e.SpecDecoding}, {"disagg", e.Disagg},
		{"scenario_type", "agentic-coding"}, {"is_multinode", e.IsMultinode}, {"num_gpus", x.gpus},
		{"tp", x.tp}, {"ep", x.ep}, {"dp_attention", x.dpa},
	}
	doc = append(doc, x.shape...)
	doc = append(doc,
		field{"kv_offloading", e.KVOffloading}, field{"kv_offload_backend", backend},
		field{"allocated_cpu_dram_gb", e.AllocatedCPUDRAMGB},
		field{"num_requests_total", rs.Total}, field{"num_requests_successful", len(rs.kept)},
		field{"request_accounting", obj{
			{"records_total", rs.Total}, {"records_profiled", len(rs.kept)},
			{"records_dropped_total", rs.Total - len(rs.kept)}, {"records_warmup_dropped", rs.Warmup},
			{"records_error_dropped", rs.Errored}, {"error_categories", cats},
		}},
	)
	if e.RouterMetadata != "" {
		rm, err := nameVersion("ROUTER_METADATA", e.RouterMetadata, false)
		if err != nil {
			return nil, err
		}
		doc = append(doc, field{"router", rm})
	}
	if e.KVP2PTransfer != "" {
		doc = append(doc, field{"kv_p2p_transfer", e.KVP2PTransfer})
	}
	if ds := r.agg.Metadata.Dataset; ds != nil {
		doc = append(doc, field{"dataset", ds})
	}
	doc = append(doc, field{"request_metrics", x.v3RequestMetrics()})
	srv, pool := x.v3ServerMetrics(len(rs.kept))
	doc = append(doc, field{"server_metrics", srv}, field{"kv_cache_pool_tokens", pool})
	return doc, nil
}

// resultSchemaVersion is the version of InferenceX's published result
// rows that the v3 document follows (its RESULT_SCHEMA_VERSION, in
// inferencex-e2e/infx/results/schema).
const resultSchemaVersion = 1

// v3RequestMetrics is the v3 request_metrics object.
func (x *resolved) v3RequestMetrics() obj {
	q := &x.req
	qps := obj{}
	if q.qps.ok {
		qps = obj{{"window_seconds", 1.0}, {"samples", q.qps.samples}}
		if q.qps.samples > 0 {
			qps = append(qps, q.qps.d.obj()...)
		} else {
			qps = append(qps, field{"mean", num(q.qps.mean)})
		}
	}
	tput := obj{}
	if q.hasTput {
		per := obj{}
		if x.gpus > 0 {
			per = obj{{"total_tput_tps", perGPU(q.totTPS, x.gpus)}, {"output_tput_tps", perGPU(q.outTPS, x.gpus)},
				{"input_tput_tps", perGPU(q.inTPS, x.gpus)}}
		}
		tput = obj{
			{"input", obj{{"tokens_per_second", num(q.inTPS)}}},
			{"output", obj{{"tokens_per_second", num(q.outTPS)}}},
			{"total", obj{{"tokens_per_second", num(q.totTPS)}}},
			{"duration_seconds", num(q.durationSec)},
			{"per_gpu", per},
		}
	}
	return obj{
		{"qps", qps},
		{"latency", obj{
			{"ttft", q.ttft.obj()}, {"e2el", q.e2el.obj()}, {"itl", q.itl.obj()}, {"tpot", q.itl.obj()},
			{"intvty", q.intvty.obj()}, {"e2e_norm_intvty", q.e2eNI.obj()},
			{"full_response_itl", q.fullITL.obj()}, {"full_response_intvty", q.fullIntvty.obj()},
		}},
		{"tokens", obj{{"input", q.input.obj()}, {"output_actual", q.outActual.obj()}, {"output_expected", q.outExpec.obj()}}},
		{"throughput", tput},
		{"cache", obj{{"theoretical_cache_hit_rate", optNum(q.theoretical, q.theoreticalOK)}}},
	}
}

// v3ServerMetrics is the v3 server_metrics object (completed is the
// number of successful requests) and the KV pool size (nil when unknown).
func (x *resolved) v3ServerMetrics(completed int) (obj, any) {
	s := &x.srv
	var pool any
	if x.poolOK {
		pool = x.pool.Tokens
	}
	cbs := obj{}
	for _, k := range sortedKeys(s.cachedBySource) {
		cbs = append(cbs, field{k, num(s.cachedBySource[k])})
	}
	raw := obj{}
	for _, k := range sortedKeys(s.bySource) {
		raw = append(raw, field{k, num(s.bySource[k])})
	}
	sources := make([]any, len(s.sources))
	for i, o := range s.sources {
		sources[i] = o
	}
	return obj{
		{"present", s.present}, {"adapter", s.adapter}, {"metric_count", s.metricCount},
		{"cache", obj{
			{"gpu_cache_hit_rate", s.gpuHit.any()}, {"cpu_cache_hit_rate", s.cpuHit.any()},
			{"external_cache_hit_rate", s.extHit.any()}, {"overall_cache_hit_rate", s.overallHit.any()},
			{"prefix_cache_hits", s.prefixHits.any()}, {"prefix_cache_queries", s.prefixQueries.any()},
			{"external_prefix_cache_hits", s.extHits.any()}, {"external_prefix_cache_queries", s.extQueries.any()},
			{"cached_tokens_by_source", cbs},
			{"frontend_cache_hit_rate", s.frontendHit.any()}, {"router_kv_hit_rate", s.routerKVHit.any()},
			{"router_shared_cache_hit_rate", s.routerSharedHit.any()},
			{"frontend_cached_tokens", s.frontendCached.any()}, {"frontend_input_tokens", s.frontendInput.any()},
		}},
		{"kv_cache", obj{
			{"gpu_usage_pct", s.gpuUsage.any()}, {"gpu_total_tokens", pool}, {"cpu_usage_pct", s.cpuUsage.any()},
			{"cpu_used_tokens", s.cpuUsed.any()}, {"cpu_total_tokens", s.cpuTotal.any()},
		}},
		{"kv_offload", obj{
			{"bytes_gpu_to_cpu", s.bytesG2C.any()}, {"bytes_cpu_to_gpu", s.bytesC2G.any()},
			{"time_gpu_to_cpu", s.timeG2C.any()}, {"time_cpu_to_gpu", s.timeC2G.any()},
			{"bandwidth_gpu_to_cpu_bytes_per_second", s.bwG2C.any()},
			{"bandwidth_cpu_to_gpu_bytes_per_second", s.bwC2G.any()},
		}},
		{"tokens", obj{
			{"prompt_total", s.promptTotal.intAny()}, {"generation_total", s.genTotal.intAny()},
			{"requests_completed", completed},
			{"prompt_by_source", obj{
				{"gpu_cache_hit", s.srcGPU.any()}, {"cpu_or_external_cache_hit", s.srcExt.any()},
				{"computed", s.srcCompute.any()}, {"raw", raw},
			}},
		}},
		{"sources", sources},
	}, pool
}

func (r *Run) v2(x *resolved) obj {
	e := &x.env
	rs := r.recs
	q := &x.req
	s := &x.srv
	doc := obj{
		{"hw", e.HW}, {"conc", x.conc}, {"image", e.Image}, {"model", e.Model},
		{"infmax_model_prefix", e.ModelPrefix}, {"framework", e.Framework}, {"precision", e.Precision},
		{"spec_decoding", e.SpecDecoding}, {"disagg", e.Disagg}, {"scenario_type", "agentic-coding"},
		{"is_multinode", e.IsMultinode}, {"tp", x.tp}, {"ep", x.ep}, {"dp_attention", x.dpa},
		{"offloading", e.Offloading},
		{"num_requests_total", rs.Profiling}, {"num_requests_successful", len(rs.kept)},
	}
	doc = append(doc, x.shape...)
	if q.qps.ok {
		if q.qps.samples > 0 {
			d := q.qps.d
			doc = append(doc, field{"mean_qps", num(d.mean)}, field{"p75_qps", num(d.p75)}, field{"p90_qps", num(d.p90)},
				field{"p95_qps", num(d.p95)}, field{"std_qps", num(d.sd)})
		} else {
			doc = append(doc, field{"mean_qps", num(q.qps.mean)})
		}
	}
	doc = q.ttft.flat(doc, "ttft")
	doc = q.e2el.flat(doc, "e2el")
	doc = q.itl.flat(doc, "itl")
	doc = q.itl.flat(doc, "tpot")
	doc = q.intvty.flat(doc, "intvty")
	doc = q.input.flat(doc, "input_tokens")
	doc = q.outActual.flat(doc, "output_tokens_actual")
	doc = q.outExpec.flat(doc, "output_tokens_expected")
	var respHit any
	if q.respCacheHitOK {
		respHit = num(q.respCacheHit)
	}
	var pool any
	if x.poolOK {
		pool = x.pool.Tokens
	}
	doc = append(doc,
		field{"theoretical_cache_hit_rate", optNum(q.theoretical, q.theoreticalOK)},
		field{"server_gpu_cache_hit_rate", s.v2GPUHit.any()},
		field{"server_cpu_cache_hit_rate", s.v2ExtHit.any()},
		field{"kv_offload_bytes_gpu_to_cpu", s.bytesG2C.any()}, field{"kv_offload_bytes_cpu_to_gpu", s.bytesC2G.any()},
		field{"kv_offload_time_gpu_to_cpu", s.timeG2C.any()}, field{"kv_offload_time_cpu_to_gpu", s.timeC2G.any()},
		field{"cpu_kv_cache_usage_pct", s.cpuUsage.any()},
		field{"total_prompt_tokens", s.promptTotal.intAny()}, field{"total_generation_tokens", s.genTotal.intAny()},
		field{"total_requests_completed", len(rs.kept)},
		field{"response_cache_hit_rate", respHit},
	)
	if s.present && s.adapter == "sglang" {
		// The flat schema's server fields are vLLM's; an SGLang
		// deployment reports its hit rate on the same keys.
		x.warnings = append(x.warnings, fmt.Sprintf("server metrics adapter %s: server_gpu_cache_hit_rate and server_cpu_cache_hit_rate use its device and host cached tokens", s.adapter))
	}
	if q.hasTput {
		doc = append(doc,
			field{"input_tput_tps", num(q.inTPS)}, field{"output_tput_tps", num(q.outTPS)},
			field{"total_tput_tps", num(q.totTPS)}, field{"duration_seconds", num(q.durationSec)},
			field{"tput_per_gpu", perGPU(q.totTPS, x.gpus)}, field{"output_tput_per_gpu", perGPU(q.outTPS, x.gpus)},
			field{"input_tput_per_gpu", perGPU(q.inTPS, x.gpus)},
		)
	}
	doc = append(doc, field{"kv_cache_pool_tokens", pool})
	return doc
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
