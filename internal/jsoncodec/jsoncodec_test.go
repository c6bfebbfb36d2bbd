package jsoncodec

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/timestamppb"
)

var _ connect.StableCodec = Codec{}

func TestInlineValuesRoundTrip(t *testing.T) {
	t.Parallel()
	var req hopperv1.EnqueueRequest
	require.NoError(t, Unmarshal([]byte(`{"job": {"kind": "demo", "args": {"a": 1, "b": [true, null]}}}`), &req))
	require.Equal(t, `{"a":1,"b":[true,null]}`, req.GetJob().GetArgs(), "the value's text, compacted")

	out, err := Marshal(&req)
	require.NoError(t, err)
	require.Equal(t, `{"job":{"kind":"demo","args":{"a":1,"b":[true,null]}}}`, string(out))
}

// A value is kept as written: no number becomes a double, no key moves, no escape is undone.
func TestValuesKeptExactly(t *testing.T) {
	t.Parallel()
	for _, v := range []string{
		`{"id":12345678901234567890,"z":1,"a":2}`,
		`{"f":1.50,"e":1E400,"n":-0}`,
		`{"s":"caf\u00e9 <b>&amp;</b>","t":"\ud83d\ude00"}`,
		`[{"b":1,"b":2}]`,
		`"a JSON string"`,
		`12345678901234567890`,
		`true`,
	} {
		var req hopperv1.CompleteRequest
		require.NoError(t, Unmarshal([]byte(`{"id":"x","result":`+v+`}`), &req), v)
		require.Equal(t, v, req.GetResult(), "stored as given")
		out, err := Marshal(&req)
		require.NoError(t, err)
		require.Equal(t, `{"id":"x","result":`+v+`}`, string(out), "shown as stored")
	}
}

// A JSON string is a JSON value: the text stored is the string with its quotes.
func TestStringValueIsAJSONString(t *testing.T) {
	t.Parallel()
	var spec hopperv1.JobSpec
	require.NoError(t, Unmarshal([]byte(`{"kind":"k","args":"{\"a\":1}"}`), &spec))
	require.Equal(t, `"{\"a\":1}"`, spec.GetArgs())
}

func TestNullIsNoValue(t *testing.T) {
	t.Parallel()
	var spec hopperv1.JobSpec
	require.NoError(t, Unmarshal([]byte(`{"kind":"k","args":null}`), &spec))
	require.Empty(t, spec.GetArgs())
	out, err := Marshal(&hopperv1.Job{Id: "x"})
	require.NoError(t, err)
	require.Equal(t, `{"id":"x"}`, string(out), "no value: no field, as for every empty field")
}

// Messages in lists and maps, and the fields' names from the .proto file, work as at the top.
func TestNestedRepeatedAndProtoNames(t *testing.T) {
	t.Parallel()
	var batch hopperv1.EnqueueBatchRequest
	require.NoError(t, Unmarshal([]byte(`{"jobs":[{"kind":"a","args":{"n":1}},{"kind":"b","max_attempts":3,"args":[2]}]}`), &batch))
	require.Equal(t, `{"n":1}`, batch.GetJobs()[0].GetArgs())
	require.Equal(t, `[2]`, batch.GetJobs()[1].GetArgs())
	require.EqualValues(t, 3, batch.GetJobs()[1].GetMaxAttempts())

	list := &hopperv1.ListResponse{Jobs: []*hopperv1.Job{
		{Id: "1", Args: `{"a":1}`, Result: `"done"`, Checkpoint: `{"page":2}`, ResumeData: `[1]`,
			CreatedAt: timestamppb.New(timestamppb.Now().AsTime().Truncate(1e9))},
		{Id: "2", Args: `{}`, Headers: map[string]string{"h": "v"}},
	}, NextCursor: "c"}
	out, err := Marshal(list)
	require.NoError(t, err)
	require.Contains(t, string(out), `"args":{"a":1},"result":"done"`)
	require.Contains(t, string(out), `"checkpoint":{"page":2}`)
	require.Contains(t, string(out), `"resumeData":[1]`)
	require.Contains(t, string(out), `{"id":"2","args":{},"headers":{"h":"v"}}`)
	var back hopperv1.ListResponse
	require.NoError(t, Unmarshal(out, &back))
	require.True(t, proto.Equal(list, &back), "%s", out)
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, in string
		msg      proto.Message
		want     string
	}{
		{"mistyped field", `{"job":{"kind":"k","maxAttempt":3}}`, &hopperv1.EnqueueRequest{},
			`unknown field "job.maxAttempt" (did you mean "maxAttempts"?)`},
		{"unknown field at the top", `{"jobb":{}}`, &hopperv1.EnqueueRequest{}, `unknown field "jobb" in EnqueueRequest (did you mean "job"?)`},
		{"unknown field, no guess", `{"job":{"kind":"k","color":"red"}}`, &hopperv1.EnqueueRequest{}, `unknown field "job.color"`},
		{"unknown field in a list", `{"jobs":[{"kind":"a"},{"kind":"b","queeu":"q"}]}`, &hopperv1.EnqueueBatchRequest{},
			`unknown field "jobs[1].queeu" (did you mean "queue"?)`},
		{"value of the wrong type", `{"job":{"kind":"k","maxAttempts":"three"}}`, &hopperv1.EnqueueRequest{}, "maxAttempts"},
		{"broken JSON in args", `{"job":{"kind":"k","args":{"a":}}}`, &hopperv1.EnqueueRequest{}, "field job.args: invalid JSON"},
		{"args not UTF-8", "{\"job\":{\"kind\":\"k\",\"args\":{\"a\":\"\xff\"}}}", &hopperv1.EnqueueRequest{},
			"field job.args: the JSON value is not valid UTF-8"},
		{"cut short", `{"job":{"kind":"k","args":{"a":1}`, &hopperv1.EnqueueRequest{}, "invalid JSON"},
		{"data after the object", `{"job":{}} {}`, &hopperv1.EnqueueRequest{}, "data after the end of the message"},
		{"a field twice", `{"job":{"kind":"k","args":1,"args":2}}`, &hopperv1.EnqueueRequest{}, "args"},
		{"a message that is not an object", `{"job":5}`, &hopperv1.EnqueueRequest{}, "field job: not a JSON object"},
		{"a list that is not an array", `{"jobs":{}}`, &hopperv1.EnqueueBatchRequest{}, "field jobs: not a JSON array"},
		{"null in a list", `{"jobs":[{"kind":"a"},null]}`, &hopperv1.EnqueueBatchRequest{}, "field jobs[1]: not a JSON object"},
		{"text not UTF-8", "{\"job\":{\"kind\":\"\xff\"}}", &hopperv1.EnqueueRequest{}, "field job.kind: not valid UTF-8"},
		{"empty", " ", &hopperv1.EnqueueRequest{}, "empty message"},
		{"not an object", `[]`, &hopperv1.EnqueueRequest{}, "EnqueueRequest must be a JSON object"},
	} {
		err := Unmarshal([]byte(c.in), c.msg)
		require.Error(t, err, c.name)
		require.Contains(t, err.Error(), c.want, c.name)
		require.NotContains(t, err.Error(), "(line ", "%s: a position in the rewritten text would mislead", c.name)
	}
}

