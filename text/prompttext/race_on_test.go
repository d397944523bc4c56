//go:build race

package prompttext

// raceDetector reports whether the tests run under -race.
const raceDetector = true
