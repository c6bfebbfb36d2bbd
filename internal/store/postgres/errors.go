package postgres

import (
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5/pgconn"
)

// badValue lists the SQLSTATEs (class 22, data exception) PostgreSQL answers when a value it
// was given cannot be kept: the caller's input, not a failing database. Hopper validates its
// input before it reaches the store; these are the last line.
var badValue = map[string]bool{
	"22021": true, // character_not_in_repertoire: a NUL byte, or bytes that are not UTF-8, in text
	"22P05": true, // untranslatable_character: \u0000 in jsonb
	"22001": true, // string_data_right_truncation: a value longer than its column allows
	"22003": true, // numeric_value_out_of_range
	"22008": true, // datetime_field_overflow: a time outside PostgreSQL's range
}

// invalidInput makes a data exception caused by a value match store.ErrInvalid.
func invalidInput(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && badValue[pgErr.Code] && !errors.Is(err, store.ErrInvalid) {
		return fmt.Errorf("%w: %w", store.ErrInvalid, err)
	}
	return err
}
