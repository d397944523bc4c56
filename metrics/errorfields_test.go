package metrics

import (
	"encoding/json"
	"testing"
)

// TestErrorRecordFields: an error record keeps both the HTTP reason phrase
// (type, as aiperf writes it) and the server's own error type (error_type,
// one of the keys InferenceX's processor buckets by), and names where its
// error_isl came from.
func TestErrorRecordFields(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		rec     Record
		wantSrc string
	}{
		{"isl from the trace", Record{RecordedIn: 9120, Error: &Error{Code: 429, Type: "Too Many Requests", ServerType: "RateLimitError", Message: "slow down", Category: CategoryHTTP}}, ErrorISLFromTrace},
		{"isl from usage", Record{RecordedIn: 9120, Usage: &Usage{PromptTokens: 9133}, Error: &Error{Type: "StreamError", ServerType: "InternalServerError", Message: "boom", Category: CategoryStreamError, Code: 500}}, ErrorISLFromUsage},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := Compute(&c.rec)
			line := appendRecordLine(nil, &c.rec, &v, "p")
			var m struct {
				Metrics map[string]struct{ Value float64 } `json:"metrics"`
				Error   struct {
					Type      string `json:"type"`
					ErrorType string `json:"error_type"`
					Message   string `json:"message"`
					Code      int    `json:"code"`
					Details   struct {
						Category       string `json:"category"`
						ErrorISLSource string `json:"error_isl_source"`
					} `json:"details"`
				} `json:"error"`
			}
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatalf("%v: %s", err, line)
			}
			e := m.Error
			if e.Type != c.rec.Error.Type || e.ErrorType != c.rec.Error.ServerType || e.Code != c.rec.Error.Code {
				t.Errorf("error %+v from %s", e, line)
			}
			if e.Details.Category != c.rec.Error.Category || e.Details.ErrorISLSource != c.wantSrc {
				t.Errorf("details %+v, want error_isl_source %q: %s", e.Details, c.wantSrc, line)
			}
			if want := map[string]float64{ErrorISLFromTrace: 9120, ErrorISLFromUsage: 9133}[c.wantSrc]; m.Metrics["error_isl"].Value != want {
				t.Errorf("error_isl %v, want %v", m.Metrics["error_isl"].Value, want)
			}
		})
	}
	var tally errorTally
	tally.add(&Error{Code: 429, Type: "Too Many Requests", ServerType: "RateLimitError", Message: "x"})
	if l := tally.list(); len(l) != 1 || l[0].ServerType != "RateLimitError" {
		t.Errorf("error summary %+v lost the server's type", l)
	}
}
