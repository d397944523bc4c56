package inferencex

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrEnv is wrapped by errors about an environment value (or the flag
// that stands for it).
var ErrEnv = errors.New("invalid InferenceX setting")

// Lookup returns the value of an InferenceX environment variable (or of
// the flag standing for it) and whether it is set.
type Lookup func(name string) (string, bool)

// MapLookup looks names up in m.
func MapLookup(m map[string]string) Lookup {
	return func(n string) (string, bool) {
		v, ok := m[n]
		return v, ok
	}
}

// EnvTP is InferenceX's TP as the label of runs no flag gave one (a row
// of the sweep table, a point of the Pareto plot, a sweep's TP): the
// variable read through look when it is a positive integer, else 0, and
// the caller's default applies. Unlike LoadEnv, which refuses a TP that
// is not a positive integer in the result JSON, a label ignores it.
func EnvTP(look Lookup) int {
	if s, _ := look("TP"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			return v
		}
	}
	return 0
}

// Workers is one side of a multi-node deployment (prefill or decode).
type Workers struct {
	NumWorkers, TP, PP, DCP, PCP, EP int
	DPAttention                      string
	Hardware                         string
}

// Env holds the run description InferenceX takes from its job's
// environment, under the variable names it uses (in brackets).
type Env struct {
	HW                string // RUNNER_TYPE
	Conc              int    // CONC
	ConcSet           bool
	Image             string // IMAGE
	RecipeFingerprint string // RECIPE_FINGERPRINT
	Model             string // MODEL
	ModelPrefix       string // MODEL_PREFIX
	Framework         string // FRAMEWORK
	Precision         string // PRECISION
	SpecDecoding      string // SPEC_DECODING (default "none")
	Disagg            bool   // DISAGG
	IsMultinode       bool   // IS_MULTINODE
	TP                int    // TP (default 1)
	TPSet             bool
	EP                int    // EP_SIZE (default 1)
	PP, DCP, PCP      int    // PP_SIZE, DCP_SIZE, PCP_SIZE (default 1)
	DPAttention       string // DP_ATTENTION (default "false")
	Offloading        string // OFFLOADING (v2; default "none")
	KVOffloading      string // KV_OFFLOADING (v3; default "none" with a warning)
	KVOffloadingSet   bool
	KVOffloadBackend  string // KV_OFFLOAD_BACKEND
	// KVOffloadBackendMetadata is KV_OFFLOAD_BACKEND_METADATA, a JSON
	// object {name, version?}.
	KVOffloadBackendMetadata string
	AllocatedCPUDRAMGB       int    // TOTAL_CPU_DRAM_GB
	RouterMetadata           string // ROUTER_METADATA, a JSON object {name, version}
	KVP2PTransfer            string // KV_P2P_TRANSFER
	Prefill, Decode          Workers
	// Unset lists the variables LoadEnv found unset or empty, each as
	// NAME=default ("NAME (empty)" for an empty default), in reading order: the
	// result's warnings name them.
	Unset []string
}

