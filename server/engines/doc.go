// Package engines is agentperf's one table of what it knows about each
// inference engine it may be pointed at: vLLM, SGLang, TensorRT-LLM,
// Dynamo and llama.cpp (docs/engines.md prints the table).
//
// For each engine it holds how the backend is detected from the metric
// families a /metrics page exports, the names of the series every surface
// reads (running and waiting requests, KV usage, prefix-cache queries,
// hits and cached tokens, prompt and generation tokens, preemptions,
// offload), how a counter differs from vLLM's (llama.cpp's prompt-token
// counter excludes cached tokens), its context-overflow texts, where its
// KV pool size is found and the advice to give on an overflow.
//
// The live view, the dashboard's diagnosis, the summary, the plots,
// report.html, the InferenceX JSON, `report --check` and the overflow
// classifier's defaults all read it, so adding an engine touches this
// package only. A server whose metric families match no engine is
// Unknown: Detect names the families it saw, and every surface says so
// instead of showing an empty figure.
//
// The package imports nothing of agentperf: it sits at the floor.
package engines
