package cliflags

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestWriteUsagesGroups(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringP("model", "m", "", "the model")
	fs.Int("concurrency", 0, "lanes")
	fs.String("url", "http://a", "the server")
	fs.Bool("streaming", false, "stream")
	fs.Bool("brand-new", false, "added later")
	fs.String("hidden", "", "secret")
	_ = fs.MarkHidden("hidden")
	SetGroups(fs, []Group{{Title: "Endpoint", Flags: []string{"url", "model", "streaming", "not-a-flag"}}, {Title: "Load", Flags: []string{"concurrency"}}}, "Other")
	var b strings.Builder
	WriteUsages(&b, fs, 110)
	want := "Endpoint flags:\n" +
		"      --url string        the server (default \"http://a\")\n" +
		"  -m, --model string      the model\n" +
		"      --streaming         stream\n" +
		"\nLoad flags:\n" +
		"      --concurrency int   lanes\n" +
		"\nOther flags:\n" +
		"      --brand-new         added later\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestWriteUsagesWrapsAndBreaksLongNames(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.String("a-very-long-flag-name-that-does-not-fit-the-column", "", "d")
	fs.String("b", "", strings.Repeat("word ", 30))
	var b strings.Builder
	WriteUsages(&b, fs, 60)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if lines[1] != "      --a-very-long-flag-name-that-does-not-fit-the-column string" || strings.TrimSpace(lines[2]) != "d" {
		t.Errorf("long name:\n%s", b.String())
	}
	// The column is capped at 34; a description keeps at least 30 runes.
	for _, l := range lines[3:] {
		if d := strings.TrimSpace(l[34+5:]); len(d) > 30 || l[:34+5] != strings.Repeat(" ", 39) && !strings.HasPrefix(l, "      --b string ") {
			t.Errorf("line %q", l)
		}
	}
}

func TestSuggestFlag(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("profile", pflag.ContinueOnError)
	fs.Int("concurrency", 0, "")
	fs.String("url", "", "")
	err := SuggestFlag(fs, fs.Parse([]string{"--concurrncy", "3"}), "agentperf")
	if err == nil || !strings.HasSuffix(err.Error(), ": did you mean --concurrency?") {
		t.Errorf("typo: %v", err)
	}
	err = SuggestFlag(fs, fs.Parse([]string{"--conc", "3"}), "agentperf")
	if err == nil || !strings.HasSuffix(err.Error(), "did you mean --concurrency?") {
		t.Errorf("prefix: %v", err)
	}
	err = SuggestFlag(fs, fs.Parse([]string{"--zzzzzzzz"}), "agentperf")
	if err == nil || !strings.HasSuffix(err.Error(), "(see 'agentperf profile --help' for the flags)") {
		t.Errorf("no match: %v", err)
	}
}

func TestJoinNargs(t *testing.T) {
	t.Parallel()
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.StringSlice("gpu", nil, "")
	fs.Int("n", 0, "")
	MarkNargs(fs, "gpu")
	for _, c := range []struct{ in, want []string }{
		{[]string{"--gpu", "a", "b", "--n", "1"}, []string{"--gpu=a,b", "--n", "1"}},
		{[]string{"--n", "1", "--gpu"}, []string{"--n", "1", "--gpu="}},
		{[]string{"--gpu=a", "--", "--gpu", "x"}, []string{"--gpu=a", "--", "--gpu", "x"}},
	} {
		if got := JoinNargs(fs, c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("JoinNargs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
