package apiview

import (
	"strings"

	"github.com/hopperjobs/hopper/hoppertype"
)

// StoreRefusalMessage answers input the store refused though the checks at the door let it
// through (apierr): it names no field.
const StoreRefusalMessage = "invalid input: a value the store cannot keep"

// ValidationError reads the field a server's INVALID_ARGUMENT names: its message is
// "invalid FIELD: REASON", as *hopper.ValidationError writes it. A message of another shape
// (a request the server could not read, a value the store refused) names no field: nil.
func ValidationError(msg string) *hoppertype.ValidationError {
	if msg == StoreRefusalMessage {
		return nil
	}
	rest, ok := strings.CutPrefix(msg, "invalid ")
	if !ok {
		return nil
	}
	field, reason, ok := strings.Cut(rest, ": ")
	if !ok || field == "" || strings.ContainsAny(field, " \t\n") {
		return nil
	}
	return &hoppertype.ValidationError{Field: field, Reason: reason}
}
