package hopperclient

import (
	"errors"
	"testing"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apierr"
	"github.com/stretchr/testify/require"
)

// An INVALID_ARGUMENT names its field when its message is a *hopper.ValidationError's;
// other messages name none, and still mean hopper.ErrInvalid.
func TestInvalidArgumentNamesTheField(t *testing.T) {
	t.Parallel()
	for msg, field := range map[string]string{
		"invalid queue: \"a b\" holds a space":                    "queue",
		"invalid jobs[2].max_attempts: 5000 is outside 1–1000":    "jobs[2].max_attempts",
		"invalid id: is required":                                 "id",
		apierr.StoreRefusalMessage:                                "",
		"unreadable request: protocol error: incomplete envelope": "",
		"unmarshal message: invalid value for int32 field":        "",
		"invalid a b: c":                                          "",
		"invalid : no field":                                      "",
	} {
		err := callErr("op", connect.NewError(connect.CodeInvalidArgument, msg))
		require.ErrorIs(t, err, hopper.ErrInvalid, msg)
		require.Equal(t, "op: "+msg, err.Error())
		ve, ok := errors.AsType[*hopper.ValidationError](err)
		if field == "" {
			require.False(t, ok, msg)
			continue
		}
		require.True(t, ok, msg)
		require.Equal(t, field, ve.Field)
	}
}

func TestCodesMeanHoppersErrors(t *testing.T) {
	t.Parallel()
	for code, want := range map[connect.Code]error{
		connect.CodeNotFound:           hopper.ErrNotFound,
		connect.CodeFailedPrecondition: hopper.ErrInvalidTransition,
		connect.CodeAlreadyExists:      hopper.ErrDuplicate,
		connect.CodeUnavailable:        hopper.ErrUnavailable,
		connect.CodeUnauthenticated:    ErrUnauthenticated,
		connect.CodePermissionDenied:   ErrPermissionDenied,
	} {
		err := callErr("op", connect.NewError(code, "m"))
		require.ErrorIs(t, err, want, code.String())
		require.Equal(t, code, connect.CodeOf(err))
	}
	err := callErr("op", connect.NewError(connect.CodeInternal, "internal error (request id X)"))
	require.Equal(t, connect.CodeInternal, connect.CodeOf(err))
	require.Equal(t, "op: internal error (request id X)", err.Error())
	require.NoError(t, callErr("op", nil))
}
