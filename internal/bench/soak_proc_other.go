//go:build !linux

package bench

import "errors"

var errNoProc = errors.New("soak: process figures are read from /proc, Linux only")

func procRSS() (int64, error)     { return 0, errNoProc }
func procWritten() (int64, error) { return 0, errNoProc }
