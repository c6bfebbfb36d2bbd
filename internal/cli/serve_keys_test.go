package cli

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/stretchr/testify/require"
)

// listKeysStatus calls AdminService.ListKeys on the server at url with key ("": none) and
// returns the HTTP status.
func listKeysStatus(t *testing.T, url, key string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/hopper.v1.AdminService/ListKeys", strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// HOPPER_BOOTSTRAP_KEY_FILE (or --bootstrap-key-file) imports an admin key at start: once,
// however often the server restarts with it; a revoked one is not brought back (a warning
// says so); a new key in the file is imported beside the old one. (t.Setenv: not parallel.)
func TestServeBootstrapKey(t *testing.T) {
	b := setup(t)
	global := []string{"--database", b.db}
	key := generateKey(t)
	id, _, err := apikey.Parse(key)
	require.NoError(t, err)
	file := keyFile(t, key+"\n")

	t.Setenv("HOPPER_BOOTSTRAP_KEY_FILE", file) // the name a Helm chart sets
	s := runServeOn(t, global)
	require.Contains(t, s.stdout.String(), "API keys required")
	require.Contains(t, s.stderr.String(), `msg="bootstrap API key imported" key_id=`+id+" name=bootstrap-"+id)
	require.NotContains(t, s.stderr.String(), key[len(key)-52:], "the log never shows the secret")
	require.Equal(t, http.StatusOK, listKeysStatus(t, s.url, key))
	require.Equal(t, http.StatusUnauthorized, listKeysStatus(t, s.url, ""))
	s.stop(t)

	t.Setenv("HOPPER_BOOTSTRAP_KEY_FILE", "") // none: the flag below says it
	s = runServeOn(t, global, "--bootstrap-key-file", file)
	require.Contains(t, s.stderr.String(), `msg="bootstrap API key present" key_id=`+id)
	require.Equal(t, http.StatusOK, listKeysStatus(t, s.url, key))
	s.stop(t)
	keys := b.listKeys(t)
	require.Len(t, keys, 1, "a restart imports nothing")
	require.Equal(t, "bootstrap-"+id, keys[0].Name)
	require.Equal(t, []string{"admin"}, keys[0].Scopes)

	// Revoked, it stays revoked: the server starts without it and warns.
	require.Equal(t, ExitOK, b.run(t, "keys", "revoke", id).code)
	s = runServeOn(t, global, "--bootstrap-key-file", file)
	require.Regexp(t, `level=WARN msg="bootstrap API key not imported: it was revoked.*key_id=`+id, s.stderr.String())
	require.Equal(t, http.StatusUnauthorized, listKeysStatus(t, s.url, key))
	s.stop(t)
	keys = b.listKeys(t)
	require.Len(t, keys, 1)
	require.NotEmpty(t, keys[0].RevokedAt, "not brought back")

	// A new key in the file (a rotation) is imported beside the old ones.
	rotated := generateKey(t)
	newID, _, err := apikey.Parse(rotated)
	require.NoError(t, err)
	s = runServeOn(t, global, "--bootstrap-key-file", keyFile(t, rotated))
	require.Contains(t, s.stderr.String(), `msg="bootstrap API key imported" key_id=`+newID)
	require.Equal(t, http.StatusOK, listKeysStatus(t, s.url, rotated))
	s.stop(t)
	require.Len(t, b.listKeys(t), 2)
}

// A bootstrap key file that cannot be used stops the server before it serves: a usage error
// (exit 2) naming the flag and the file for a missing or malformed one, a conflict (exit 4)
// for a key stored as another key.
func TestServeBootstrapKeyRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	missing := filepath.Join(t.TempDir(), "nope")
	for file, want := range map[string]string{
		missing:                  "--bootstrap-key-file: open " + missing + ": no such file",
		keyFile(t, "hop_nope\n"): "malformed API key",
		keyFile(t, ""):           "is empty",
	} {
		res := b.run(t, "serve", "--addr", "127.0.0.1:0", "--bootstrap-key-file", file)
		require.Equal(t, ExitUsage, res.code, res.stderr)
		require.Contains(t, res.stderr, "--bootstrap-key-file")
		require.Contains(t, res.stderr, want)
	}

	key := generateKey(t)
	id, _, err := apikey.Parse(key)
	require.NoError(t, err)
	file := keyFile(t, key)
	require.Equal(t, ExitOK, b.run(t, "migrate").code)
	res := b.run(t, "keys", "import", "--name", "ops", "--scope", "admin", "--from-file", file)
	require.Equal(t, ExitOK, res.code, res.stderr)
	res = b.run(t, "serve", "--addr", "127.0.0.1:0", "--bootstrap-key-file", file)
	require.Equal(t, ExitConflict, res.code, res.stderr)
	require.Contains(t, res.stderr, "--bootstrap-key-file "+file+`: conflicting name: key `+id+` is stored as "ops" `+
		"(a bootstrap key is named bootstrap-"+id+", with the admin scope): put a new key in the file")
	require.NotContains(t, res.stdout, "hopper serving on")
}

// Servers started together on one PostgreSQL schema with one bootstrap key file store the key
// once, without error: one imports it, the others find it, and each accepts it.
func TestServeBootstrapKeyOnPostgresReplicas(t *testing.T) {
	pgtest.Require(t)
	t.Parallel()
	global := []string{"--database", pgtest.URL(), "--schema", pgtest.FreshSchema(t, "hopper_bootstrap_")}
	key := generateKey(t)
	id, _, err := apikey.Parse(key)
	require.NoError(t, err)
	file := keyFile(t, key)

	const replicas = 3
	servers := make([]*runningServe, replicas)
	for i := range servers {
		servers[i] = launchServe(t, global, "--bootstrap-key-file", file, "--no-echo", "--conns", "2")
	}
	imported, present := 0, 0
	for _, s := range servers {
		s.waitListening(t)
		require.Equal(t, http.StatusOK, listKeysStatus(t, s.url, key))
		imported += strings.Count(s.stderr.String(), `msg="bootstrap API key imported" key_id=`+id)
		present += strings.Count(s.stderr.String(), `msg="bootstrap API key present" key_id=`+id)
	}
	require.Equal(t, [2]int{1, replicas - 1}, [2]int{imported, present}, "imported, present")

	b := setup(t)
	keys := b.listKeys(t, global...)
	require.Len(t, keys, 1)
	require.Equal(t, id, keys[0].ID)
}
