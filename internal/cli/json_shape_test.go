package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A job has one JSON shape: `--json` prints it as the Connect API's JSON does, whether the
// CLI asks a server or reads the database, and the async status endpoint shows the same
// fields with the same values.
func TestJobJSONIsTheAPIsEverywhere(t *testing.T) {
	b := startServer(t, false)
	post := func(path, body string) []byte {
		t.Helper()
		resp, err := http.Post(b.url+path, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		var out bytes.Buffer
		_, err = out.ReadFrom(resp.Body)
		require.NoError(t, err)
		require.Less(t, resp.StatusCode, 300, "%s: %s", path, out.String())
		return out.Bytes()
	}
	field := func(raw []byte, name string) json.RawMessage {
		t.Helper()
		var obj map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &obj), "%s", raw)
		return obj[name]
	}

	var enq struct {
		Job struct {
			ID string `json:"id"`
		} `json:"job"`
	}
	require.NoError(t, json.Unmarshal(post("/hopper.v1.JobService/Enqueue",
		`{"job":{"kind":"shape","args":{"id":12345678901234567890,"to":["a@b.c"]},"headers":{"trace":"t1"},`+
			`"idempotencyKey":"k-1","timeout":"90s","maxAttempts":3}}`), &enq))
	id := enq.Job.ID
	var act struct {
		Jobs []struct {
			LeaseToken string `json:"leaseToken"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal(post("/hopper.v1.WorkerService/Activate", `{"worker":"w","kinds":["shape"]}`), &act))
	require.Len(t, act.Jobs, 1)
	post("/hopper.v1.WorkerService/Complete", `{"id":"`+id+`","leaseToken":"`+act.Jobs[0].LeaseToken+`","result":{"n":1.50}}`)

	api := field(post("/hopper.v1.JobService/Get", `{"id":"`+id+`"}`), "job")
	require.Contains(t, string(api), `"args":{"id":12345678901234567890,"to":["a@b.c"]}`)
	require.Contains(t, string(api), `"result":{"n":1.50}`)
	for name, runner := range map[string]func(t *testing.T, args ...string) result{"server": b.remote, "database": b.run} {
		res := runner(t, "jobs", "show", id, "--json")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.JSONEq(t, string(api), string(field([]byte(res.stdout), "job")), "jobs show --json through the %s", name)
		require.Contains(t, res.stdout, `"id": 12345678901234567890`, "the number as it was sent")

		res = runner(t, "jobs", "ls", "--json")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		var page struct{ Jobs []json.RawMessage }
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &page))
		require.Len(t, page.Jobs, 1)
		require.JSONEq(t, string(api), string(page.Jobs[0]), "jobs ls --json through the %s", name)
	}

	var apiJob map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(api, &apiJob))
	resp, err := http.Get(b.url + "/v1/jobs/" + id)
	require.NoError(t, err)
	defer resp.Body.Close()
	var status struct{ Job map[string]json.RawMessage }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&status))
	require.Contains(t, status.Job, "result")
	for k, v := range status.Job {
		require.Contains(t, apiJob, k, "the async status's field %s is the API's", k)
		require.JSONEq(t, string(apiJob[k]), string(v), "field %s", k)
	}
}
