-- wrk script: POST the request body in the file named by BODY_FILE (bench/run
-- writes the body agentperf sends for a turn of its ceiling corpus, so both
-- clients send the same bytes to the same server).
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = f:read("*a")
f:close()
