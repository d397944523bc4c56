//go:build !unix

package capacity

import "time"

// processCPU is not measured on this platform: only the lateness bound
// marks a probe client-bound.
func processCPU() (time.Duration, bool) { return 0, false }
