//go:build !race

package synth

// raceDetector reports whether the tests run under -race.
const raceDetector = false
