package inferencex

import (
	"math"

	"github.com/agentperf/agentperf/metrics"
)

// ErrBadRecords is wrapped by errors about a malformed
// profile_export.jsonl: it is metrics.ErrBadExport, the error of the one
// record decoder.
var ErrBadRecords = metrics.ErrBadExport

// record is one kept request: a profiling-phase record (a missing phase
// counts as profiling) that succeeded (metrics.BucketProfilingOK). Absent
// metric values are NaN.
type record struct {
	startNs, endNs int64 // 0 when absent
	ttftMs         float64
	e2elMs         float64
	itlMs          float64
	fullITLMs      float64 // full_response_inter_token_latency
	isl, osl       float64
	cacheRead      float64 // usage_prompt_cache_read_tokens
	expectedOut    float64 // metadata.recorded_output_tokens (agentperf)
	hit, total     int64   // theoretical prefix-cache blocks; total 0 when absent
}

// records is what Load keeps of profile_export.jsonl (records.add).
type records struct {
	// Total is the number of records (non-blank lines).
	Total int
	// Warmup counts records of a phase other than profiling; Errored
	// those that did not succeed (Bucket.OK: an error, a context
	// overflow, a cancellation). A warmup record that failed is in both.
	Warmup, Errored int
	// Profiling counts profiling-phase records, kept or not (v2's
	// num_requests_total).
	Profiling int
	// Categories counts errored records by category: the error's
	// (metrics.ErrorCategory), or the bucket's name for a record flagged
	// cancelled or overflowed without an error object.
	Categories map[string]int
	// MissingTokens counts kept records without input or output length.
	MissingTokens int
	// MissingTimes counts kept records without request_start_ns or
	// request_end_ns.
	MissingTimes int
	kept         []record
}

func newRecords() *records { return &records{Categories: map[string]int{}} }

// add counts one record of profile_export.jsonl: a record is kept when
// its bucket (Record.Bucket) is BucketProfilingOK: its phase is profiling
// (or missing), its error absent or empty, and it is neither flagged
// cancelled nor a context overflow; every other record is counted, never
// lost.
func (rs *records) add(l *metrics.RecordLine) {
	r := &l.Record
	rs.Total++
	warm := r.Phase != metrics.PhaseProfiling
	if warm {
		rs.Warmup++
	} else {
		rs.Profiling++
	}
	// The record's bucket (metrics.BucketOf, the tally's) decides: a
	// success is kept, anything else (an error, a context overflow, a
	// cancellation, flagged with or without an error object) is dropped.
	if !r.Bucket.OK() {
		rs.Errored++
		cat := r.Bucket.String()
		if r.Error != nil {
			cat = metrics.ErrorCategory(r.Error)
		}
		rs.Categories[cat]++
	}
	if r.Bucket != metrics.BucketProfilingOK {
		return
	}
	v := &l.Values
	rec := record{startNs: r.RequestStartNs, endNs: r.RequestEndNs, expectedOut: math.NaN(),
		ttftMs: v.TTFT, e2elMs: v.RequestLatency, itlMs: v.ITL, fullITLMs: v.FullResponseITL,
		isl: v.ISL, osl: v.OSL, cacheRead: v.UsageCacheReadTokens}
	if rec.startNs == 0 || rec.endNs == 0 {
		rs.MissingTimes++
	}
	if r.RecordedOut > 0 {
		rec.expectedOut = float64(r.RecordedOut)
	}
	if r.TotalBlocks > 0 {
		rec.hit, rec.total = int64(r.HitBlocks), int64(r.TotalBlocks)
	}
	if math.IsNaN(rec.isl) || math.IsNaN(rec.osl) {
		rs.MissingTokens++
	}
	rs.kept = append(rs.kept, rec)
}
