// Package jsoncodec is the JSON encoding of Hopper's API. It is protobuf's JSON mapping
// (protojson) with two differences:
//
//   - A string field marked [(hopper.v1.json) = true] holds a JSON value as its text. In JSON
//     the value is inline: {"args": {"a": 1}} decodes to args `{"a":1}` and encodes back to
//     {"args":{"a":1}}. The value is kept as written, white space aside: numbers are never
//     rewritten (an id of 20 digits survives), keys never reordered. A JSON string is a JSON
//     value like any other: {"args": "x"} is the text `"x"`. null, like a missing field, is
//     no value (the empty string).
//   - A field the message does not have is an error that names it, with a guess at the field
//     meant when one is close; protojson's other errors name the field too. Nothing is dropped
//     in silence.
//
// Codec plugs the encoding into Connect as its "json" codec, so the Connect protocol, gRPC and
// gRPC-Web with JSON all use it (Connect also maps "json; charset=utf-8" to it). Marshal and
// Unmarshal are the same encoding for everyone else who shows API messages as JSON: the CLI's
// --json and the async endpoints. The package imports protobuf but not Connect: Codec
// satisfies connect.StableCodec by its methods alone.
package jsoncodec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Name is the codec's name in Connect: the JSON codec.
const Name = "json"

// Codec is the Connect codec of Hopper's JSON encoding. Its zero value is ready to use and it
// is safe for concurrent use. Its methods return an error for a value that is not a
// proto.Message.
type Codec struct{}

// Name returns "json".
func (Codec) Name() string { return Name }

// IsBinary reports false: the encoding is text.
func (Codec) IsBinary() bool { return false }

// MarshalWrite writes msg's JSON (Marshal) to dst.
func (Codec) MarshalWrite(_ context.Context, dst io.Writer, msg any) error {
	m, ok := msg.(proto.Message)
	if !ok {
		return fmt.Errorf("jsoncodec: marshal %T: not a proto.Message", msg)
	}
	out, err := Marshal(m)
	if err != nil {
		return err
	}
	_, err = dst.Write(out)
	return err
}

// MarshalWriteStable is MarshalWrite: Marshal's output is already the same for equal
// messages (compact, fields in declaration order, map keys sorted).
func (c Codec) MarshalWriteStable(ctx context.Context, dst io.Writer, msg any) error {
	return c.MarshalWrite(ctx, dst, msg)
}

// UnmarshalRead reads all of src and decodes it into msg (Unmarshal).
func (Codec) UnmarshalRead(_ context.Context, src io.Reader, msg any) error {
	m, ok := msg.(proto.Message)
	if !ok {
		return fmt.Errorf("jsoncodec: unmarshal into %T: not a proto.Message", msg)
	}
	data, err := io.ReadAll(src)
	if err != nil {
		return err
	}
	return Unmarshal(data, m)
}

// Marshal returns m as compact JSON, with the value of each field marked json inline. A marked
// field whose text is not valid JSON (only a value written to the database by other means can
// be) is shown as a JSON string holding that text.
func Marshal(m proto.Message) ([]byte, error) {
	raw, err := protojson.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	out, err := rewrite(raw, m.ProtoReflect().Descriptor(), false)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, out); err != nil {
		return nil, fmt.Errorf("encode %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
	}
	return buf.Bytes(), nil
}

// Unmarshal decodes data into m, replacing its contents. Its errors name the field at fault:
// a field m does not have, a value of the wrong type, JSON that does not parse, text that is
// not UTF-8.
func Unmarshal(data []byte, m proto.Message) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("empty message: send a JSON object ({} for no fields)")
	}
	text, err := rewrite(data, m.ProtoReflect().Descriptor(), true)
	if err != nil {
		return err
	}
	if err := protojson.Unmarshal(text, m); err != nil {
		return &protojsonError{err: err}
	}
	return nil
}

// protojsonError is protojson's error without its "proto:" prefix (whose space protojson
// makes a no-break space at random) and its position, which is
// one in the rewritten text, not in what the caller sent. The message still names the field.
type protojsonError struct{ err error }

var (
	protojsonPrefix   = regexp.MustCompile(`^proto:[\s\x{00a0}]*`)
	protojsonPosition = regexp.MustCompile(`\s*\(line \d+:\d+\)`)
)

func (e *protojsonError) Error() string {
	msg := protojsonPosition.ReplaceAllString(protojsonPrefix.ReplaceAllString(e.err.Error(), ""), "")
	return strings.TrimLeft(msg, ": ")
}
func (e *protojsonError) Unwrap() error { return e.err }
