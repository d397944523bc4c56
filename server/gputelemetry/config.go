package gputelemetry

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// DefaultInterval is the scrape interval: aiperf's
// AIPERF_GPU_COLLECTION_INTERVAL default (0.333 s).
const DefaultInterval = 333 * time.Millisecond

// EnvURL is the variable InferenceX's recipes set to the DCGM exporter's
// URL (http://localhost:9400/metrics); it is read as one more
// --gpu-telemetry URL.
const EnvURL = "AIPERF_GPU_TELEMETRY_URL"

// DefaultURLs are the exporters probed when telemetry is on: aiperf's
// AIPERF_GPU_DEFAULT_DCGM_ENDPOINTS (DCGM exporter's port 9400, and 9401,
// where Dynamo runs it).
var DefaultURLs = []string{"http://localhost:9400/metrics", "http://localhost:9401/metrics"}

// Settings is the resolved telemetry choice of a run.
type Settings struct {
	// Off turns collection off.
	Off bool
	// URLs are the exporters named by the user (flag values, EnvURL).
	URLs []string
	// Probe are the default exporters, scraped when they answer.
	Probe []string
}

// Choice is what the user said about GPU telemetry.
type Choice struct {
	// Given is set when --gpu-telemetry was on the command line; Values
	// are its values (none: the flag alone).
	Given  bool
	Values []string
	// Off is --no-gpu-telemetry.
	Off bool
	// PresetOff is a scenario preset's default of no telemetry (agentx's
	// no_gpu_telemetry): it applies only when neither --gpu-telemetry nor
	// EnvURL was given.
	PresetOff bool
	// Env is EnvURL's value.
	Env string
}

// Resolve turns the user's choice into Settings. Values of
// --gpu-telemetry are URLs (host:port, with or without http:// and
// /metrics) or aiperf's word "dashboard" (the live view shows GPU
// telemetry whenever it is collected); aiperf's collectors that read the
// local driver ("pynvml", "amdsmi") and custom-metric CSV files are
// refused with what to do instead.
func Resolve(c Choice) (Settings, error) {
	if c.Off && c.Given {
		return Settings{}, fmt.Errorf("--gpu-telemetry and --no-gpu-telemetry contradict each other: give one")
	}
	if c.Off {
		return Settings{Off: true}, nil
	}
	var urls []string
	for _, v := range c.Values {
		for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
			switch low := strings.ToLower(item); {
			case low == "dashboard":
				continue
			case low == "pynvml" || low == "amdsmi":
				return Settings{}, fmt.Errorf("--gpu-telemetry %s: agentperf reads GPU exporters only (NVIDIA's DCGM exporter, AMD's device-metrics-exporter), not the local driver; run the exporter and give its URL, e.g. --gpu-telemetry localhost:9400", item)
			case strings.HasSuffix(low, ".csv"):
				return Settings{}, fmt.Errorf("--gpu-telemetry %s: custom metric CSV files are not supported; agentperf reads a fixed set of fields (docs/gpu-telemetry.md)", item)
			}
			u, err := NormalizeURL(item)
			if err != nil {
				return Settings{}, fmt.Errorf("--gpu-telemetry %q: %w", item, err)
			}
			urls = append(urls, u)
		}
	}
	if c.Env != "" {
		for _, item := range strings.FieldsFunc(c.Env, func(r rune) bool { return r == ',' || r == ' ' }) {
			u, err := NormalizeURL(item)
			if err != nil {
				return Settings{}, fmt.Errorf("%s=%q: %w", EnvURL, c.Env, err)
			}
			urls = append(urls, u)
		}
	}
	if c.PresetOff && !c.Given && c.Env == "" {
		return Settings{Off: true}, nil
	}
	return Settings{URLs: dedup2(urls), Probe: append([]string(nil), DefaultURLs...)}, nil
}

// NormalizeURL completes an exporter address: http:// when no scheme,
// /metrics when no path.
func NormalizeURL(s string) (string, error) {
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("want an exporter URL such as http://localhost:9400/metrics")
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/metrics"
	}
	return u.String(), nil
}

func dedup2(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