// LoadEnv reads the variables through look. An unset or empty variable
// takes InferenceX's default; a malformed one is an error naming it.
func LoadEnv(look Lookup) (Env, error) {
	get := func(n string) (string, bool) {
		v, ok := look(n)
		if !ok || v == "" {
			return "", false
		}
		return v, true
	}
	var unset []string
	str := func(n, def string) string {
		if v, ok := get(n); ok {
			return v
		}
		if def == "" {
			unset = append(unset, n+" (empty)")
		} else {
			unset = append(unset, n+"="+def)
		}
		return def
	}
	var errs []error
	integer := func(n string, def int, positive bool) (int, bool) {
		v, ok := get(n)
		if !ok {
			unset = append(unset, fmt.Sprintf("%s=%d", n, def))
			return def, false
		}
		i, err := strconv.Atoi(strings.TrimSpace(v))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%w: %s=%q is not an integer", ErrEnv, n, v))
			return def, false
		case positive && i <= 0:
			errs = append(errs, fmt.Errorf("%w: %s=%d must be a positive integer", ErrEnv, n, i))
			return def, false
		case i < 0:
			errs = append(errs, fmt.Errorf("%w: %s=%d must not be negative", ErrEnv, n, i))
			return def, false
		}
		return i, true
	}
	boolean := func(n string) bool {
		v, ok := get(n)
		if !ok {
			unset = append(unset, n+"=false")
		}
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "1", "true", "yes", "on":
			return true
		}
		return false
	}
	var e Env
	e.HW = str("RUNNER_TYPE", "")
	e.Conc, e.ConcSet = integer("CONC", 0, false)
	e.Image = str("IMAGE", "")
	e.RecipeFingerprint = str("RECIPE_FINGERPRINT", "")
	e.Model = str("MODEL", "")
	e.ModelPrefix = str("MODEL_PREFIX", "")
	e.Framework = str("FRAMEWORK", "")
	e.Precision = str("PRECISION", "")
	e.SpecDecoding = str("SPEC_DECODING", "none")
	e.Disagg = boolean("DISAGG")
	e.IsMultinode = boolean("IS_MULTINODE")
	e.TP, e.TPSet = integer("TP", 1, true)
	e.EP, _ = integer("EP_SIZE", 1, true)
	e.PP, _ = integer("PP_SIZE", 1, true)
	e.DCP, _ = integer("DCP_SIZE", 1, true)
	e.PCP, _ = integer("PCP_SIZE", 1, true)
	e.DPAttention = str("DP_ATTENTION", "false")
	e.Offloading = str("OFFLOADING", "none")
	if v, ok := get("KV_OFFLOADING"); ok {
		e.KVOffloading, e.KVOffloadingSet = v, true
	} else {
		e.KVOffloading = "none"
	}
	e.KVOffloadBackend = str("KV_OFFLOAD_BACKEND", "")
	e.KVOffloadBackendMetadata = str("KV_OFFLOAD_BACKEND_METADATA", "")
	e.AllocatedCPUDRAMGB, _ = integer("TOTAL_CPU_DRAM_GB", 0, false)
	e.RouterMetadata = str("ROUTER_METADATA", "")
	e.KVP2PTransfer = str("KV_P2P_TRANSFER", "")
	e.Unset = unset // the workers' variables are named with their side
	side := func(p string) Workers {
		var w Workers
		w.NumWorkers, _ = integer(p+"_NUM_WORKERS", 0, false)
		w.TP, _ = integer(p+"_TP", 0, false)
		w.PP, _ = integer(p+"_PP_SIZE", 1, true)
		w.DCP, _ = integer(p+"_DCP_SIZE", 1, true)
		w.PCP, _ = integer(p+"_PCP_SIZE", 1, true)
		w.EP, _ = integer(p+"_EP", 1, true)
		w.DPAttention = str(p+"_DP_ATTN", "false")
		w.Hardware = str(p+"_HARDWARE", "")
		return w
	}
	if e.IsMultinode {
		e.Prefill, e.Decode = side("PREFILL"), side("DECODE")
		if (e.Prefill.Hardware == "") != (e.Decode.Hardware == "") {
			errs = append(errs, fmt.Errorf("%w: PREFILL_HARDWARE and DECODE_HARDWARE must be given together", ErrEnv))
		}
	}
	return e, errors.Join(errs...)
}

