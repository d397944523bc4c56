// Command agentperf replays recorded agentic-coding sessions against an
// OpenAI-compatible server and measures what they do to it.
//
// Exit codes (one table for scripts):
//
//	0    success (also --help)
//	1    the run failed or is not a valid submission (artifacts are written)
//	2    usage or input error (bad flag, bad corpus, unsupported option)
//	130  interrupted by a signal (artifacts are written)
//
// Signals (SIGINT, SIGTERM): the first stops a run gracefully (no new
// requests; those in flight get the grace period); the second cancels the
// requests in flight at once, and every artifact is still written from
// what was recorded, marked cancelled and "interrupted twice"; only a third
// exits at once and may leave partial (.partial) files. A command that has
// nothing to cut short exits at the second.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// processStart is when the process started (package initialisation), for
// the start-up figure in the log.
var processStart = time.Now()

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	ks := &killSwitch{ch: make(chan struct{})}
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "\nagentperf: %v: stopping gracefully (a second signal stops at once; a run still writes its artifacts)\n", s)
		cancel()
		<-sigs
		if !ks.claimed.Load() {
			fmt.Fprintln(os.Stderr, "agentperf: second signal: exiting at once")
			os.Exit(exitInterrupted)
		}
		fmt.Fprintln(os.Stderr, "agentperf: second signal: cancelling the requests in flight now; every artifact is still written (a third signal exits at once and may leave .partial files)")
		close(ks.ch)
		<-sigs
		fmt.Fprintln(os.Stderr, "agentperf: third signal: exiting at once; the artifacts may be incomplete (.partial files)")
		os.Exit(exitInterrupted)
	}()
	code := run(withKillSwitch(ctx, ks), os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}

// killSwitch carries the second signal to a command that can cut its work
// short and still write its output (profile). A command claims it; when
// none did, the second signal exits at once.
type killSwitch struct {
	ch      chan struct{}
	claimed atomic.Bool
}

type killSwitchKey struct{}

// withKillSwitch returns ctx carrying ks.
func withKillSwitch(ctx context.Context, ks *killSwitch) context.Context {
	return context.WithValue(ctx, killSwitchKey{}, ks)
}

// claimKillSwitch claims the kill switch of ctx and returns the channel the
// second signal closes; nil when ctx carries none (tests calling run).
func claimKillSwitch(ctx context.Context) <-chan struct{} {
	ks, _ := ctx.Value(killSwitchKey{}).(*killSwitch)
	if ks == nil {
		return nil
	}
	ks.claimed.Store(true)
	return ks.ch
}
