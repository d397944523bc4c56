package metrics

import (
	"strconv"
)

// Names of the files the Collector writes under its directory.
const (
	FileRecords        = "profile_export.jsonl"
	FileOverflow       = "context_overflow_export.jsonl"
	FileAggregateJSON  = "profile_export_aiperf.json"
	FileAggregateCSV   = "profile_export_aiperf.csv"
	FileTimeslicesJSON = "profile_export_aiperf_timeslices.json"
	FileTimeslicesCSV  = "profile_export_aiperf_timeslices.csv"
)

const (
	partialSuffix       = ".partial" // streams before Finish renames them
	cancelledErrorType  = "RequestCancellationError"
	cancelledErrorText  = "request cancelled"
	defaultProcessorID  = "record_processor_0"
	redactedPlaceholder = "<redacted>"
)

// appendRecordLine appends the profile_export.jsonl line of r (with its
// computed values v) to b, newline included: the RecordWriter's encoder,
// on the per-request path (it allocates nothing). It is AppendRecordLine
// of the RecordLine that holds r, v and processorID, with the error's
// error_isl_source derived from r (ErrorISLSource).
func appendRecordLine(b []byte, r *Record, v *Values, processorID string) []byte {
	return appendLine(b, r, v, processorID, ErrorISLSource(r))
}

