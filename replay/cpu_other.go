//go:build !unix

package replay

import "time"

// processCPU is not measured where getrusage is missing.
func processCPU() (user, sys time.Duration, ok bool) { return 0, 0, false }
