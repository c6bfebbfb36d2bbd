package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// procRSS is this process's resident set size in bytes (VmRSS in /proc/self/status).
func procRSS() (int64, error) {
	kb, err := procField("/proc/self/status", "VmRSS:")
	return kb * 1024, err
}

// procWritten is the bytes this process has passed to write calls (wchar in /proc/self/io).
func procWritten() (int64, error) { return procField("/proc/self/io", "wchar:") }

// procField reads the number after name in a /proc file of "name value [unit]" lines.
func procField(path, name string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) >= 2 && string(fields[0]) == name {
			return strconv.ParseInt(string(fields[1]), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no %s", path, name)
}
