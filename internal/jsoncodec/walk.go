package jsoncodec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// maxDepth bounds how deep messages nest, as protojson's default recursion limit does.
const maxDepth = 10000

// rewriter walks JSON along a message's descriptor, writing it to out, and rewrites the
// fields marked json. Decoding, it turns their inline values into JSON strings holding the
// values' text, for protojson to read, and refuses fields the message does not have.
// Encoding, it turns protojson's JSON strings back into the inline values. Everything else is
// copied as it is. It reads with one decoder, so an error names the innermost field.
type rewriter struct {
	decode bool
	data   []byte
	dec    *json.Decoder
	out    bytes.Buffer
	depth  int
}

// rewrite rewrites data, which should be one JSON object of md.
func rewrite(data []byte, md protoreflect.MessageDescriptor, decode bool) ([]byte, error) {
	r := &rewriter{decode: decode, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	if r.peek() != '{' {
		return nil, fmt.Errorf("%s must be a JSON object", md.Name())
	}
	if err := r.message(md, ""); err != nil {
		return nil, err
	}
	if _, err := r.dec.Token(); err != io.EOF {
		return nil, errors.New("data after the end of the message's JSON object")
	}
	return r.out.Bytes(), nil
}

// message rewrites the next value, which should be an object of md or null (no message). A
// well-known type (Timestamp, Duration...) has its own JSON form and no marked fields: it is
// left to protojson.
func (r *rewriter) message(md protoreflect.MessageDescriptor, path string) error {
	if md.FullName().Parent() == "google.protobuf" {
		return r.copyValue(path)
	}
	if r.peek() != '{' {
		return r.notA("object", path)
	}
	if r.depth++; r.depth > maxDepth {
		return fmt.Errorf("%s: messages nested too deeply", orMessage(path))
	}
	defer func() { r.depth-- }()
	return r.object(path, func(key string) error {
		fd := lookup(md, key)
		switch {
		case fd != nil:
			return r.field(fd, join(path, key))
		case r.decode:
			return unknownField(md, path, key)
		}
		return r.copyValue(join(path, key))
	})
}

// field rewrites the value of field fd.
func (r *rewriter) field(fd protoreflect.FieldDescriptor, path string) error {
	switch {
	case fd.IsMap() && fd.MapValue().Message() != nil && r.peek() == '{':
		return r.object(path, func(key string) error {
			return r.element(fd.MapValue().Message(), path+"["+strconv.Quote(key)+"]")
		})
	case fd.IsList() && fd.Message() != nil && r.peek() == '[':
		return r.array(path, func(i int) error { return r.element(fd.Message(), fmt.Sprintf("%s[%d]", path, i)) })
	case fd.IsMap() && fd.MapValue().Message() != nil:
		return r.notA("object", path)
	case fd.IsList() && fd.Message() != nil:
		return r.notA("array", path)
	case fd.IsMap() || fd.IsList():
		return r.copyValue(path)
	case fd.Message() != nil:
		return r.message(fd.Message(), path)
	case !isJSON(fd):
		return r.copyValue(path)
	}
	raw, err := r.value(path)
	if err != nil {
		return err
	}
	if !r.decode {
		r.out.Write(textToInline(raw))
		return nil
	}
	text, err := inlineToText(raw, path)
	if err != nil {
		return err
	}
	r.out.Write(text)
	return nil
}

// object rewrites the next value, an object, calling member for each member's value.
func (r *rewriter) object(path string, member func(key string) error) error {
	if err := r.delim(path); err != nil {
		return err
	}
	r.out.WriteByte('{')
	for n := 0; r.dec.More(); n++ {
		tok, err := r.dec.Token()
		if err != nil {
			return fmt.Errorf("%s: %w", orMessage(path), syntaxError(err))
		}
		key, _ := tok.(string) // an object's keys are strings, or Token fails
		if n > 0 {
			r.out.WriteByte(',')
		}
		appendString(&r.out, key)
		r.out.WriteByte(':')
		if err := member(key); err != nil {
			return err
		}
	}
	r.out.WriteByte('}')
	return r.delim(path)
}

// array rewrites the next value, an array, calling elem for each element.
func (r *rewriter) array(path string, elem func(i int) error) error {
	if err := r.delim(path); err != nil {
		return err
	}
	r.out.WriteByte('[')
	for i := 0; r.dec.More(); i++ {
		if i > 0 {
			r.out.WriteByte(',')
		}
		if err := elem(i); err != nil {
			return err
		}
	}
	r.out.WriteByte(']')
	return r.delim(path)
}

// notA handles a value that is not the object or array expected: null (no value) is copied,
// as is anything while encoding; anything else is refused.
func (r *rewriter) notA(what, path string) error {
	if !r.decode {
		return r.copyValue(path)
	}
	raw, err := r.value(path)
	if err != nil {
		return err
	}
	if string(raw) != "null" {
		return fmt.Errorf("%s: not a JSON %s", orMessage(path), what)
	}
	r.out.Write(raw)
	return nil
}

// element rewrites a message in a list or a map, where null is no message either.
func (r *rewriter) element(md protoreflect.MessageDescriptor, path string) error {
	if r.decode && r.peek() == 'n' {
		return fmt.Errorf("%s: not a JSON object", orMessage(path))
	}
	return r.message(md, path)
}

// delim reads an object's or array's opening or closing delimiter.
func (r *rewriter) delim(path string) error {
	if _, err := r.dec.Token(); err != nil {
		return fmt.Errorf("%s: %w", orMessage(path), syntaxError(err))
	}
	return nil
}

// value reads the next value whole.
func (r *rewriter) value(path string) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := r.dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: %w", orMessage(path), syntaxError(err))
	}
	return raw, nil
}

