package dataset

import (
	"strings"
	"testing"
)

func TestCacheFromEnv(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		enabled, dir string
		wantDir      string
		wantOn       bool
		wantErr      string
	}{
		{"", "", "", true, ""},
		{"", "/c", "/c", true, ""},
		{"TRUE", "/c", "/c", true, ""},
		{" on ", "", "", true, ""},
		{"false", "/c", "", false, ""},
		{"0", "", "", false, ""},
		{"Off", "/c", "", false, ""},
		{"maybe", "/c", "", false, `AIPERF_DATASET_MMAP_CACHE_ENABLED="maybe": want true or false`},
	} {
		env := map[string]string{EnvCacheEnabled: c.enabled, EnvCacheDir: c.dir}
		dir, on, err := CacheFromEnv(func(k string) string { return env[k] })
		if dir != c.wantDir || on != c.wantOn || (err == nil) != (c.wantErr == "") || err != nil && !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%q %q: %q %v %v", c.enabled, c.dir, dir, on, err)
		}
	}
}

func TestSourceFromHub(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    Source
		want bool
	}{
		{Source{HFDataset: "a/b"}, true},
		{Source{PublicDataset: "semianalysis_cc_traces_weka_062126"}, true},
		{Source{PublicDataset: "synthetic"}, false},
		{Source{PublicDataset: "synthetic:seed=3"}, false},
		{Source{InputFile: "x.jsonl"}, false},
		{Source{InputFile: "x.jsonl", PublicDataset: "weka_hf"}, false},
	} {
		if got := c.s.FromHub(); got != c.want {
			t.Errorf("%+v.FromHub() = %v", c.s, got)
		}
	}
}
