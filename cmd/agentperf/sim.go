package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/agentperf/agentperf/server/sim"
)

func init() {
	register(command{name: "sim", summary: "run the vLLM-like simulated server", run: runSim})
}

const simExamples = `  agentperf sim
  agentperf sim --port 8000 --zero-latency
  agentperf sim --max-model-len 32768 --kv-capacity-tokens 200000 --offload-capacity-tokens 1000000
  agentperf sim --engines 4 --fault-500-rate 0.01 --fault-stall-every 50`

// runSim serves the simulator until the context is cancelled (SIGINT or
// SIGTERM), then shuts down, giving in-flight requests a few seconds.
func runSim(ctx context.Context, args []string, io stdio) error {
	cfg := sim.DefaultConfig()
	fs := newFlagSet("sim", "sim [--host 127.0.0.1] [--port 8000] [knobs]", simExamples, io.out)
	host := fs.String("host", "127.0.0.1", "address to listen on (use 0.0.0.0 to serve other machines)")
	port := fs.Int("port", 8000, "TCP port (0 picks a free one)")
	quiet := fs.Bool("quiet", false, "do not log injected faults")
	grace := fs.Duration("shutdown-grace", 5*time.Second, "how long in-flight requests may finish after SIGINT/SIGTERM")
	reqLog := fs.String("request-log", "", "write one JSON line per completion request to this file (arrival, request ids, prompt tokens, first content byte; for benchmarks)")
	sim.RegisterFlags(fs, &cfg)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("sim: unexpected argument %q (all settings are flags)", fs.Arg(0))
	}
	if *port < 0 || *port > 65535 {
		return usagef("sim: --port %d: must be in 0..65535", *port)
	}
	cfg.Addr = net.JoinHostPort(*host, strconv.Itoa(*port))
	if !*quiet {
		cfg.Logf = func(format string, a ...any) { fmt.Fprintf(io.err, format+"\n", a...) }
	}
	var logW *sim.RequestLogFile
	if *reqLog != "" {
		var err error
		if logW, err = sim.CreateRequestLog(*reqLog); err != nil {
			return usagef("sim: --request-log: %v", err)
		}
		defer logW.Close()
		cfg.RequestLog = logW
	}
	srv, err := sim.New(cfg)
	if err != nil {
		return asUsage(err)
	}
	if err := srv.Start(); err != nil {
		return err
	}
	c := srv.Config()
	fmt.Fprintf(io.out, "agentperf sim: serving model %q at %s (OpenAI API under /v1, metrics at /metrics)\n", c.Model, srv.URL)
	fmt.Fprintf(io.out, "agentperf sim: %d engine(s), max-model-len %d, KV %d tokens, offload %d tokens, zero-latency %v\n",
		c.Engines, c.MaxModelLen, c.KVCapacityTokens, c.OffloadCapacityTokens, c.ZeroLatency)
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintf(io.err, "agentperf sim: shutdown: %v\n", err)
	}
	if logW != nil {
		if err := logW.Flush(); err != nil {
			return fmt.Errorf("sim: write --request-log %s: %w", *reqLog, err)
		}
	}
	st := srv.Stats()
	fmt.Fprintf(io.out, "agentperf sim: stopped after %d requests (%d completed, %d prompt tokens, %d cached)\n",
		st.Requests, st.Completed, st.PromptTokens, st.CachedTokens)
	return nil
}
