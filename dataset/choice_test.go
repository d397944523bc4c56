package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestChoiceSource: the weka_hf loader with an HF dataset is that dataset,
// a negative limit is a field error, and a choice of nothing says how to
// name a corpus.
func TestChoiceSource(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		c       Choice
		want    Source
		wantErr string
	}{
		{"file", Choice{InputFile: "x.jsonl"}, Source{InputFile: "x.jsonl"}, ""},
		{"alias", Choice{PublicDataset: "synthetic"}, Source{PublicDataset: "synthetic"}, ""},
		{"weka_hf alone is an alias", Choice{PublicDataset: WekaHF}, Source{PublicDataset: WekaHF}, ""},
		{"weka_hf with a dataset", Choice{PublicDataset: WekaHF, HFDataset: "a/b"}, Source{HFDataset: "a/b"}, ""},
		{"weka_trace with a file", Choice{PublicDataset: "weka_trace", InputFile: "d"}, Source{PublicDataset: "weka_trace", InputFile: "d"}, ""},
		{"two left to Open", Choice{InputFile: "x", HFDataset: "a/b"}, Source{InputFile: "x", HFDataset: "a/b"}, ""},
		{"none", Choice{}, Source{}, "no dataset given: pass Source.InputFile PATH, Source.PublicDataset ALIAS (e.g. synthetic) or Source.HFDataset ORG/NAME[@REV]"},
		{"negative context", Choice{InputFile: "x", Select: SelectOptions{MaxContextLength: -1}}, Source{}, "SelectOptions.MaxContextLength: -1: must be 0 (no limit) or positive"},
		{"negative osl", Choice{InputFile: "x", Select: SelectOptions{MaxOSL: -2}}, Source{}, "SelectOptions.MaxOSL: -2: must be 0 (no limit) or positive"},
		{"negative entries before none", Choice{Select: SelectOptions{NumEntries: -3}}, Source{}, "SelectOptions.NumEntries: -3: must be 0 (no limit) or positive"},
	} {
		got, err := c.c.Source()
		if got != c.want || (err == nil) != (c.wantErr == "") || err != nil && err.Error() != c.wantErr {
			t.Errorf("%s: Source() = %+v, %v; want %+v, %q", c.name, got, err, c.want, c.wantErr)
		}
		var fe *FieldError
		if strings.HasPrefix(c.wantErr, "SelectOptions.") && !errors.As(err, &fe) {
			t.Errorf("%s: %v is not a *FieldError", c.name, err)
		}
	}
}

// TestChoiceCache: the choice wins over the environment: NoCache turns the
// cache off, a CacheDir on; a bad environment value is an error either way.
func TestChoiceCache(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		env     map[string]string
		c       Choice
		wantDir string
		wantOn  bool
		wantErr string
	}{
		{"default", nil, Choice{}, "", true, ""},
		{"env dir", map[string]string{EnvCacheDir: "/e"}, Choice{}, "/e", true, ""},
		{"flag beats env", map[string]string{EnvCacheDir: "/e"}, Choice{CacheDir: "/f"}, "/f", true, ""},
		{"env disables", map[string]string{EnvCacheDir: "/e", EnvCacheEnabled: "0"}, Choice{}, "", false, ""},
		{"flag disables", map[string]string{EnvCacheDir: "/e"}, Choice{NoCache: true}, "", false, ""},
		{"no cache beats a dir", nil, Choice{NoCache: true, CacheDir: "/f"}, "", false, ""},
		{"explicit dir re-enables", map[string]string{EnvCacheEnabled: "false"}, Choice{CacheDir: "/f"}, "/f", true, ""},
		{"bad env", map[string]string{EnvCacheEnabled: "maybe"}, Choice{CacheDir: "/f"}, "", false, EnvCacheEnabled},
	} {
		getenv := func(k string) string { return c.env[k] }
		dir, on, err := c.c.Cache(getenv)
		if dir != c.wantDir || on != c.wantOn || (err == nil) != (c.wantErr == "") || err != nil && !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("%s: Cache() = %q, %v, %v; want %q, %v, %q", c.name, dir, on, err, c.wantDir, c.wantOn, c.wantErr)
		}
		active := c.c.ActiveCacheDir(getenv)
		switch {
		case !c.wantOn && active != "":
			t.Errorf("%s: ActiveCacheDir() = %q with the cache off", c.name, active)
		case c.wantDir != "" && active != c.wantDir:
			t.Errorf("%s: ActiveCacheDir() = %q, want %q", c.name, active, c.wantDir)
		}
		opt, err := c.c.Options(getenv)
		if (err == nil) != (c.wantErr == "") || err == nil && (opt.CacheDir != c.wantDir || opt.CacheEnabled != c.wantOn || opt.Getenv == nil) {
			t.Errorf("%s: Options() = %+v, %v", c.name, opt, err)
		}
	}
	if d, err := DefaultCacheDir(); err == nil {
		if got := (Choice{}).ActiveCacheDir(func(string) string { return "" }); got != d {
			t.Errorf("ActiveCacheDir() = %q, want the default %q", got, d)
		}
	}
}

