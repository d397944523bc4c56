//go:build race

package dataset

// raceEnabled reports a -race build: slow reference checks sample instead.
const raceEnabled = true
