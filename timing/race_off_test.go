//go:build !race

package timing

// raceEnabled is true when the tests run under the race detector.
const raceEnabled = false
