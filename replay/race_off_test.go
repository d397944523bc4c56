//go:build !race

package replay

// raceEnabled is true when the tests run under the race detector.
const raceEnabled = false
