package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/hopperjobs/hopper/internal/apikey"
	istore "github.com/hopperjobs/hopper/internal/store"
	"github.com/spf13/cobra"
)

// flagBootstrapKey is serve's flag, HOPPER_BOOTSTRAP_KEY_FILE in the environment (env.go): the
// name a Helm chart or a unit file sets, with a Secret mounted as a file.
const flagBootstrapKey = "bootstrap-key-file"

// addBootstrapFlags adds serve's --bootstrap-key-file.
func addBootstrapFlags(cmd *cobra.Command, o *serveOptions) {
	cmd.Flags().StringVar(&o.bootstrapKeyFile, flagBootstrapKey, "",
		"import the admin API key this file holds ('hopper keys generate' makes one) at start, unless it is stored already")
}

// readBootstrapKey reads the key of --bootstrap-key-file, "" when the flag is not set. It is
// read (from stdin for "-") before the database is opened, so a bad file stops the server at once, with a usage
// error naming the flag and the path.
func readBootstrapKey(path string, stdin io.Reader) (string, error) {
	if path == "" {
		return "", nil
	}
	return readKeyFile("--"+flagBootstrapKey, path, stdin)
}

// bootstrapName is the name of the bootstrap key with that id. It holds the id so that a new
// key in the file (a rotation) is imported beside the old one, which works until it is
// revoked, and so that every server started with one file names its key alike.
func bootstrapName(id string) string { return "bootstrap-" + id }

// importBootstrapKey imports plaintext, the key of --bootstrap-key-file, as an admin key
// named bootstrapName. It is idempotent across restarts and servers started together on one
// database (apikey.Import, store.KeyStore.KeyImport): the key is stored once, and a key stored
// already changes nothing. A revoked bootstrap key is not brought back: the server starts
// without it and says so in a warning, since revoking it was an operator's choice and the
// other keys still work. A key stored under another name or with other scopes, or an id that
// is another key's, stops the server: the file names a key the operator did not mean.
func importBootstrapKey(ctx context.Context, keys istore.KeyStore, plaintext, path string, log *slog.Logger) error {
	id, _, err := apikey.Parse(plaintext)
	if err != nil {
		return usageErrorf("--%s %s: %v", flagBootstrapKey, path, err) // readBootstrapKey checked it
	}
	name := bootstrapName(id)
	k, created, err := apikey.Import(ctx, keys, plaintext, name, []apikey.Scope{apikey.ScopeAdmin})
	if errors.Is(err, apikey.ErrRevoked) {
		log.Warn("bootstrap API key not imported: it was revoked, and a revoked key is never imported again; "+
			"put a new key in the file ('hopper keys generate') and restart", "key_id", id, "name", name, "file", path)
		return nil
	}
	if ce, ok := errors.AsType[*apikey.ConflictError](err); ok {
		msg := fmt.Sprintf("--%s %s: conflicting %s: %s (a bootstrap key is named %s, with the admin scope): "+
			"put a new key in the file ('hopper keys generate'), or leave the flag unset",
			flagBootstrapKey, path, ce.Field, ce.Reason, name)
		return &exitError{code: ExitConflict, msg: msg, err: err}
	}
	if err != nil {
		return err
	}
	if created {
		log.Info("bootstrap API key imported", "key_id", k.ID, "name", k.Name, "file", path)
	} else {
		log.Info("bootstrap API key present", "key_id", k.ID, "name", k.Name, "file", path)
	}
	return nil
}
