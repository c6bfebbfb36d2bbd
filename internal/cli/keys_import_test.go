package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/stretchr/testify/require"
)

// generateKey runs keys generate and returns the key it printed.
func generateKey(t *testing.T) string {
	t.Helper()
	res := runArgs(t, "keys", "generate")
	require.Equal(t, ExitOK, res.code, res.stderr)
	key := strings.TrimSuffix(res.stdout, "\n")
	_, _, err := apikey.Parse(key)
	require.NoError(t, err, "generate prints one key and a newline: %q", res.stdout)
	return key
}

// keyFile writes content into a new file and returns its path.
func keyFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// importOut is the JSON of keys import.
type importOut struct {
	keyOut
	Created bool `json:"created"`
}

// keys generate prints a new key each time, and touches no database.
func TestKeysGenerate(t *testing.T) {
	t.Parallel()
	b := setupEmpty(t)
	res := b.run(t, "keys", "generate")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Empty(t, res.stderr)
	_, err := os.Stat(b.db)
	require.ErrorIs(t, err, os.ErrNotExist, "no database is created")
	require.NotEqual(t, strings.TrimSpace(res.stdout), generateKey(t))

	res = runArgs(t, "keys", "generate", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var out struct{ ID, Key string }
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
	id, _, err := apikey.Parse(out.Key)
	require.NoError(t, err)
	require.Equal(t, id, out.ID)
}

// A key is imported from a file or from stdin, never printed, and importing it again changes
// nothing.
func TestKeysImport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, ExitOK, b.run(t, "migrate").code)
	key := generateKey(t)
	id, secret, err := apikey.Parse(key)
	require.NoError(t, err)
	file := keyFile(t, "  "+key+"\r\n\n") // what editors and secret stores leave around a key is ignored

	res := b.run(t, "keys", "import", "--name", "billing", "--scope", "work,enqueue", "--from-file", file)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Equal(t, "API key billing imported (id "+id+", scopes enqueue, work)\n", res.stdout)
	keys := b.listKeys(t)
	require.Len(t, keys, 1)
	require.Equal(t, id, keys[0].ID)
	require.Equal(t, "billing", keys[0].Name)
	require.Equal(t, []string{"enqueue", "work"}, keys[0].Scopes)

	res = b.run(t, "keys", "import", "--name", "billing", "--scope", "enqueue", "--scope", "work", "--from-file", file)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "was imported already: nothing changed")
	res = b.runIn(t, key+"\n", "keys", "import", "--name", "billing", "--scope", "work,enqueue", "--from-file", "-", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var out importOut
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
	require.False(t, out.Created)
	require.Equal(t, id, out.ID)
	require.Len(t, b.listKeys(t), 1, "imported once")

	other := generateKey(t)
	res = b.runIn(t, other, "keys", "import", "--name", "ops", "--scope", "admin", "--from-file", "-", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
	require.True(t, out.Created)
	require.Equal(t, "ops", out.Name)
	require.Empty(t, out.Key, "import never prints the key")
	require.Len(t, b.listKeys(t), 2)
	for _, s := range []string{secret, other[len(other)-52:]} {
		require.NotContains(t, res.stdout+res.stderr, s)
	}
}

// Bad input is a usage error (exit 2) naming the flag; a conflict with a stored key exits 4
// and says what differs. Nothing refused is stored.
func TestKeysImportErrors(t *testing.T) {
	t.Parallel()
	b := setupEmpty(t)
	key := generateKey(t)
	id, secret, err := apikey.Parse(key)
	require.NoError(t, err)
	file := keyFile(t, key)
	res := b.run(t, "keys", "import", "--name", "ci", "--scope", "work", "--from-file", file)
	require.Equal(t, ExitUsage, res.code, "keys import does not create the database")
	require.Contains(t, res.stderr, "does not exist")
	require.Equal(t, ExitOK, b.run(t, "migrate").code)

	usage := []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"--scope", "work", "--from-file", file}, "", `"name" not set`},
		{[]string{"--name", "ci", "--from-file", file}, "", `"scope" not set`},
		{[]string{"--name", "ci", "--scope", "work"}, "", `"from-file" not set`},
		{[]string{"--name", "ci", "--scope", "write", "--from-file", file}, "", `invalid --scope: invalid scope "write"`},
		{[]string{"--name", "has space", "--scope", "work", "--from-file", file}, "", "invalid --name: "},
		{[]string{"--name", "ci", "--scope", "work", "--from-file", file + ".missing"}, "", "--from-file: open " + file + ".missing: no such file"},
		{[]string{"--name", "ci", "--scope", "work", "--from-file", keyFile(t, "\n")}, "", "is empty: it should hold one API key"},
		{[]string{"--name", "ci", "--scope", "work", "--from-file", "-"}, "", "--from-file - (stdin) is empty"},
		{[]string{"--name", "ci", "--scope", "work", "--from-file", "-"}, key + "\n" + key, "holds more than one word"},
		{[]string{"--name", "ci", "--scope", "work", "--from-file", "-"}, "Bearer " + key, "holds more than one word"},
		{[]string{"--name", "ci", "--scope", "work", "--from-file", "-"}, "HOPPER_API_KEY=" + key, `malformed API key: it does not start with "hop_"`},
		{[]string{"--name", "ci", "--scope", "work", "--from-file", "-"}, key[:len(key)-1], "malformed API key: the secret of key " + id},
		{[]string{"--name", "ci", "--scope", "work", "--from-file", "-"}, strings.Repeat(key+"\n", 100), "more than 4096 bytes"},
		{[]string{"--name", "ci", "--scope", "work", key}, "", "never on the command line"}, // nor quoted back
	}
	for _, c := range usage {
		res := b.runIn(t, c.stdin, append([]string{"keys", "import"}, c.args...)...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", c.args, res.stderr)
		require.Contains(t, res.stderr, c.want, c.args)
		require.NotContains(t, res.stderr, secret, "an error never shows the secret")
	}
	require.Empty(t, b.listKeys(t), "nothing was imported")

	res = b.run(t, "keys", "import", "--name", "ci", "--scope", "work", "--from-file", file)
	require.Equal(t, ExitOK, res.code, res.stderr)
	conflicts := []struct {
		name, scope, key string
		want             string
	}{
		{"ci", "admin", key, "conflicting scopes: key " + id + " is stored with scopes work: import it with those, or revoke it"},
		{"ci-2", "work", key, `conflicting name: key ` + id + ` is stored as "ci"`},
		{"ci", "work", generateKey(t), `conflicting name: a live key of another id is named "ci": revoke it first`},
		{"ci", "work", "hop_" + id + "_" + strings.Repeat("a", 52), "conflicting key: id " + id + ` is another key's (named "ci")`},
	}
	check := func(c struct{ name, scope, key, want string }) {
		t.Helper()
		res := b.runIn(t, c.key, "keys", "import", "--name", c.name, "--scope", c.scope, "--from-file", "-")
		require.Equal(t, ExitConflict, res.code, res.stderr)
		require.Equal(t, "hopper: ", res.stderr[:8])
		require.Contains(t, res.stderr, c.want)
		require.NotContains(t, res.stderr, secret)
	}
	for _, c := range conflicts {
		check(c)
	}
	require.Len(t, b.listKeys(t), 1)

	// A revoked key is never imported again.
	require.Equal(t, ExitOK, b.run(t, "keys", "revoke", id).code)
	check(struct{ name, scope, key, want string }{"ci", "work", key, "conflicting key: key " + id + ` (named "ci") was revoked at `})
	keys := b.listKeys(t)
	require.Len(t, keys, 1)
	require.NotEmpty(t, keys[0].RevokedAt, "still revoked")
}

