package store

import (
	"crypto/sha256"
	"encoding/hex"
)

// PayloadHash identifies a job's payload for idempotency: the same kind and the same args bytes.
func PayloadHash(kind string, args []byte) string {
	h := sha256.New()
	h.Write([]byte(kind))
	h.Write([]byte{0})
	h.Write(args)
	return hex.EncodeToString(h.Sum(nil))
}

// ClampPercent bounds progress to 0–100.
func ClampPercent(p int) int {
	return min(max(p, 0), 100)
}
