package cliflags

import "testing"

// TestRenamer: whole names only, the longest first, and a field error's
// "Field: " made "--flag ".
func TestRenamer(t *testing.T) {
	r := NewRenamer(map[string]string{"Config.URL": "--url", "Config.URLs": "--urls", "Spec.X": "--x", "the X of Spec.X": "--x-phrase"})
	for in, want := range map[string]string{
		"Config.URL: required":             "--url required",
		"Config.URLs: empty":               "--urls empty",
		"see Config.URL and Config.URLs":   "see --url and --urls",
		"MyConfig.URL is not a field":      "MyConfig.URL is not a field",
		"Config.URLx stays":                "Config.URLx stays",
		"the X of Spec.X: too big":         "--x-phrase too big",
		"Spec.X: 3: out of range (Spec.X)": "--x 3: out of range (--x)",
	} {
		if got := r.Rename(in); got != want {
			t.Errorf("Rename(%q) = %q, want %q", in, got, want)
		}
	}
}
