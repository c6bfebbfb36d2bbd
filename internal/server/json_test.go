package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"connectrpc.com/connect/v2/connectproto"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/jsoncodec"
	"github.com/stretchr/testify/require"
)

// The JSON API as people type it: payloads inline, and a field the API does not have refused
// by name (package jsoncodec is the server's JSON codec).

// rpcJSON posts body to /hopper.v1.<procedure> and requires a 200.
func rpcJSON(t *testing.T, url, procedure, body string, header ...string) string {
	t.Helper()
	resp, out := post(t, url+"/hopper.v1."+procedure, body, header...)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", procedure, out)
	return out
}

// jobOf reads the job of a {"job": …} answer as a generic JSON object.
func jobOf(t *testing.T, answer string) map[string]json.RawMessage {
	t.Helper()
	var res struct{ Job map[string]json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(answer), &res), answer)
	return res.Job
}

func TestJSONArgsInlineRoundTripThroughGet(t *testing.T) {
	t.Parallel()
	e := start(t)
	out := rpcJSON(t, e.url, "JobService/Enqueue", `{"job": {"kind": "demo", "args": {"a": 1}}}`)
	job := jobOf(t, out)
	require.JSONEq(t, `{"a":1}`, string(job["args"]), "Enqueue answers with the value inline")
	var id string
	require.NoError(t, json.Unmarshal(job["id"], &id))

	got := jobOf(t, rpcJSON(t, e.url, "JobService/Get", `{"id":"`+id+`"}`))
	require.Equal(t, `{"a":1}`, string(got["args"]))
	require.Equal(t, `{"a":1}`, e.get(t, id).GetArgs(), "a protobuf client gets the text in the string")
	// The "; charset=utf-8" variant of the content type reaches the same codec.
	resp, body := postAs(t, "application/json; charset=utf-8", e.url+"/hopper.v1.JobService/Get", `{"id":"`+id+`"}`)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Equal(t, `{"a":1}`, string(jobOf(t, body)["args"]))
}

// An id too large for a double, a decimal's trailing zero and a big exponent are stored and
// shown byte for byte: the payload never goes through a float.
func TestJSONNumbersSurviveByteForByte(t *testing.T) {
	t.Parallel()
	e := start(t)
	args := `{"id":12345678901234567890,"price":19.90,"tiny":1e-400,"nested":[{"n":-0}]}`
	out := rpcJSON(t, e.url, "JobService/Enqueue", `{"job":{"kind":"demo","args":`+args+`}}`)
	require.Contains(t, out, `"args":`+args)
	id := e.enqueue(t, "demo", args).GetId()
	require.Contains(t, rpcJSON(t, e.url, "JobService/Get", `{"id":"`+id+`"}`), `"args":`+args)
}

// A JSON string is a JSON value like any other: what was sent as a string before is now the
// JSON string, not the object it spells.
func TestJSONStringArgsAreAJSONString(t *testing.T) {
	t.Parallel()
	e := start(t)
	out := rpcJSON(t, e.url, "JobService/Enqueue", `{"job":{"kind":"demo","args":"{\"a\":1}"}}`)
	job := jobOf(t, out)
	require.Equal(t, `"{\"a\":1}"`, string(job["args"]))
	var id string
	require.NoError(t, json.Unmarshal(job["id"], &id))
	require.Equal(t, `"{\"a\":1}"`, e.get(t, id).GetArgs(), "stored as the JSON string")
}

func TestJSONUnknownOrMistypedFieldIsRefusedByName(t *testing.T) {
	t.Parallel()
	e := start(t)
	for _, c := range []struct{ procedure, body, want string }{
		{"JobService/Enqueue", `{"job":{"kind":"demo","maxAttempt":3}}`, `unknown field "job.maxAttempt" (did you mean "maxAttempts"?)`},
		{"JobService/Enqueue", `{"job":{"kind":"demo","maxAttempts":"3x"}}`, "maxAttempts"},
		{"JobService/Enqueue", `{"job":{"kind":"demo","args":{"a":}}}`, "field job.args: invalid JSON"},
		{"JobService/EnqueueBatch", `{"jobs":[{"kind":"a"},{"kind":"b","qeue":"q"}]}`, `unknown field "jobs[1].qeue" (did you mean "queue"?)`},
		{"JobService/List", `{"state":["queued"]}`, `unknown field "state" in ListRequest (did you mean "states"?)`},
		{"WorkerService/Activate", `{"worker":"w","fields":["a"]}`, `unknown field "fields" in ActivateRequest`},
	} {
		resp, body := post(t, e.url+"/hopper.v1."+c.procedure, c.body)
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s %s: %s", c.procedure, c.body, body)
		code, msg := errorBody(t, body)
		require.Equal(t, "invalid_argument", code, body)
		require.Contains(t, msg, c.want, c.body)
	}
	list, err := e.jobs.List(t.Context(), &hopperv1.ListRequest{})
	require.NoError(t, err)
	require.Empty(t, list.GetJobs(), "nothing enqueued with a field dropped")
}

