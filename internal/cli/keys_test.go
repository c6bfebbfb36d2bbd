package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/stretchr/testify/require"
)

// keyOut is the JSON of one key.
type keyOut struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Scopes    []string `json:"scopes"`
	Key       string   `json:"key"`
	CreatedAt string   `json:"created_at"`
	RevokedAt string   `json:"revoked_at"`
}

// createKey runs keys create --json with args and returns what it printed.
func (b *testBundle) createKey(t *testing.T, args ...string) keyOut {
	t.Helper()
	res := b.run(t, append([]string{"keys", "create", "--json"}, args...)...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stderr, "cannot be shown again")
	var out keyOut
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
	return out
}

// listKeys runs keys ls --json.
func (b *testBundle) listKeys(t *testing.T, pre ...string) []keyOut {
	t.Helper()
	res := b.run(t, append(pre, "keys", "ls", "--json")...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	var out struct {
		Keys []keyOut `json:"keys"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
	require.NotNil(t, out.Keys)
	return out.Keys
}

func TestKeysCreateListRevoke(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, ExitOK, b.run(t, "migrate").code)
	require.Empty(t, b.listKeys(t))

	res := b.run(t, "keys", "create", "--name", "billing-workers", "--scope", "work", "--scope", "enqueue")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "cannot be shown again")
	require.Contains(t, res.stdout, "scopes enqueue, work")
	plaintext := findKey(t, res.stdout)
	id, secret, err := apikey.Parse(plaintext)
	require.NoError(t, err)

	keys := b.listKeys(t)
	require.Len(t, keys, 1)
	require.Equal(t, id, keys[0].ID)
	require.Equal(t, "billing-workers", keys[0].Name)
	require.Equal(t, []string{"enqueue", "work"}, keys[0].Scopes)
	require.NotEmpty(t, keys[0].CreatedAt)
	require.Empty(t, keys[0].RevokedAt)
	require.Empty(t, keys[0].Key, "ls never prints a key")

	res = b.run(t, "keys", "ls")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "LAST_USED")
	require.Contains(t, res.stdout, id)
	require.Contains(t, res.stdout, "enqueue,work")
	require.NotContains(t, res.stdout, secret)

	res = b.run(t, "keys", "revoke", "billing-workers")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "revoked")
	keys = b.listKeys(t)
	require.Len(t, keys, 1)
	require.NotEmpty(t, keys[0].RevokedAt, "ls shows revoked keys")

	res = b.run(t, "keys", "revoke", id)
	require.Equal(t, ExitOK, res.code, "revoking twice is fine: %s", res.stderr)

	// The name is free again once its key is revoked.
	again := b.createKey(t, "--name", "billing-workers", "--scope", "work")
	require.NotEqual(t, id, again.ID)
	require.Len(t, b.listKeys(t), 2)
}

// findKey returns the hop_… word of create's output.
func findKey(t *testing.T, out string) string {
	t.Helper()
	for _, w := range strings.Fields(out) {
		if strings.HasPrefix(w, apikey.Prefix) {
			return w
		}
	}
	t.Fatalf("no key in %q", out)
	return ""
}

func TestKeysCreateJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, ExitOK, b.run(t, "migrate").code)
	out := b.createKey(t, "--name", "ops", "--scope", "admin,read")
	require.Equal(t, "ops", out.Name)
	require.Equal(t, []string{"read", "admin"}, out.Scopes)
	id, _, err := apikey.Parse(out.Key)
	require.NoError(t, err)
	require.Equal(t, id, out.ID)
}

func TestKeysErrors(t *testing.T) {
	t.Parallel()
	b := setupEmpty(t)
	res := b.run(t, "keys", "ls")
	require.Equal(t, ExitUsage, res.code, "keys commands do not create the database")
	require.Contains(t, res.stderr, "does not exist")
	require.Equal(t, ExitOK, b.run(t, "migrate").code)

	res = b.run(t, "keys", "create", "--name", "ci", "--scope", "write")
	require.Equal(t, ExitUsage, res.code)
	require.Contains(t, res.stderr, `invalid --scope: invalid scope "write" (want enqueue, work, read or admin)`)
	require.Empty(t, res.stdout)

	for _, args := range [][]string{
		{"keys", "create", "--scope", "read"},                        // no --name
		{"keys", "create", "--name", "ci"},                           // no --scope
		{"keys", "create", "--name", "has space", "--scope", "read"}, // bad name
		{"keys", "revoke"},                                           // no argument
		{"keys", "frob"},
	} {
		res := b.run(t, args...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", args, res.stderr)
		require.NotEmpty(t, res.stderr, args)
	}
	require.Empty(t, b.listKeys(t), "nothing was created")

	b.createKey(t, "--name", "ci", "--scope", "work")
	res = b.run(t, "keys", "create", "--name", "ci", "--scope", "read")
	require.Equal(t, ExitConflict, res.code)
	require.Contains(t, res.stderr, `an API key named "ci" exists`)

	res = b.run(t, "keys", "revoke", "no-such-key")
	require.Equal(t, ExitNotFound, res.code)
	require.Contains(t, res.stderr, `no API key has id or name "no-such-key"`)
}

// The keys commands work on PostgreSQL too.
func TestKeysPostgres(t *testing.T) {
	pgtest.Require(t)
	t.Parallel()
	b := setup(t)
	pg := []string{"--database", pgtest.URL(), "--schema", pgtest.FreshSchema(t, "hopper_cli_keys_")}
	res := b.run(t, append(pg, "migrate")...)
	require.Equal(t, ExitOK, res.code, res.stderr)

	res = b.run(t, append(pg, "keys", "create", "--name", "ci", "--scope", "read", "--json")...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	var created keyOut
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &created))
	keys := b.listKeys(t, pg...)
	require.Len(t, keys, 1)
	require.Equal(t, created.ID, keys[0].ID)

	res = b.run(t, append(pg, "keys", "create", "--name", "ci", "--scope", "read")...)
	require.Equal(t, ExitConflict, res.code, res.stderr)
	res = b.run(t, append(pg, "keys", "revoke", "ci\x00")...)
	require.Equal(t, ExitUsage, res.code, "a NUL byte never reaches PostgreSQL: %s", res.stderr)
	require.NotContains(t, res.stderr, "SQLSTATE")
	res = b.run(t, append(pg, "keys", "revoke", created.ID)...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.NotEmpty(t, b.listKeys(t, pg...)[0].RevokedAt)
}
