package slo

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
	}{
		{"ttft.p99<=2s,itl.p99<=50ms,errors<=1%", "time_to_first_token.p99<=2000ms,inter_token_latency.p99<=50ms,errors<=1%"},
		{" ttft.p50 < 250ms , e2el.avg<=1.5s ", "time_to_first_token.p50<250ms,request_latency.avg<=1500ms"},
		{"tpot.p90<=800us", "time_per_output_token.p90<=0.8ms"},
		{"tpot.p90<=800µs", "time_per_output_token.p90<=0.8ms"},
		{"time_to_first_token.max<=1e1s", "time_to_first_token.max<=10000ms"},
		{"output_token_throughput_per_user.p10>=30", "output_token_throughput_per_user.p10>=30"},
		{"request_throughput>2.5,output_token_throughput>=1000", "request_throughput>2.5,output_token_throughput>=1000"},
		{"ttft.p99<=2s,ttft.p50>=1ms", "time_to_first_token.p99<=2000ms,time_to_first_token.p50>=1ms"},
		{"errors<0.5%", "errors<0.5%"},
		{"input_sequence_length.p50>=100", "input_sequence_length.p50>=100"},
	} {
		s, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got := s.String(); got != tc.want {
			t.Errorf("Parse(%q) = %s, want %s", tc.in, got, tc.want)
		}
		again, err := Parse(s.String())
		if err != nil || again.String() != s.String() {
			t.Errorf("round trip of %q: %v, %v", s.String(), again.String(), err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		col  int // 1-based
		want string
	}{
		{"", 1, "empty objective"},
		{"ttft<=2s", 5, "needs a statistic"},
		{"ttft.p98<=2s", 6, "unknown statistic"},
		{"tfft.p99<=2s", 1, "unknown metric"},
		{"ttft.p99<=2", 12, "give the threshold a unit"},
		{"ttft.p99<=2h", 12, "unknown time unit"},
		{"ttft.p99=2s", 9, "expected a comparison"},
		{"ttft.p99<=", 11, "expected a non-negative number"},
		{"ttft.p99<=-1s", 11, "expected a non-negative number"},
		{"ttft.p99<=2s,,errors<=1%", 14, "empty term"},
		{"ttft.p99<=2s,errors<=1", 23, "in percent"},
		{"errors<=0.01", 13, "in percent"},
		{"errors<=101%", 9, "more than 100%"},
		{"errors.p99<=1%", 8, "takes no statistic"},
		{"request_throughput>=2rps", 22, "bare number"},
		{"ttft.p99<=2s ms", 14, "unexpected text"},
		{"ttft.p99<=2s,ttft.p99<3s", 14, "bounded twice"},
		{"ttft.p99<=2s,", 14, "empty term"},
		// Issue 34, case 14: a non-ASCII character is quoted whole, not
		// its first byte ("\xe2").
		{"ttft.p99≤2s", 9, `found "≤" (write <=)`},
		{"ttft.p99≥2s", 9, `found "≥" (write >=)`},
		{"µttft.p99<=2s", 1, `found "µ"`},
	} {
		_, err := Parse(tc.in)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a SyntaxError", tc.in, err)
			continue
		}
		if se.Pos+1 != tc.col || !strings.Contains(se.Msg, tc.want) {
			t.Errorf("Parse(%q): column %d %q; want column %d containing %q", tc.in, se.Pos+1, se.Msg, tc.col, tc.want)
		}
		if !strings.Contains(err.Error(), "column") {
			t.Errorf("error %q does not say where", err)
		}
	}
}

// FuzzParse: Parse never panics, errors carry a position inside the
// expression, and an accepted objective survives its canonical form.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"ttft.p99<=2s,itl.p99<=50ms,errors<=1%", "request_throughput>=1", "e2el.avg<1e3ms", "tpot.p50<=5us", ",", "ttft.p99<=", "errors<=1%%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := Parse(in)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q): %T %v, want a SyntaxError", in, err, err)
			}
			if se.Pos < 0 || se.Pos > len(in) {
				t.Fatalf("Parse(%q): position %d outside the input", in, se.Pos)
			}
			return
		}
		again, err := Parse(s.String())
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", s.String(), in, err)
		}
		if again.String() != s.String() {
			t.Fatalf("canonical form not stable: %q → %q", s.String(), again.String())
		}
	})
}
