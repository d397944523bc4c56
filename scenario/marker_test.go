package scenario

import (
	"strings"
	"testing"
)

func TestMarkerGolden(t *testing.T) {
	t.Parallel()
	// Digests computed independently (Python hashlib) over
	// "<benchmark>:<pass>:<lane>:<base trace id>".
	for _, c := range []struct {
		bench       string
		pass, lane  int
		trace, want string
	}{
		{"bench-1", 0, 0, "trace-1", "[rid:acdd9ec9f8db]"},
		{"bench-1", 1, 0, "trace-1", "[rid:5dfe253a332a]"},
		{"bench-1", 0, 3, "trace-1", "[rid:b97fa3db8491]"},
		{"3c9d2f1a-7b64", 12, 255, "a1b2c3", "[rid:bb76b85ecae1]"},
		// Subagent children share their root's marker.
		{"bench-1", 0, 3, "trace-1::sa:explore_001", "[rid:b97fa3db8491]"},
		{"3c9d2f1a-7b64", 12, 255, "a1b2c3::fa:002::aux:1", "[rid:bb76b85ecae1]"},
	} {
		got := Marker(c.bench, c.pass, c.lane, c.trace)
		if got != c.want || len(got) != MarkerLen {
			t.Errorf("Marker(%q, %d, %d, %q) = %q, want %q", c.bench, c.pass, c.lane, c.trace, got, c.want)
		}
	}
	if b := AppendMarker([]byte("x"), "bench-1", 0, 0, "trace-1"); string(b) != "x[rid:acdd9ec9f8db]" {
		t.Errorf("AppendMarker = %q", b)
	}
}

// Every input changes the marker; nothing else (such as the phase) is an
// input, so the signature has no room for it and equal inputs give equal
// markers.
func TestMarkerInputs(t *testing.T) {
	t.Parallel()
	base := Marker("run", 0, 1, "t")
	for name, other := range map[string]string{
		"benchmark id": Marker("run2", 0, 1, "t"),
		"recycle pass": Marker("run", 1, 1, "t"),
		"lane":         Marker("run", 0, 2, "t"),
		"trace id":     Marker("run", 0, 1, "u"),
	} {
		if other == base {
			t.Errorf("changing the %s does not change the marker", name)
		}
	}
	if Marker("run", 0, 1, "t") != base {
		t.Error("marker not deterministic")
	}
	// "10:1" vs "1:01" style ambiguities cannot collide: fields are
	// colon-separated decimal integers.
	if Marker("a", 1, 11, "t") == Marker("a", 11, 1, "t") {
		t.Error("pass/lane swap collides")
	}
}

func TestBaseTraceID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"t": "t", "t::sa:x": "t", "a:b": "a:b", "::x": "", "t::": "t"} {
		if got := BaseTraceID(in); got != want {
			t.Errorf("BaseTraceID(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCacheBust(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]CacheBust{
		"none": CacheBustNone, "system_prefix": CacheBustSystemPrefix, "system-suffix": CacheBustSystemSuffix,
		"FIRST_TURN_PREFIX": CacheBustFirstTurnPrefix, " first_turn_suffix ": CacheBustFirstTurnSuffix,
	} {
		got, err := ParseCacheBust(in)
		if err != nil || got != want {
			t.Errorf("ParseCacheBust(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"warmup_isolation_prefix": "not supported yet",
		"warmup-isolation-suffix": "not supported yet",
		"user_prefix":             "first_turn_prefix",
		"":                        "none, system_prefix",
	} {
		_, err := ParseCacheBust(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCacheBust(%q) error = %v, want one containing %q", in, err, want)
		}
	}
}

func BenchmarkAppendMarker(b *testing.B) {
	b.ReportAllocs()
	buf := make([]byte, 0, 64)
	for b.Loop() {
		buf = AppendMarker(buf[:0], "3c9d2f1a-7b64-4e0f-9a51-0123456789ab", 3, 17, "trace-abcdef::sa:x")
	}
}
