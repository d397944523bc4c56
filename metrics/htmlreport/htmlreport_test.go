package htmlreport

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fixtureDir copies testdata/run (the artifacts of a short simulator run:
// 6 lanes, synthetic corpus, warmup then 6 s of profiling) into a
// temporary folder.
func fixtureDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"profile_export.jsonl", "profile_export_aiperf.json", "server_metrics_export.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "run", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// chartPanels counts the panels of d that have data (a chart each).
func chartPanels(d *Data) int {
	n := 0
	for _, p := range d.Figure.Panels {
		for _, s := range p.Series {
			if len(s.X) > 0 {
				n++
				break
			}
		}
	}
	return n
}

func TestWriteDirIsSelfContained(t *testing.T) {
	t.Parallel()
	dir := fixtureDir(t)
	warnings, err := WriteDir(dir)
	if err != nil || len(warnings) > 0 {
		t.Fatalf("WriteDir: %v, warnings %v", err, warnings)
	}
	page, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	// Nothing is loaded from anywhere: no src/href attributes, no CSS
	// imports or URLs, and a policy that forbids any fetch.
	for _, re := range []string{`\ssrc\s*=`, `\shref\s*=`, `@import`, `url\(\s*['"]?(https?:|//)`, `fetch\(`, `XMLHttpRequest`} {
		if loc := regexp.MustCompile(re).FindIndex(page); loc != nil {
			t.Errorf("report.html refers to something outside itself (%s): %q", re, page[max(0, loc[0]-40):min(len(page), loc[1]+40)])
		}
	}
	if !bytes.Contains(page, []byte(`content="default-src 'none';`)) {
		t.Error("report.html lacks its Content-Security-Policy")
	}
	for _, marker := range []string{"/*__DATA__*/", "/*__UPLOT_JS__*/", "/*__APP_JS__*/", "/*__UPLOT_CSS__*/"} {
		if bytes.Contains(page, []byte(marker)) {
			t.Errorf("template marker %s left in the page", marker)
		}
	}
	if !bytes.Contains(page, []byte("uPlot")) || !bytes.Contains(page, []byte(`"Time to First Token"`)) {
		t.Error("the page lacks the library or the summary data")
	}
	d, _, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Figure.Panels) != 12 || chartPanels(d) < 8 || !d.Figure.HasProfilingStart {
		t.Errorf("%d panels, %d with data, profiling start known %v; want 12, at least 8 (no offload in the fixture), true",
			len(d.Figure.Panels), chartPanels(d), d.Figure.HasProfilingStart)
	}
}

func TestReadEmptyFolderIsAnError(t *testing.T) {
	t.Parallel()
	if _, _, err := Read(t.TempDir()); err == nil {
		t.Fatal("Read of an empty folder succeeded")
	}
}

// chromium returns the path of Debian's chromium, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed (apt-get install chromium): the browser test of report.html needs it")
	return ""
}

// runChromium runs headless Chromium on url with network access cut off
// and returns its standard output.
func runChromium(t *testing.T, bin string, extra ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + t.TempDir(),
		"--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=10000",
		"--window-size=1400,3000"}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, errb.String())
	}
	return out.String()
}

// TestReportInChromium loads report.html in headless Chromium with no
// network and checks, on the DOM after the scripts ran, that every panel
// is there and every panel with data has a drawn chart with its legend,
// that the summary is filled in, that no script failed, and that a zoom
// (given in the address as #t=from-to) applies to every chart. It also
// takes a screenshot (logged) to look at.
func TestReportInChromium(t *testing.T) {
	bin := chromium(t)
	dir := fixtureDir(t)
	if _, err := WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	d, _, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := chartPanels(d)
	url := "file://" + filepath.Join(dir, FileName)
	dom := runChromium(t, bin, "--dump-dom", url+"#t=2-8")

	if !strings.Contains(dom, `data-ready="1"`) {
		t.Fatalf("the page's script did not finish; DOM:\n%.3000s", dom)
	}
	if m := regexp.MustCompile(`data-charts="(\d+)"`).FindStringSubmatch(dom); m == nil || m[1] != strconv.Itoa(want) {
		t.Errorf("data-charts = %v, want %d", m, want)
	}
	if n := strings.Count(dom, `class="panel"`); n != 12 {
		t.Errorf("%d panels in the DOM, want 12", n)
	}
	if n := strings.Count(dom, `data-rendered="chart"`); n != want {
		t.Errorf("%d drawn charts, want %d", n, want)
	}
	if n := strings.Count(dom, `data-rendered="nodata"`); n != 12-want {
		t.Errorf("%d 'no data' panels, want %d", n, 12-want)
	}
	if n := strings.Count(dom, "<canvas"); n < want {
		t.Errorf("%d canvases, want at least %d", n, want)
	}
	if n := strings.Count(dom, `class="u-legend`); n != want {
		t.Errorf("%d chart legends (click to toggle series), want %d", n, want)
	}
	if n := strings.Count(dom, `data-range="2.0-8.0"`); n != want {
		t.Errorf("%d charts zoomed to 2-8 s by #t=2-8, want all %d", n, want)
	}
	if !regexp.MustCompile(`<pre id="errors" hidden=""></pre>`).MatchString(dom) {
		i := strings.Index(dom, `id="errors"`)
		t.Errorf("script errors: %.500s", dom[max(0, i-10):])
	}
	for _, s := range []string{`data-metric="time_to_first_token"`, `data-metric="request_throughput"`, ">concurrency<", "KV cache utilisation", "Preemptions"} {
		if !strings.Contains(dom, s) {
			t.Errorf("the DOM lacks %q", s)
		}
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	if keep := os.Getenv("AGENTPERF_SCREENSHOT_DIR"); keep != "" {
		shot = filepath.Join(keep, "report.png")
	}
	runChromium(t, bin, "--screenshot="+shot, url)
	if st, err := os.Stat(shot); err != nil || st.Size() < 50_000 {
		t.Errorf("screenshot %s: %v (a rendered page is larger than 50 kB)", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}

// TestCountsSayTheirScope: the request accounting covers the whole run
// (warmup and profiling) and the aggregate's counts the profiling phase;
// side by side on the page, each says which (before, "context overflows
// 2" and "Context Overflow Count 0" sat a few rows apart, unlabelled).
func TestCountsSayTheirScope(t *testing.T) {
	t.Parallel()
	d, _, err := Read(fixtureDir(t))
	if err != nil {
		t.Fatal(err)
	}
	facts := map[string]bool{}
	for _, f := range d.Facts {
		facts[f[0]] = true
	}
	for _, want := range []string{"requests sent (whole run: warmup and profiling)", "context overflows (whole run: warmup and profiling)", "cancelled (whole run: warmup and profiling)"} {
		if !facts[want] {
			t.Errorf("no fact %q among %v", want, d.Facts)
		}
	}
	names := map[string]string{}
	for _, s := range d.Scalars {
		names[s.Tag] = s.Name
	}
	for tag, want := range map[string]string{"context_overflow_count": "Context overflow count (profiling)", "request_count": "Request count (successful, profiling)"} {
		if names[tag] != want {
			t.Errorf("%s is named %q, want %q (scalars %v)", tag, names[tag], want, names)
		}
	}
}