func TestChoiceOptionsAndFromHub(t *testing.T) {
	t.Parallel()
	c := Choice{HFDataset: "a/b", PublicDataset: WekaHF, Read: ReadOptions{SkipInvalid: true}, Select: SelectOptions{MaxContextLength: 5, MaxOSL: 6, NumEntries: 7}}
	opt, err := c.Options(func(string) string { return "" })
	if err != nil || opt.Read != c.Read || opt.Select != c.Select || opt.Hub != nil || opt.Logf != nil {
		t.Errorf("Options() = %+v, %v", opt, err)
	}
	for _, c := range []struct {
		c    Choice
		want bool
	}{
		{Choice{HFDataset: "a/b"}, true},
		{Choice{PublicDataset: WekaHF}, true},
		{Choice{PublicDataset: WekaHF, HFDataset: "a/b"}, true},
		{Choice{PublicDataset: "synthetic"}, false},
		{Choice{InputFile: "x"}, false},
	} {
		if got := c.c.FromHub(); got != c.want {
			t.Errorf("%+v.FromHub() = %v", c.c, got)
		}
	}
}

func TestSourceCacheable(t *testing.T) {
	t.Parallel()
	for _, s := range []Source{{InputFile: "x"}, {HFDataset: "a/b"}, {PublicDataset: "semianalysis_cc_traces_weka_062126"}} {
		if err := s.Cacheable(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
	for _, p := range []string{"synthetic", "synthetic:seed=3", "synthetic:bad=1"} {
		err := Source{PublicDataset: p}.Cacheable()
		var fe *FieldError
		if err == nil || !errors.As(err, &fe) || err.Error() != "Source.PublicDataset: "+p+" is generated in memory and never cached" {
			t.Errorf("%s: %v", p, err)
		}
	}
}

// TestCacheTexts: what dataset cache build and locate print, before and
// after the file is built.
func TestCacheTexts(t *testing.T) {
	t.Parallel()
	in := filepath.Join(t.TempDir(), "c.jsonl")
	if err := WriteJSONLFile(in, Synthesize(SynthOptions{Traces: 3})); err != nil {
		t.Fatal(err)
	}
	src, opt := Source{InputFile: in}, Options{CacheEnabled: true, CacheDir: t.TempDir()}
	loc, err := Locate(t.Context(), src, opt)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	loc.WriteText(&b)
	if want := loc.Path + "\n  key " + loc.Key + " (missing)\n"; b.String() != want {
		t.Errorf("locate before the build:\n%s\nwant\n%s", b.String(), want)
	}
	for _, state := range []string{"built", "already cached"} {
		c := cacheMustOpen(t, src, opt)
		b.Reset()
		if err := c.WriteCacheText(&b, 1234567*time.Microsecond); err != nil {
			t.Fatal(err)
		}
		re := "^" + state + ": " + regexp.QuoteMeta(loc.Path) + "\n  3 traces, [0-9]+\\.[0-9] MB, 1.235s\n$"
		if !regexp.MustCompile(re).MatchString(b.String()) {
			t.Errorf("build:\n%q\nwant %q", b.String(), re)
		}
	}
	b.Reset()
	loc.WriteText(&b)
	if !regexp.MustCompile(`^` + regexp.QuoteMeta(loc.Path) + `\n  key [0-9a-f]{32} \(exists, [0-9]+\.[0-9] MB\)\n$`).MatchString(b.String()) {
		t.Errorf("locate after the build:\n%s", b.String())
	}
	mem := cacheMustOpen(t, src, Options{})
	if err := mem.WriteCacheText(&b, 0); err == nil {
		t.Error("WriteCacheText of a corpus without a cache file: no error")
	}
}

func TestInfoWriteJSON(t *testing.T) {
	t.Parallel()
	c := cacheMustOpen(t, Source{PublicDataset: "synthetic:traces=2"}, Options{})
	info := NewInfo(c)
	var b bytes.Buffer
	if err := info.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	want, _ := json.MarshalIndent(info, "", "  ")
	if b.String() != string(want)+"\n" {
		t.Errorf("WriteJSON:\n%s\nwant\n%s", b.String(), want)
	}
}

func TestCheckJSONLPath(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"a.jsonl", "d/a.jsonl.zst", "a.jsonl.gz", "a.jsonl.gz.zst"} {
		if err := CheckJSONLPath(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, p := range []string{"a.json", "a.jsonl.zstd", "a.txt.gz", "-"} {
		if err := CheckJSONLPath(p); err == nil || err.Error() != p+": the name must end in .jsonl, .jsonl.zst or .jsonl.gz" {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestHFRefRev(t *testing.T) {
	t.Parallel()
	if r := (HFRef{Repo: "a/b"}).Rev(); r != "main" {
		t.Errorf("Rev() of no revision = %q", r)
	}
	if r := (HFRef{Repo: "a/b", Revision: "v2"}).Rev(); r != "v2" {
		t.Errorf("Rev() = %q", r)
	}
}

// TestSelectOptionsValidate: Select refuses what Validate refuses, with
// its prefix.
func TestSelectOptionsValidate(t *testing.T) {
	t.Parallel()
	if err := (SelectOptions{}).Validate(); err != nil {
		t.Error(err)
	}
	o := SelectOptions{MaxOSL: -1}
	err := o.Validate()
	if err == nil || err.Error() != "SelectOptions.MaxOSL: -1: must be 0 (no limit) or positive" {
		t.Errorf("Validate() = %v", err)
	}
	_, _, serr := Select(Synthesize(SynthOptions{Traces: 1}), o)
	if serr == nil || serr.Error() != "select traces: "+err.Error() {
		t.Errorf("Select() = %v", serr)
	}
}