// Through a server (--server) import works and fails alike, with the server's words.
func TestKeysImportThroughAServer(t *testing.T) {
	b := startServer(t, true)
	admin, k, err := apikey.New("ops", []apikey.Scope{apikey.ScopeAdmin})
	require.NoError(t, err)
	require.NoError(t, b.store.KeyCreate(t.Context(), k))
	t.Setenv(envAPIKey, admin)
	remoteIn := func(stdin string, args ...string) result {
		t.Helper()
		var stdout, stderr strings.Builder
		code := run(t.Context(), append([]string{"--server", b.url}, args...), strings.NewReader(stdin), &stdout, &stderr)
		return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
	}

	key := generateKey(t)
	id, _, err := apikey.Parse(key)
	require.NoError(t, err)
	res := remoteIn(key, "keys", "import", "--name", "reader", "--scope", "read", "--from-file", "-")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Equal(t, "API key reader imported (id "+id+", scopes read)\n", res.stdout)
	res = remoteIn(key, "keys", "import", "--name", "reader", "--scope", "read", "--from-file", "-")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "was imported already: nothing changed")
	res = remoteIn(key, "keys", "import", "--name", "reader", "--scope", "admin", "--from-file", "-")
	require.Equal(t, ExitConflict, res.code, res.stderr)
	require.Equal(t, "hopper: conflicting scopes: key "+id+" is stored with scopes read: import it with those, or revoke it and import a new key\n",
		res.stderr, "the message of the database path")

	t.Setenv(envAPIKey, key) // the imported key works: a read key may not import
	res = b.remote(t, "jobs", "ls")
	require.Equal(t, ExitOK, res.code, res.stderr)
	res = remoteIn(generateKey(t), "keys", "import", "--name", "x", "--scope", "read", "--from-file", "-")
	require.Equal(t, ExitAuth, res.code, res.stderr)
}
