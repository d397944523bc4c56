package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/agentperf/agentperf/internal/cliflags"
)

// helpOf runs `agentperf args... --help` and returns what it printed.
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := runMain(context.Background(), append(args, "--help"), &out, &errb); code != exitOK {
		t.Fatalf("%v --help: exit %d\n%s%s", args, code, out.String(), errb.String())
	}
	return out.String() + errb.String()
}

func TestProfileHelpIsGrouped(t *testing.T) {
	t.Parallel()
	h := helpOf(t, "profile")
	var titles []string
	for _, m := range regexp.MustCompile(`(?m)^(\w+) flags:$`).FindAllStringSubmatch(h, -1) {
		titles = append(titles, m[1])
	}
	if got := strings.Join(titles, ","); got != "Endpoint,Load,Dataset,Output,Scenario,Other" {
		t.Errorf("help groups %q, want Endpoint,Load,Dataset,Output,Scenario,Other", got)
	}
	section := func(title string) string {
		i := strings.Index(h, title+" flags:")
		rest := h[i+len(title)+7:]
		if j := strings.Index(rest, " flags:\n"); j >= 0 {
			return rest[:j]
		}
		return rest
	}
	for title, flags := range map[string][]string{
		"Endpoint": {"--url string", "--streaming ", "--model strings"},
		"Load":     {"--concurrency int ", "--benchmark-duration float"},
		"Dataset":  {"--input-file string", "--public-dataset string", "--max-context-length int", "--tokenizer string"},
		"Output":   {"--output-artifact-dir string", "--ui-type string"},
		"Scenario": {"--scenario string", "--unsafe-override "},
		"Other":    {"--pprof-addr string"},
	} {
		for _, f := range flags {
			if !strings.Contains(section(title), f) {
				t.Errorf("%s flags lack %q:\n%s", title, f, section(title))
			}
		}
	}
	if strings.Contains(h, "[=true|false]") || strings.Contains(h, "--concurrency string") {
		t.Errorf("bool flags must show as --name and --concurrency as an int:\n%s", h)
	}
	if strings.Contains(h, "--request-rate") {
		t.Error("the hidden unsupported flags appear in the help")
	}
}

// TestUngroupedFlagsStillShown: a flag added to a command without being put
// in its help table is listed under the default group.
func TestUngroupedFlagsStillShown(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	fs := newFlagSet("x", "x", "", &b)
	fs.String("url", "", "u")
	fs.Bool("brand-new", false, "added later")
	cliflags.SetGroups(fs, []cliflags.Group{{Title: "Endpoint", Flags: []string{"url"}}}, "Other")
	fs.Usage()
	if h := b.String(); !regexp.MustCompile(`(?s)Endpoint flags:\n\s+--url string.*Other flags:\n\s+--brand-new\s+added later`).MatchString(h) {
		t.Errorf("help:\n%s", h)
	}
}

func TestEveryCommandHasExamples(t *testing.T) {
	t.Parallel()
	cmds := [][]string{{"dataset"}, {"dataset", "info"}, {"dataset", "cache"}, {"dataset", "synth"}, {"dataset", "show"},
		{"profile"}, {"report"}, {"sim"}, {"version"}}
	for name := range commands {
		found := false
		for _, c := range cmds {
			found = found || c[0] == name
		}
		if !found {
			cmds = append(cmds, []string{name})
		}
	}
	for _, c := range cmds {
		if h := helpOf(t, c...); !strings.Contains(h, "Examples:\n  ") {
			t.Errorf("agentperf %s --help has no examples:\n%s", strings.Join(c, " "), h)
		}
	}
	var out bytes.Buffer
	runMain(context.Background(), []string{"--help"}, &out, &out)
	if !strings.Contains(out.String(), "Examples:\n  agentperf profile") {
		t.Errorf("agentperf --help has no examples:\n%s", out.String())
	}
}

func TestDidYouMean(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ args, want string }{
		{"profile --concurency 4", "unknown flag: --concurency: did you mean --concurrency?"},
		{"profile --benchmark-duraton 4", "did you mean --benchmark-duration?"},
		{"profile --zzzzzzzz", "see 'agentperf profile --help'"},
		{"profil", `unknown command "profil" (did you mean "profile"?)`},
	} {
		var out, errb bytes.Buffer
		code := runMain(context.Background(), strings.Fields(c.args), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", c.args, code, errb.String(), c.want)
		}
		if n := strings.Count(errb.String(), "unknown"); n != 1 {
			t.Errorf("%s: the error is printed %d times:\n%s", c.args, n, errb.String())
		}
	}
}

// TestVersion is not parallel: it sets the package's version variable.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var out, errb bytes.Buffer
		if code := runMain(context.Background(), args, &out, &errb); code != exitOK || !strings.HasPrefix(out.String(), "agentperf ") {
			t.Errorf("%v: exit %d, %q %q", args, code, out.String(), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := runMain(context.Background(), []string{"version", "extra"}, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), `unexpected argument "extra"`) {
		t.Errorf("version extra: exit %d, %q: want exit 2 naming the argument", code, errb.String())
	}
	old := version
	defer func() { version = old }()
	version = "v1.2.3"
	if productVersion() != "agentperf v1.2.3" {
		t.Errorf("with -X main.version=v1.2.3 the artifacts would say %q", productVersion())
	}
}

// TestHelpAgreesWithBehaviour: what help and messages say is what the
// command does. search chooses the concurrency (its help does not list
// --concurrency as required) and asks for --probe-duration by that name;
// profile's --concurrency 4,8 points at `agentperf sweep`; dataset show
// points at `dataset plan`, which lists the traces; and a signal to a
// command that writes no artifacts (the simulator) does not promise them.
func TestHelpAgreesWithBehaviour(t *testing.T) {
	t.Parallel()
	if h := helpOf(t, "search"); regexp.MustCompile(`(?m)^\s+--concurrency `).MatchString(h) {
		t.Errorf("search --help lists --concurrency, which search refuses:\n%s", h)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"search", "--url", "sim://", "--model", "m", "--slo", "ttft.p99<=2s", "--public-dataset", "synthetic", "--output-artifact-dir", t.TempDir()},
			"search: --probe-duration is required"},
		{[]string{"profile", "--url", "sim://", "--model", "m", "--concurrency", "4,8", "--benchmark-duration", "1", "--public-dataset", "synthetic", "--output-artifact-dir", t.TempDir()},
			"agentperf sweep --concurrency 4,8"},
		{[]string{"dataset", "show", "--public-dataset", "synthetic"}, "agentperf dataset plan"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if code := runMain(context.Background(), c.args, &out, &errb); code != exitUsage || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit %d and %q", c.args, code, errb.String(), exitUsage, c.want)
		}
	}
	if m := stopMessage(syscall.SIGTERM, true, []string{"sim", "--port", "8000"}); strings.Contains(m, "artifact") {
		t.Errorf("agentperf sim on SIGTERM: %q promises artifacts it does not write", m)
	}
	if m := stopMessage(syscall.SIGTERM, true, []string{"profile"}); !strings.Contains(m, "every artifact is written") {
		t.Errorf("agentperf profile on SIGTERM: %q", m)
	}
}
