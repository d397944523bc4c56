// Package server scrapes the Prometheus /metrics endpoints of the inference
// server(s) during a run and writes aiperf's server_metrics_export.json and
// server_metrics_export.csv (every field: docs/artifacts.md).
//
// Collection: every configured endpoint is fetched every Config.Interval
// (default 333 ms, AIPERF_SERVER_METRICS_COLLECTION_INTERVAL), with a
// baseline scrape before warmup (Scraper.Baseline) and a final scrape at the
// end (Scraper.Final). A failed scrape is logged and counted, never fatal.
// Samples are kept as one float64 per series per successful scrape of its
// endpoint (histograms: their sum and count); histogram buckets, the bulk of
// a vLLM page, take constant memory each (bucketAcc), since only the window
// bounds need them. Memory grows linearly with run length and series count
// and with nothing else.
//
// Windows: the warmup window runs from the first scrape to the profiling
// start (Scraper.MarkProfilingStart); the profiling window from the
// profiling start to the profiling end (Scraper.MarkProfilingEnd). Counters
// and histograms are window deltas: the reference value is the last sample at
// or before the window start, the closing value the last sample at or before
// the window end — or the final scrape when it follows the profiling end, so
// that requests finishing at the end of the window are counted. A drop in a
// counter is a reset: the post-reset value is added (Prometheus increase()).
// Gauges use the raw samples inside the window.
//
// Aggregation across series depends on the metric type: counters are
// summed over series, gauges such as vllm:kv_cache_usage_perc are averaged
// over logical engines, never summed (InferenceX v0.2 summed a gauge over
// eight DP engines and reported a KV usage of 4.0 for 0.5 each). The derived figures
// (Derived) follow these rules and name their definitions explicitly.
package servermetrics
