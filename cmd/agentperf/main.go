// Command agentperf replays recorded agentic-coding sessions against an
// OpenAI-compatible server and measures what they do to it.
//
// Exit codes (one table for scripts):
//
//	0    success (also --help)
//	1    the run failed or is not a valid submission (artifacts are written)
//	2    usage or input error (bad flag, bad corpus, unsupported option)
//	130  interrupted by a signal
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
