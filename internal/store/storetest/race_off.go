//go:build !race

package storetest

// raceDetector says whether the race detector is on (race_on.go).
const raceDetector = false