// Messages in lists (EnqueueBatch's specs and answers, List's jobs) carry their payloads inline
// too, and so do the worker's calls: Activate's args, Complete's result, Suspend's checkpoint,
// Resume's data.
func TestJSONPayloadsInListsAndWorkerCalls(t *testing.T) {
	t.Parallel()
	e := start(t)
	out := rpcJSON(t, e.url, "JobService/EnqueueBatch",
		`{"jobs":[{"kind":"batch","args":{"n":1}},{"kind":"batch","args":[2,3]},{"kind":"batch","args":"s"}]}`)
	var batch struct {
		Results []struct {
			Job struct{ Args json.RawMessage }
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &batch))
	require.Len(t, batch.Results, 3)
	for i, want := range []string{`{"n":1}`, `[2,3]`, `"s"`} {
		require.Equal(t, want, string(batch.Results[i].Job.Args))
	}
	var list struct {
		Jobs []struct{ Args json.RawMessage }
	}
	require.NoError(t, json.Unmarshal([]byte(rpcJSON(t, e.url, "JobService/List", `{"ascending":true}`)), &list))
	require.Len(t, list.Jobs, 3)
	require.Equal(t, `[2,3]`, string(list.Jobs[1].Args))

	var act struct {
		Jobs []struct {
			ID         string `json:"id"`
			Args       json.RawMessage
			LeaseToken string `json:"leaseToken"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(rpcJSON(t, e.url, "WorkerService/Activate",
		`{"worker":"w","kinds":["batch"],"maxJobs":3}`)), &act))
	require.Len(t, act.Jobs, 3)
	require.Equal(t, `{"n":1}`, string(act.Jobs[0].Args))
	first, second := act.Jobs[0], act.Jobs[1]
	rpcJSON(t, e.url, "WorkerService/Complete",
		`{"id":"`+first.ID+`","leaseToken":"`+first.LeaseToken+`","result":{"sent":12345678901234567890}}`)
	got := jobOf(t, rpcJSON(t, e.url, "JobService/Get", `{"id":"`+first.ID+`"}`))
	require.Equal(t, `{"sent":12345678901234567890}`, string(got["result"]))

	rpcJSON(t, e.url, "WorkerService/Suspend",
		`{"id":"`+second.ID+`","leaseToken":"`+second.LeaseToken+`","checkpoint":{"page":2}}`)
	got = jobOf(t, rpcJSON(t, e.url, "JobService/Resume", `{"id":"`+second.ID+`","data":{"approved":true}}`))
	require.Equal(t, `{"page":2}`, string(got["checkpoint"]))
	require.Equal(t, `{"approved":true}`, string(got["resumeData"]))
}

// gRPC and gRPC-Web with JSON (application/grpc+json) use the same codec: a Go client with
// jsoncodec speaks it, and the server reads what it sends.
func TestGRPCWithJSONUsesTheCodec(t *testing.T) {
	t.Parallel()
	e := start(t)
	for name, opt := range map[string]connecthttp.Option{"grpc-web": connecthttp.WithGRPCWeb(), "connect": nil} {
		opts := []connecthttp.Option{connecthttp.WithCodecs(jsoncodec.Codec{}, connectproto.NewBinaryCodec()),
			connecthttp.WithSendCodec(jsoncodec.Name)}
		if opt != nil {
			opts = append(opts, opt)
		}
		jobs := hopperv1connect.NewJobServiceClient(connect.NewClient(connecthttp.NewTransport(e.http, e.url, opts...)))
		res, err := jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k", Args: `{"big":12345678901234567890}`}})
		require.NoError(t, err, name)
		require.Equal(t, `{"big":12345678901234567890}`, res.GetJob().GetArgs(), name)
		require.Equal(t, `{"big":12345678901234567890}`, e.get(t, res.GetJob().GetId()).GetArgs(), name)
	}
}
