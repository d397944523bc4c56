package metrics

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// tableMetrics are the per-record metrics shown in the summary table.
var tableMetrics = []string{
	"time_to_first_token", "time_to_second_token", "request_latency", "inter_token_latency",
	"full_response_inter_token_latency", "output_token_throughput_per_user",
	"input_sequence_length", "output_sequence_length", "usage_prompt_cache_read_tokens",
}

// fmtNum formats a table number: "-" for NaN, integers without decimals,
// otherwise two decimals.
func fmtNum(f float64) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "-"
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.2f", f)
}

// WriteTable writes the end-of-run human summary: counts, validity,
// duration and throughputs, the theoretical prefix-cache hit rate, a table
// of the main latency and token metrics, the most frequent errors and any
// warnings.
func (s *Summary) WriteTable(w io.Writer) error {
	var b strings.Builder
	info := &s.Info
	// A run with many failures says so before anything else.
	errRate := s.ErrorRateWarning()
	if errRate != "" {
		fmt.Fprintf(&b, "WARNING: %s\n", errRate)
	}
	fmt.Fprintf(&b, "agentperf summary")
	if info.BenchmarkID != "" {
		fmt.Fprintf(&b, " — benchmark %s", info.BenchmarkID)
	}
	if info.Scenario != "" {
		if info.Validity.Valid {
			fmt.Fprintf(&b, " — scenario %s: submission valid", info.Scenario)
		} else {
			fmt.Fprintf(&b, " — scenario %s: submission NOT valid (%s)", info.Scenario, strings.Join(info.Validity.Reasons, ", "))
		}
	}
	if info.Cancelled {
		b.WriteString(" — run cancelled")
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "Profiling: %d ok, %d errors, %d cancelled, %d context overflows; warmup: %d ok, %d errors, %d cancelled, %d context overflows\n",
		s.RequestCount, s.ErrorRequestCount, s.CancelledRequestCount, s.ContextOverflowCount,
		s.WarmupRequestCount, s.WarmupErrorCount, s.WarmupCancelledCount, s.WarmupOverflowCount)
	if a := info.Accounting; a.Sent > 0 {
		fmt.Fprintf(&b, "Requests sent: %d\n", a.Sent)
	}
	if !math.IsNaN(s.BenchmarkDuration) {
		fmt.Fprintf(&b, "Benchmark duration measured %.2f s (first request sent to last response); throughput %.3f req/s, output %.1f tok/s, input %.1f tok/s, total %.1f tok/s\n",
			s.BenchmarkDuration, s.RequestThroughput, s.OutputTokenThroughput, s.InputTokenThroughput, s.TotalTokenThroughput)
	}
	if s.TheoreticalTotalBlocks > 0 {
		fmt.Fprintf(&b, "Theoretical prefix-cache hit: %.2f %% (%d of %d blocks an infinite cache would hold; successful profiling requests)\n", s.TheoreticalHitPct, s.TheoreticalHitBlocks, s.TheoreticalTotalBlocks)
	}
	if x, ok := s.Scalar("overall_usage_prompt_cache_read_pct"); ok {
		fmt.Fprintf(&b, "Cached prompt tokens (the responses' usage): %.2f %% of the prompt tokens of successful profiling requests\n", x.Value)
	}
	var rows [][]string
	for _, tag := range tableMetrics {
		st, ok := s.Metric(tag)
		if !ok {
			continue
		}
		i, _ := metricByTag(tag)
		rows = append(rows, []string{metricLabel(Metrics[i].Header, st.Unit),
			fmtNum(st.Avg), fmtNum(st.Min), fmtNum(st.P50), fmtNum(st.P90), fmtNum(st.P99), fmtNum(st.Max), fmtNum(st.Std), fmt.Sprint(st.Count)})
	}
	if len(rows) > 0 {
		rows = append([][]string{{"Metric", "avg", "min", "p50", "p90", "p99", "max", "std", "count"}}, rows...)
		width := make([]int, len(rows[0]))
		for _, r := range rows {
			for j, c := range r {
				width[j] = max(width[j], utf8.RuneCountInString(c))
			}
		}
		b.WriteString("\n")
		for _, r := range rows {
			fmt.Fprintf(&b, "%-*s", width[0], r[0])
			for j := 1; j < len(r); j++ {
				fmt.Fprintf(&b, "  %*s", width[j], r[j])
			}
			b.WriteString("\n")
		}
	}
	if len(s.Errors) > 0 {
		b.WriteString("\nErrors (profiling):\n")
		for i, e := range s.Errors {
			if i == 5 {
				fmt.Fprintf(&b, "  … %d more distinct errors\n", len(s.Errors)-5)
				break
			}
			msg := e.Message
			if len(msg) > 120 {
				msg = msg[:120] + "…"
			}
			label := strings.TrimSpace(strings.Join([]string{codeStr(e.Code), e.Type}, " "))
			fmt.Fprintf(&b, "  %6d × %s: %s\n", e.Count, label, msg)
		}
	}
	for _, wr := range append(slices.Clone(info.Warnings), s.Warnings()...) {
		if strings.HasPrefix(wr, errorRateWarningPrefix) {
			continue // the first line
		}
		fmt.Fprintf(&b, "WARNING: %s\n", wr)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func codeStr(c int) string {
	if c == 0 {
		return ""
	}
	return fmt.Sprint(c)
}
