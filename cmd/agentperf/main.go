// Command agentperf replays recorded agentic-coding sessions against an
// OpenAI-compatible server and measures what they do to it.
//
// Exit codes (one table for scripts):
//
//	0    success (also --help)
//	1    the run failed or is not a valid submission (artifacts are written)
//	2    usage or input error (bad flag, bad corpus, unsupported option)
//	130  interrupted by a signal (artifacts are written)
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// processStart is when the process started (package initialisation), for
// the start-up figure in the log.
var processStart = time.Now()

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "\nagentperf: %v: stopping gracefully (signal again to exit at once)\n", s)
		cancel()
		<-sigs
		fmt.Fprintln(os.Stderr, "agentperf: second signal: exiting at once; output may be incomplete")
		os.Exit(exitInterrupted)
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}
