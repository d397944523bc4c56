-- wrk script: POST a small chat completion to the agentperf simulator.
-- Environment: SIM_STREAM=1 for a streaming request, SIM_TOKENS=<n> output
-- tokens (ignore_eos, so exactly n tokens: n SSE content events plus the
-- role, usage and [DONE] events).
local stream = os.getenv("SIM_STREAM") == "1"
local tokens = tonumber(os.getenv("SIM_TOKENS") or "8")
local model = os.getenv("SIM_MODEL") or "agentperf-sim"

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = string.format(
  '{"model":"%s","messages":[{"role":"system","content":"You are a coding agent."},' ..
  '{"role":"user","content":"List the files in the repository and explain the build."}],' ..
  '"max_completion_tokens":%d,"ignore_eos":true,"stream":%s%s}',
  model, tokens, stream and "true" or "false",
  stream and ',"stream_options":{"include_usage":true}' or "")
-- No response() callback: it would make wrk hand every response to Lua
-- and lower the ceiling; wrk reports non-2xx responses itself.
