package suggest

import "testing"

func TestDidYouMean(t *testing.T) {
	t.Parallel()
	known := []string{"semianalysis_cc_traces_weka", "weka_trace", "synthetic"}
	for _, c := range []struct{ typed, want string }{
		{"synthetc", ` (did you mean "synthetic"?)`},
		{"SYNTHETIC", ` (did you mean "synthetic"?)`},
		{"weka_traces", ` (did you mean "weka_trace"?)`},
		{"semianalysis_cc_trace_weka", ` (did you mean "semianalysis_cc_traces_weka"?)`},
		{"synthetic", ""},
		{"llama", ""},
		{"", ""},
	} {
		if got := DidYouMean(c.typed, known); got != c.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", c.typed, got, c.want)
		}
	}
}