// appendLine appends one record line in aiperf's record shape
// (docs/artifacts.md): metadata, metrics (absent values omitted,
// whole-number metrics as integers), error (absent on success). Three
// agentperf additions are written in metadata when the record carries
// them: theoretical_hit_blocks and theoretical_total_blocks, so that Recompute
// can recompute theoretical_prefix_cache_hit from the file alone, and
// recorded_output_tokens (the trace's recorded `out`), from which the
// InferenceX result's output_tokens_expected is computed. A retried warmup
// request's records carry attempt (2, 3, … on a retry) and retried (true
// on a failed attempt that was sent again). islSource is the error's
// details.error_isl_source.
func appendLine(b []byte, r *Record, v *Values, processorID, islSource string) []byte {
	b = append(b, `{"metadata":{"session_num":`...)
	b = strconv.AppendInt(b, int64(r.SessionNum), 10)
	b = appendOptString(b, "x_request_id", r.XRequestID)
	b = appendOptString(b, "x_correlation_id", r.XCorrelationID)
	b = appendOptString(b, "conversation_id", r.ConversationID)
	b = append(b, `,"turn_index":`...)
	b = strconv.AppendInt(b, int64(r.TurnIndex), 10)
	if r.SourceTraceID != "" {
		b = appendOptString(b, "source_trace_id", r.SourceTraceID)
		b = append(b, `,"source_outer_idx":`...)
		b = strconv.AppendInt(b, int64(r.SourceOuterIdx), 10)
	}
	b = appendOptString(b, "source_kind", r.SourceKind)
	b = appendOptInt(b, "credit_issued_ns", r.CreditIssuedNs)
	b = append(b, `,"request_start_ns":`...)
	b = strconv.AppendInt(b, r.RequestStartNs, 10)
	b = appendOptInt(b, "request_ack_ns", r.RequestAckNs)
	b = append(b, `,"request_end_ns":`...)
	b = strconv.AppendInt(b, r.RequestEndNs, 10)
	b = append(b, `,"worker_id":`...)
	if r.WorkerID != "" {
		b = appendString(b, r.WorkerID)
	} else {
		b = append(b, `"lane_`...)
		b = appendPadded(b, r.Lane, 4)
		b = append(b, '"')
	}
	b = appendOptString(b, "shard", r.Shard)
	b = append(b, `,"record_processor_id":`...)
	b = appendString(b, processorID)
	b = append(b, `,"benchmark_phase":`...)
	if r.Phase == PhaseWarmup {
		b = append(b, `"warmup"`...)
	} else {
		b = append(b, `"profiling"`...)
	}
	if r.Cancelled {
		b = append(b, `,"was_cancelled":true`...)
	} else {
		b = append(b, `,"was_cancelled":false`...)
	}
	b = appendOptInt(b, "cancellation_time_ns", r.CancellationNs)
	b = append(b, `,"context_overflow_skip":`...)
	if r.ContextOverflow {
		b = append(b, "true"...)
	} else {
		b = append(b, "false"...)
	}
	b = append(b, `,"agent_depth":`...)
	b = strconv.AppendInt(b, int64(r.AgentDepth), 10)
	b = appendOptString(b, "parent_correlation_id", r.ParentCorrelationID)
	b = appendOptString(b, "root_correlation_id", r.RootCorrelationID)
	if r.RecordedOut > 0 {
		b = append(b, `,"recorded_output_tokens":`...)
		b = strconv.AppendInt(b, int64(r.RecordedOut), 10)
	}
	if r.Attempt > 1 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(r.Attempt), 10)
	}
	if r.Retried {
		b = append(b, `,"retried":true`...)
	}
	if r.RestartTries > 0 {
		b = append(b, `,"server_restart_tries":`...)
		b = strconv.AppendInt(b, int64(r.RestartTries), 10)
		b = append(b, `,"server_restart_wait_ns":`...)
		b = strconv.AppendInt(b, r.RestartWaitNs, 10)
	}
	if r.TotalBlocks > 0 {
		b = append(b, `,"theoretical_hit_blocks":`...)
		b = strconv.AppendInt(b, int64(r.HitBlocks), 10)
		b = append(b, `,"theoretical_total_blocks":`...)
		b = strconv.AppendInt(b, int64(r.TotalBlocks), 10)
	}
	b = append(b, `},"metrics":{`...)
	first := true
	vals := v.array()
	for i := range Metrics {
		m := &Metrics[i]
		x := vals[i]
		if !Has(x) || x > maxFinite || x < -maxFinite {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, m.Tag...)
		b = append(b, `":{"value":`...)
		b = appendNumber(b, x, m.Int)
		b = append(b, `,"unit":"`...)
		b = append(b, m.Unit...)
		b = append(b, `"}`...)
	}
	b = append(b, '}')
	if e := recordError(r); e != nil {
		b = append(b, `,"error":{`...)
		if e.Code != 0 {
			b = append(b, `"code":`...)
			b = strconv.AppendInt(b, int64(e.Code), 10)
			b = append(b, ',')
		}
		if e.Type != "" {
			b = append(b, `"type":`...)
			b = appendString(b, e.Type)
			b = append(b, ',')
		}
		if e.ServerType != "" {
			b = append(b, `"error_type":`...)
			b = appendString(b, e.ServerType)
			b = append(b, ',')
		}
		b = append(b, `"message":`...)
		b = appendString(b, e.Message)
		if e.Category != "" || islSource != "" {
			b = append(b, `,"details":{`...)
			if e.Category != "" {
				b = append(b, `"category":`...)
				b = appendString(b, e.Category)
			}
			if islSource != "" {
				if e.Category != "" {
					b = append(b, ',')
				}
				b = append(b, `"error_isl_source":`...)
				b = appendString(b, islSource)
			}
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	return append(b, '}', '\n')
}

// maxFinite is the largest finite float64; larger magnitudes are ±Inf.
const maxFinite = 1.7976931348623157e308

// cancelledError is the error written for a cancelled record that carries
// no error of its own.
var cancelledError = Error{Type: cancelledErrorType, Message: cancelledErrorText, Category: CategoryCancelled}

// recordError returns the error object to write for r: its Error, or the
// cancellation error for a cancelled record without one, or nil.
func recordError(r *Record) *Error {
	if r.Error != nil {
		return r.Error
	}
	if r.Cancelled {
		return &cancelledError
	}
	return nil
}

func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, ',')
	b = appendKey(b, key)
	return appendString(b, s)
}

func appendOptInt(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	b = append(b, ',')
	b = appendKey(b, key)
	return strconv.AppendInt(b, n, 10)
}

// appendPadded appends n in decimal, zero-padded to width digits.
func appendPadded(b []byte, n, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], int64(n), 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}