// Text that is not JSON (only possible for a value written to the database by other means)
// is shown, not refused: as a JSON string.
func TestStoredTextThatIsNotJSON(t *testing.T) {
	t.Parallel()
	out, err := Marshal(&hopperv1.Job{Id: "x", Args: `{"a":`})
	require.NoError(t, err)
	require.Equal(t, `{"id":"x","args":"{\"a\":"}`, string(out))
}

func TestCodec(t *testing.T) {
	t.Parallel()
	var c Codec
	require.Equal(t, "json", c.Name())
	var buf bytes.Buffer
	require.NoError(t, c.MarshalWriteStable(context.Background(), &buf, &hopperv1.GetResponse{Job: &hopperv1.Job{Id: "x", Args: `{"a":1}`}}))
	require.Equal(t, `{"job":{"id":"x","args":{"a":1}}}`, buf.String())
	var got hopperv1.GetResponse
	require.NoError(t, c.UnmarshalRead(context.Background(), strings.NewReader(buf.String()), &got))
	require.Equal(t, `{"a":1}`, got.GetJob().GetArgs())
	require.Error(t, c.MarshalWrite(context.Background(), &buf, "not a message"))
	require.Error(t, c.UnmarshalRead(context.Background(), strings.NewReader("{}"), 42))
}

// Every field marked json is a singular string, and every field that holds a payload by its
// name is marked: a new payload field without the mark would show as a string of JSON.
func TestMarkedFields(t *testing.T) {
	t.Parallel()
	payload := map[protoreflect.Name]bool{"args": true, "result": true, "checkpoint": true, "resume_data": true}
	var marked []string
	protoregistry.GlobalFiles.RangeFilesByPackage("hopper.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Messages().Len() {
			md := f.Messages().Get(i)
			for j := range md.Fields().Len() {
				fd := md.Fields().Get(j)
				if isJSON(fd) {
					marked = append(marked, string(fd.FullName()))
				}
				if payload[fd.Name()] {
					require.True(t, isJSON(fd), "%s holds a payload but is not marked json", fd.FullName())
				}
			}
		}
		return true
	})
	require.ElementsMatch(t, []string{
		"hopper.v1.Schedule.args", "hopper.v1.Job.args", "hopper.v1.Job.result", "hopper.v1.Job.checkpoint",
		"hopper.v1.Job.resume_data", "hopper.v1.JobSpec.args", "hopper.v1.JobServiceResumeRequest.data",
		"hopper.v1.ActivatedJob.args", "hopper.v1.ActivatedJob.checkpoint", "hopper.v1.ActivatedJob.resume_data",
		"hopper.v1.CompleteRequest.result", "hopper.v1.SuspendRequest.checkpoint", "hopper.v1.FailRequest.checkpoint",
		"hopper.v1.JobServiceRetryRequest.args", "hopper.v1.ParentResult.result",
	}, marked)
}

// FuzzUnmarshal decodes any bytes as an EnqueueBatchRequest (lists of messages with marked
// fields, maps, durations, timestamps). It never panics; what decodes encodes, and that
// decodes to the same message.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{
		`{"jobs":[{"kind":"a","args":{"n":12345678901234567890}},{"kind":"b","args":"s","headers":{"h":"v"}}]}`,
		`{"jobs":[{"kind":"a","delay":"1.5s","runAt":"2026-01-02T03:04:05Z","retryPolicy":{"multiplier":2}}]}`,
		`{"jobs":[{"kind":"a","args":{"a":}}]}`,
		`{"jobs":[{"maxAttempt":3}]}`,
		`{"jobs":null}`,
		"{\"jobs\":[{\"args\":\"\xff\"}]}",
		`{"jobs":[{"args":[[[[[[[[]]]]]]]]}]}`,
		`{"jobs":[{"args":1}]}{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req hopperv1.EnqueueBatchRequest
		if Unmarshal(data, &req) != nil {
			return
		}
		out, err := Marshal(&req)
		require.NoError(t, err, "a decoded message encodes")
		var back hopperv1.EnqueueBatchRequest
		require.NoError(t, Unmarshal(out, &back), "the encoding decodes: %s", out)
		require.True(t, proto.Equal(&req, &back), "the same message again: %s", out)
	})
}
