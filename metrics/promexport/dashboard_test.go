package promexport_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentperf/agentperf/metrics"
	"github.com/agentperf/agentperf/metrics/promexport"
	"github.com/agentperf/agentperf/server/sim"
)

const dashboardFile = "../../docs/grafana/agentperf-dashboard.json"

// TestGrafanaDashboard holds the dashboard the docs carry to Grafana's
// dashboard schema (the Grafana Foundation SDK's strict decoder and
// validation, generated from Grafana's schema) and checks that every
// panel's query names only metrics that exist: agentperf's on its
// exporter, vLLM's on the simulator's /metrics (which exports vLLM's
// names).
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	rt := cog.NewRuntime()
	rt.RegisterPanelcfgVariant(timeseries.VariantConfig())
	rt.RegisterPanelcfgVariant(stat.VariantConfig())
	var d dashboard.Dashboard
	if err := noErrors(d.UnmarshalJSONStrict(raw)); err != nil {
		t.Fatalf("%s does not decode strictly as a Grafana dashboard: %v", dashboardFile, err)
	}
	if err := noErrors(d.Validate()); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}

	// The metrics that exist.
	exist := map[string]bool{}
	e := promexport.New(promexport.Options{Tally: &metrics.Tally{}})
	// A histogram's family is exported from its first observation.
	e.Add(&metrics.Record{Phase: metrics.PhaseProfiling, CreditIssuedNs: 1e9, RequestStartNs: 1e9 + 2e6, FirstChunkNs: 1.1e9, SecondChunkNs: 1.12e9,
		LastChunkNs: 1.5e9, RequestEndNs: 1.5e9, ContentChunks: 10, Usage: &metrics.Usage{PromptTokens: 100, CompletionTokens: 10}})
	mfs, err := e.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		exist[mf.GetName()] = true
	}
	srv, err := sim.New(sim.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tp := expfmt.NewTextParser(model.UTF8Validation)
	sfs, err := tp.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	for name := range sfs {
		exist[name] = true
	}

	// Every query of every panel, and of the variables.
	var doc struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	// A metric name, not a variable ($agentperf_job).
	name := regexp.MustCompile(`(?:^|[^$\w:])(agentperf_[a-z0-9_]+|vllm:[a-z0-9_]+)`)
	queries, client, server := 0, 0, 0
	check := func(where, q string) {
		ms := name.FindAllStringSubmatch(q, -1)
		if len(ms) == 0 {
			t.Errorf("%s: query %q names no agentperf or vLLM metric", where, q)
		}
		for _, sm := range ms {
			m := sm[1]
			base := m
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(m, suf); ok && exist[b] {
					base = b
				}
			}
			// The exposition names counters with _total; the parsed
			// family of a counter keeps it.
			if !exist[base] {
				t.Errorf("%s: %s is not exported (by agentperf --metrics-listen or the simulator's vLLM /metrics)", where, m)
			}
		}
	}
	for _, p := range doc.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries++
			check("panel "+p.Title, tg.Expr)
		}
		switch {
		case strings.HasPrefix(p.Title, "Client"):
			client++
		case strings.HasPrefix(p.Title, "Server"):
			server++
		}
	}
	for _, v := range doc.Templating.List {
		if v.Definition != "" {
			check("variable", v.Definition)
		}
	}
	if client == 0 || client != server {
		t.Errorf("%d client and %d server panels: want them side by side, in pairs", client, server)
	}
	if queries < 20 {
		t.Errorf("only %d queries", queries)
	}
}

// noErrors is err, or nil for the empty cog.BuildErrors the SDK returns
// (a nil slice in a non-nil error) when it found nothing.
func noErrors(err error) error {
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		return nil
	}
	return err
}