// copyValue copies the next value. Decoding, it must be UTF-8, which protojson requires
// too, but without naming the field.
func (r *rewriter) copyValue(path string) error {
	raw, err := r.value(path)
	if err != nil {
		return err
	}
	if r.decode && !utf8.Valid(raw) {
		return fmt.Errorf("%s: not valid UTF-8", orMessage(path))
	}
	r.out.Write(raw)
	return nil
}

// peek returns the first byte of the next value (0 at the end of the input): what follows
// the decoder's position, past white space and the ':' or ',' before the value.
func (r *rewriter) peek() byte {
	rest := bytes.TrimLeft(r.data[r.dec.InputOffset():], " \t\r\n:,")
	if len(rest) == 0 {
		return 0
	}
	return rest[0]
}

// inlineToText turns a field's inline JSON value into a JSON string holding its compact
// text. null stays null: no value.
func inlineToText(raw []byte, path string) ([]byte, error) {
	if string(raw) == "null" {
		return raw, nil
	}
	if !utf8.Valid(raw) {
		return nil, fmt.Errorf("field %s: the JSON value is not valid UTF-8", path)
	}
	var text bytes.Buffer
	if err := json.Compact(&text, raw); err != nil { // raw parsed already: never
		return nil, fmt.Errorf("field %s: %w", path, syntaxError(err))
	}
	var out bytes.Buffer
	appendString(&out, text.String())
	return out.Bytes(), nil
}

// textToInline turns protojson's JSON string back into the value whose text it holds. Text
// that is not JSON stays a string.
func textToInline(raw []byte) []byte {
	var text string
	if err := json.Unmarshal(raw, &text); err != nil || !json.Valid([]byte(text)) {
		return raw
	}
	return []byte(text)
}

// isJSON reports whether fd is a string field marked [(hopper.v1.json) = true]: one that holds
// a JSON value's text. The mark counts only on a singular string field.
func isJSON(fd protoreflect.FieldDescriptor) bool {
	if fd.Kind() != protoreflect.StringKind || fd.IsList() || fd.IsMap() {
		return false
	}
	opts, ok := fd.Options().(*descriptorpb.FieldOptions)
	if !ok || opts == nil {
		return false
	}
	marked, _ := proto.GetExtension(opts, hopperv1.E_Json).(bool)
	return marked
}

// lookup finds the field a JSON key names, as protojson does: its JSON name (maxAttempts) or
// its name in the .proto file (max_attempts).
func lookup(md protoreflect.MessageDescriptor, key string) protoreflect.FieldDescriptor {
	if fd := md.Fields().ByJSONName(key); fd != nil {
		return fd
	}
	return md.Fields().ByTextName(key)
}

// unknownField is the error for a key md has no field for, with the closest field name when
// one is within two edits.
func unknownField(md protoreflect.MessageDescriptor, path, key string) error {
	msg := fmt.Sprintf("unknown field %q", join(path, key))
	if path == "" {
		msg += " in " + string(md.Name())
	}
	best, bestDist := "", 3
	fields := md.Fields()
	for i := range fields.Len() {
		name := fields.Get(i).JSONName()
		if d := editDistance(strings.ToLower(key), strings.ToLower(name)); d < bestDist {
			best, bestDist = name, d
		}
	}
	if best != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", best)
	}
	return errors.New(msg)
}

// editDistance is the Levenshtein distance between a and b, counted in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// syntaxError says where JSON stopped parsing, without encoding/json's prefix.
func syntaxError(err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Errorf("invalid JSON: %s", strings.TrimPrefix(syn.Error(), "json: "))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("invalid JSON: unexpected end of input")
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// appendString writes s as a JSON string, without encoding/json's escaping of <, > and &.
func appendString(out *bytes.Buffer, s string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	// Encode ends with a newline.
	out.Truncate(out.Len() - 1)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orMessage(path string) string {
	if path == "" {
		return "message"
	}
	return "field " + path
}
