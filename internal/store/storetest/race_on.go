//go:build race

package storetest

// raceDetector says whether the race detector is on: it makes the stores' statements some ten
// times slower, and the suite's cases of 10,000 jobs then cost minutes each.
const raceDetector = true
