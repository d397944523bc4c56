package gputelemetry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// FileName is the export written beside the run's artifacts.
const FileName = "gpu_telemetry_export.json"

// SchemaVersion is the export's schema_version.
const SchemaVersion = 1

// Energy sources of a GPU's energy figure.
const (
	SourceCounter  = "energy_counter"
	SourceIntegral = "power_integral"
)

// GPUResult is one GPU over the profiling window.
type GPUResult struct {
	GPUID
	UUID  string `json:"uuid,omitempty"`
	Model string `json:"model,omitempty"`
	// EnergyJ is the GPU's energy over the window in joules; nil when
	// neither its counter nor its power covers the window (Problem says
	// why).
	EnergyJ *float64 `json:"energy_j"`
	// EnergySource is SourceCounter or SourceIntegral.
	EnergySource string `json:"energy_source,omitempty"`
	// PowerIntegralJ is the integral of the power samples over the
	// window, also when the counter gave EnergyJ (a cross-check).
	PowerIntegralJ *float64 `json:"power_integral_j,omitempty"`
	// AvgPowerW is EnergyJ over the window's length.
	AvgPowerW *float64 `json:"avg_power_w"`
	// Means and maxima of the samples inside the window (nil without
	// samples there).
	Mean map[string]float64 `json:"mean"`
	Max  map[string]float64 `json:"max"`
	// Samples is the number of scrapes that gave this GPU's power in the
	// window.
	Samples int    `json:"samples"`
	Problem string `json:"problem,omitempty"`
}

// EndpointResult is one exporter's scrape counts.
type EndpointResult struct {
	URL       string `json:"url"`
	Scrapes   int    `json:"scrapes"`
	Failures  int    `json:"failures"`
	LastError string `json:"last_error,omitempty"`
}

// Result is what the GPUs did over the profiling window: the export's
// summary.
type Result struct {
	SchemaVersion int              `json:"schema_version"`
	Endpoints     []EndpointResult `json:"endpoints"`
	// WindowStartNs, WindowEndNs are the profiling window (Unix ns).
	WindowStartNs int64       `json:"window_start_ns"`
	WindowEndNs   int64       `json:"window_end_ns"`
	WindowSeconds float64     `json:"window_s"`
	GPUs          []GPUResult `json:"gpus"`
	// TotalEnergyJ is the sum of EnergyJ over the GPUs; nil when a GPU has
	// none (the total would be short).
	TotalEnergyJ *float64 `json:"total_energy_j"`
	// AvgTotalPowerW is TotalEnergyJ over the window's length.
	AvgTotalPowerW *float64 `json:"avg_total_power_w"`
	// P75TotalPowerW and P90TotalPowerW are time-weighted quantiles of
	// the GPUs' summed power over the window (nil when a GPU's power does
	// not cover it).
	P75TotalPowerW *float64 `json:"p75_total_power_w"`
	P90TotalPowerW *float64 `json:"p90_total_power_w"`
	// Efficiency is filled by the caller, which knows the tokens
	// (SetWork).
	Efficiency *Efficiency `json:"efficiency,omitempty"`
	// SchemaChanges lists what changed in the pages during the run (a GPU
	// or field appearing, a family of an unexpected type): collection went
	// on through each.
	SchemaChanges []string `json:"schema_changes"`
	// Series are every GPU's samples over the whole run, for figures.
	Series []GPUSeries `json:"series,omitempty"`
}

// GPUSeries is one GPU's samples: times in seconds from the profiling
// start, one column per field (null where a scrape had no value).
type GPUSeries struct {
	GPUID
	T      []float64             `json:"t_s"`
	Fields map[string][]*float64 `json:"fields"`
}

