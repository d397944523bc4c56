package replay

import (
	"fmt"
	"time"
)

// Terminated is a cancellation cause (context.WithCancelCause) for a stop
// that a kill follows: a job scheduler's SIGTERM, after which Slurm sends
// SIGKILL KillWait later (30 s by default). When the ctx given to Run is
// cancelled with a *Terminated, the requests in flight get at most Grace
// (not Config.GracePeriod) before they are cancelled, so that the
// artifacts are written before the kill. Result.Terminated is then set,
// with the grace that was in force (Grace, or a shorter GracePeriod).
type Terminated struct {
	// Signal names what stopped the run ("SIGTERM").
	Signal string
	// Grace bounds the grace period of the requests in flight.
	Grace time.Duration
}

func (t *Terminated) Error() string {
	return fmt.Sprintf("%s: the requests in flight get at most %s", t.Signal, t.Grace)
}
