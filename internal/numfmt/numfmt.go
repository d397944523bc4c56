// Package numfmt formats numbers for the text agentperf prints to people:
// counts with thousands separators and byte sizes in binary units. One
// place, so that every command and log line writes a count the same way.
package numfmt

import (
	"fmt"
	"strconv"
)

// Thousands formats n with a comma between each group of three digits:
// 1234567 → "1,234,567", -1234 → "-1,234" (as vLLM's log lines write a
// count).
func Thousands[T int | int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := s[0] == '-'
	if neg {
		s = s[1:]
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// Bytes formats n bytes in binary units: "512 B", "1.5 KiB", "20.0 MiB",
// up to EiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