// Efficiency relates the energy to the work done in the window.
type Efficiency struct {
	// Requests, InputTokens and OutputTokens are the successful profiling
	// requests and their tokens.
	Requests     int   `json:"requests"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// OutputTokensPerJoule is OutputTokens / TotalEnergyJ.
	OutputTokensPerJoule float64 `json:"output_tokens_per_joule"`
	// JoulesPerRequest is TotalEnergyJ / Requests.
	JoulesPerRequest float64 `json:"joules_per_request"`
	// JoulesPerOutputToken is TotalEnergyJ / OutputTokens.
	JoulesPerOutputToken float64 `json:"joules_per_output_token"`
}

// SetWork fills Efficiency from the window's successful requests and
// tokens; it does nothing without a total energy or without work.
func (r *Result) SetWork(requests int, inputTokens, outputTokens int64) {
	if r == nil || r.TotalEnergyJ == nil || *r.TotalEnergyJ <= 0 || requests <= 0 || outputTokens <= 0 {
		return
	}
	e := *r.TotalEnergyJ
	r.Efficiency = &Efficiency{Requests: requests, InputTokens: inputTokens, OutputTokens: outputTokens,
		OutputTokensPerJoule: float64(outputTokens) / e, JoulesPerRequest: e / float64(requests),
		JoulesPerOutputToken: e / float64(outputTokens)}
}

func ptr(v float64) *float64 { return &v }

// Result computes the figures over the profiling window. Without a marked
// window (a run that never reached profiling) it uses the collection's
// whole span.
func (c *Collector) Result() *Result {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, b := c.profStartNs, c.profEndNs
	if a == 0 {
		a = c.firstNs
	}
	if b == 0 {
		b = c.clock().UnixNano()
	}
	r := &Result{SchemaVersion: SchemaVersion, WindowStartNs: a, WindowEndNs: b, WindowSeconds: float64(b-a) / 1e9,
		SchemaChanges: append([]string{}, c.changes...), GPUs: []GPUResult{}, Series: []GPUSeries{}, Endpoints: []EndpointResult{}}
	for _, e := range c.eps {
		r.Endpoints = append(r.Endpoints, EndpointResult{URL: e.url, Scrapes: e.scrapes, Failures: e.failures, LastError: e.lastErr})
	}
	var total float64
	complete := len(c.order) > 0
	var curves [][]Sample
	for _, id := range c.order {
		s := c.gpus[id]
		g := GPUResult{GPUID: id, UUID: s.uuid, Model: s.model, Mean: map[string]float64{}, Max: map[string]float64{}}
		power := s.fields[Power]
		if pi, ok := Integrate(power, a, b); ok {
			g.PowerIntegralJ = ptr(pi)
			curves = append(curves, power)
		}
		if inc, ok := Increase(s.fields[Energy], a, b); ok {
			g.EnergyJ, g.EnergySource = ptr(inc), SourceCounter
		} else if g.PowerIntegralJ != nil {
			g.EnergyJ, g.EnergySource = ptr(*g.PowerIntegralJ), SourceIntegral
		} else {
			g.Problem = "neither its energy counter nor its power samples cover the profiling window (a GPU that appeared late or an exporter that failed at a bound)"
		}
		if g.EnergyJ != nil && b > a {
			g.AvgPowerW = ptr(*g.EnergyJ / (float64(b-a) / 1e9))
			total += *g.EnergyJ
		} else {
			complete = false
		}
		for f := range numFields {
			if Field(f) == Energy {
				continue
			}
			var sum, mx float64
			n := 0
			mx = math.Inf(-1)
			for _, x := range s.fields[f] {
				if x.T >= a && x.T <= b {
					sum += x.V
					mx = math.Max(mx, x.V)
					n++
				}
			}
			if n > 0 {
				g.Mean[Field(f).String()] = sum / float64(n)
				g.Max[Field(f).String()] = mx
			}
			if Field(f) == Power {
				g.Samples = n
			}
		}
		r.GPUs = append(r.GPUs, g)
		r.Series = append(r.Series, c.seriesOf(s, a))
	}
	if complete {
		r.TotalEnergyJ = ptr(total)
		if b > a {
			r.AvgTotalPowerW = ptr(total / (float64(b-a) / 1e9))
		}
		if len(curves) == len(c.order) {
			if q, ok := Quantile(curves, a, b, 0.75); ok {
				r.P75TotalPowerW = ptr(q)
			}
			if q, ok := Quantile(curves, a, b, 0.90); ok {
				r.P90TotalPowerW = ptr(q)
			}
		}
	}
	return r
}

// seriesOf lays a GPU's samples out by scrape time.
func (c *Collector) seriesOf(s *series, origin int64) GPUSeries {
	times := map[int64]bool{}
	for f := range numFields {
		for _, x := range s.fields[f] {
			times[x.T] = true
		}
	}
	ts := make([]int64, 0, len(times))
	for t := range times {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	out := GPUSeries{GPUID: s.id, T: make([]float64, len(ts)), Fields: map[string][]*float64{}}
	idx := make(map[int64]int, len(ts))
	for i, t := range ts {
		out.T[i] = math.Round(float64(t-origin)/1e6) / 1e3
		idx[t] = i
	}
	for f := range numFields {
		if len(s.fields[f]) == 0 {
			continue
		}
		col := make([]*float64, len(ts))
		for _, x := range s.fields[f] {
			col[idx[x.T]] = ptr(x.V)
		}
		out.Fields[Field(f).String()] = col
	}
	return out
}

// Encode returns the export's JSON.
func (r *Result) Encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Decode reads an export.
func Decode(b []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decode %s: %w", FileName, err)
	}
	if r.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("decode %s: schema_version %d, want %d", FileName, r.SchemaVersion, SchemaVersion)
	}
	return &r, nil
}

// ReadExport reads dir's export; os.ErrNotExist (wrapped) when the run
// collected no GPU telemetry.
func ReadExport(dir string) (*Result, error) {
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	return Decode(b)
}

// Summary is the result without its series: what the aggregates'
// metadata.agentperf.gpu_telemetry holds.
func (r *Result) Summary() *Result {
	c := *r
	c.Series = nil
	return &c
}