// truthy is InferenceX's reading of a boolean string.
func truthy(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// kvOffloadBackend is the v3 kv_offload_backend: null without offloading,
// else {name, version?} from KV_OFFLOAD_BACKEND_METADATA (whose name must
// equal KV_OFFLOAD_BACKEND) or {name: KV_OFFLOAD_BACKEND}.
func (e *Env) kvOffloadBackend() (any, error) {
	if e.KVOffloading == "none" {
		if e.KVOffloadBackend != "" && e.KVOffloadBackend != "none" {
			return nil, fmt.Errorf("%w: KV_OFFLOAD_BACKEND=%q must be empty when KV_OFFLOADING=none", ErrEnv, e.KVOffloadBackend)
		}
		return nil, nil
	}
	if e.KVOffloadBackend == "" || e.KVOffloadBackend == "none" {
		return nil, fmt.Errorf("%w: KV_OFFLOAD_BACKEND is required when KV_OFFLOADING=%s", ErrEnv, e.KVOffloading)
	}
	if e.KVOffloadBackendMetadata == "" {
		return obj{{"name", e.KVOffloadBackend}}, nil
	}
	md, err := nameVersion("KV_OFFLOAD_BACKEND_METADATA", e.KVOffloadBackendMetadata, false)
	if err != nil {
		return nil, err
	}
	if name, _ := md.get("name"); name != e.KVOffloadBackend {
		return nil, fmt.Errorf("%w: KV_OFFLOAD_BACKEND_METADATA names %q but KV_OFFLOAD_BACKEND is %q", ErrEnv, name, e.KVOffloadBackend)
	}
	return md, nil
}

// nameVersion parses a {name, version} JSON object: name required, version
// required when needVersion (else optional); no other keys.
func nameVersion(variable, s string, needVersion bool) (obj, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("%w: %s is not a JSON object: %v", ErrEnv, variable, err)
	}
	name, _ := m["name"].(string)
	if name == "" {
		return nil, fmt.Errorf("%w: %s needs a non-empty string \"name\"", ErrEnv, variable)
	}
	out := obj{{"name", name}}
	if v, present := m["version"]; present {
		ver, ok := v.(string)
		if !ok || ver == "" {
			return nil, fmt.Errorf("%w: %s: \"version\" must be a non-empty string", ErrEnv, variable)
		}
		out = append(out, field{"version", ver})
	} else if needVersion {
		return nil, fmt.Errorf("%w: %s needs a \"version\"", ErrEnv, variable)
	}
	for k := range m {
		if k != "name" && k != "version" {
			return nil, fmt.Errorf("%w: %s has an unknown key %q (only name and version)", ErrEnv, variable, k)
		}
	}
	return out, nil
}

// gpuShape returns the v3 parallelism fields, the number of GPUs and the
// effective tp, ep and dp_attention (multi-node: prefill + decode).
func (e *Env) gpuShape(v3 bool) (obj, int, int, int, string) {
	if !e.IsMultinode {
		if !v3 {
			return nil, e.TP, e.TP, e.EP, e.DPAttention
		}
		return obj{{"pp", e.PP}, {"dcp_size", e.DCP}, {"pcp_size", e.PCP}}, e.TP * e.PP * e.PCP, e.TP, e.EP, e.DPAttention
	}
	p, d := e.Prefill, e.Decode
	gpus := func(w Workers) int {
		if v3 {
			return w.NumWorkers * w.TP * w.PP * w.PCP
		}
		return w.NumWorkers * w.TP
	}
	np, nd := gpus(p), gpus(d)
	if v3 && nd <= 0 {
		// Aggregated deployment: prefill and decode share the workers.
		d.TP, d.EP, d.PP, d.DCP, d.PCP = 0, 0, 1, 1, 1
	}
	tp := p.TP + d.TP
	ep := max(p.EP, d.EP)
	dpa := "false"
	if truthy(p.DPAttention) || truthy(d.DPAttention) {
		dpa = "true"
	}
	var f obj
	if v3 {
		f = obj{
			{"prefill_num_workers", p.NumWorkers}, {"prefill_tp", p.TP}, {"prefill_pp", p.PP},
			{"prefill_dcp_size", p.DCP}, {"prefill_pcp_size", p.PCP}, {"prefill_ep", p.EP},
			{"prefill_dp_attention", p.DPAttention}, {"num_prefill_gpu", np},
			{"decode_num_workers", d.NumWorkers}, {"decode_tp", d.TP}, {"decode_pp", d.PP},
			{"decode_dcp_size", d.DCP}, {"decode_pcp_size", d.PCP}, {"decode_ep", d.EP},
			{"decode_dp_attention", d.DPAttention}, {"num_decode_gpu", nd},
		}
		if p.Hardware != "" {
			f = append(f, field{"prefill_hw", p.Hardware}, field{"decode_hw", d.Hardware})
		}
	} else {
		f = obj{
			{"prefill_num_workers", p.NumWorkers}, {"prefill_tp", p.TP}, {"prefill_ep", p.EP},
			{"prefill_dp_attention", p.DPAttention}, {"num_prefill_gpu", np},
			{"decode_num_workers", d.NumWorkers}, {"decode_tp", d.TP}, {"decode_ep", d.EP},
			{"decode_dp_attention", d.DPAttention}, {"num_decode_gpu", nd},
		}
	}
	return f, np + nd, tp, ep, dpa
}
