// Package nodeworker holds a Hopper worker and client written in plain JavaScript (Node 20,
// no dependencies; see README.md) and the Go test that runs them against a real
// `hopper serve`. It has no Go code of its own.
package nodeworker
