package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/hopperjobs/hopper/internal/apikey"
	hstore "github.com/hopperjobs/hopper/internal/store"
	"github.com/spf13/cobra"
)

func newKeysGenerateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Print a new API key, stored nowhere, for a secret manager (then import it)",
		Long: `generate prints a new API key and nothing else, touching no database and no server: the
key is valid for no one until it is imported ('hopper keys import', or 'hopper serve
--bootstrap-key-file' for an admin key). Put it in a secret manager, a Kubernetes Secret or a
file first, then give it to the server and to the programs that use it from there.`,
		Example: `  hopper keys generate > admin.key
  hopper keys generate | kubectl create secret generic hopper-admin-key --from-file=key=/dev/stdin`,
		Args: cobra.NoArgs,
		RunE: runKeysGenerate,
	}
	addJSONFlag(cmd)
	return cmd
}

func runKeysGenerate(cmd *cobra.Command, _ []string) error {
	plaintext, err := apikey.Generate()
	if err != nil {
		return err
	}
	if wantJSON(cmd) {
		id, _, _ := apikey.Parse(plaintext)
		return printJSON(cmd.OutOrStdout(), &struct {
			ID  string `json:"id"`
			Key string `json:"key"`
		}{id, plaintext})
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), plaintext)
	return err
}

type keysImportFlags struct {
	name     string
	scopes   []string
	fromFile string
}

func newKeysImportCmd() *cobra.Command {
	var f keysImportFlags
	cmd := &cobra.Command{
		Use:   "import --name NAME --scope SCOPE... --from-file FILE|-",
		Short: "Import an API key made elsewhere ('keys generate'), its secret read from a file or stdin",
		Long: `import stores an API key whose secret is given, not generated: one 'hopper keys generate'
printed, or any tool following the format of docs/security.md (hop_, an id of 12 characters,
_, a secret of 52, both of a-z and 2-7, from a cryptographic random source). The file (or
stdin, for -) holds the key alone; surrounding spaces and newlines are ignored. Only a hash of
the key is stored, as for 'keys create'; the key is never printed.

Importing a key again under the same name with the same scopes changes nothing (exit 0), so a
deployment may import on every run. A key stored under another name or with other scopes, a
revoked key (never imported again) or a name a live key of another id has is a conflict
(exit 4).`,
		Example: `  hopper keys import --name billing-workers --scope work,enqueue --from-file /run/secrets/hopper-key
  vault kv get -field=key secret/hopper/ci | hopper keys import --name ci --scope enqueue --from-file -`,
		Args: noKeyArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runKeysImport(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", "what the key is for: 1 to 64 letters, digits, '.', '_' or '-'; unique among live keys")
	fl.StringSliceVar(&f.scopes, "scope", nil, "enqueue, work, read or admin (repeatable or comma-separated)")
	fl.StringVar(&f.fromFile, "from-file", "",
		"the file holding the key, or - for stdin (never the key itself: it would be in the shell's history)")
	for _, name := range []string{"name", "scope", "from-file"} {
		_ = cmd.MarkFlagRequired(name)
	}
	addJSONFlag(cmd)
	return cmd
}

// noKeyArgs refuses arguments without quoting them, as cobra.NoArgs would: the one given is
// likely the key, which must not land in a log on top of the shell's history.
func noKeyArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("keys import takes no arguments: give the key in a file (--from-file FILE) " +
			"or on stdin (--from-file -), never on the command line")
	}
	return nil
}

func runKeysImport(cmd *cobra.Command, f *keysImportFlags) error {
	scopes, err := apikey.ParseScopes(f.scopes)
	if err != nil {
		return usageErrorf("invalid --scope: %v", err)
	}
	if err := apikey.ValidateName(f.name); err != nil {
		return usageErrorf("invalid --name: %v", err)
	}
	plaintext, err := readKeyFile("--from-file", f.fromFile, cmd.InOrStdin())
	if err != nil {
		return err
	}
	return withKeys(cmd, func(km keyManager) error {
		key, created, err := km.ImportKey(cmd.Context(), plaintext, f.name, apikey.ScopeNames(scopes)...)
		if errors.Is(err, hstore.ErrDuplicate) {
			return &exitError{code: ExitConflict, msg: conflictMessage(err), err: err}
		}
		if err != nil {
			return err
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), &struct {
				*keyJSON
				Created bool `json:"created"`
			}{newKeyJSON(key), created})
		}
		if !created {
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "API key %s (id %s, scopes %s) was imported already: nothing changed\n",
				key.Name, key.ID, strings.Join(key.Scopes, ", "))
			return err
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "API key %s imported (id %s, scopes %s)\n",
			key.Name, key.ID, strings.Join(key.Scopes, ", "))
		return err
	})
}

// conflictMessage is what to show of an import's conflict: the *apikey.ConflictError's own
// words, which a server sends as its message.
func conflictMessage(err error) string {
	if ce, ok := errors.AsType[*connect.Error](err); ok {
		return ce.Message()
	}
	if ce, ok := errors.AsType[*apikey.ConflictError](err); ok {
		return ce.Error()
	}
	return err.Error()
}

func (l localKeys) ImportKey(ctx context.Context, plaintext, name string, scopes ...string) (*hopperclient.APIKey, bool, error) {
	parsed, err := apikey.ParseScopes(scopes)
	if err != nil {
		return nil, false, usageErrorf("invalid --scope: %v", err)
	}
	k, created, err := apikey.Import(ctx, l.KeyStore, plaintext, name, parsed)
	switch {
	case errors.Is(err, apikey.ErrInvalidName):
		return nil, false, usageErrorf("invalid --name: %v", err)
	case errors.Is(err, apikey.ErrMalformed):
		return nil, false, usageErrorf("invalid key: %v", err)
	case err != nil:
		return nil, false, err
	}
	return keyOf(k), created, nil
}

// maxKeyFile bounds what is read of a key file. A key is 69 bytes: a much longer file is not
// one (a wrong path), and reading it whole could take long (a device).
const maxKeyFile = 4096

// readKeyFile reads the API key in the file path (stdin for "-"), which flag names. The file
// holds the key alone, spaces and newlines around it ignored. A file that cannot be read or
// holds no well-formed key is a usage error naming flag and path, never quoting the key's
// secret.
func readKeyFile(flag, path string, stdin io.Reader) (string, error) {
	what := flag + " " + path
	r := stdin
	if path == "-" {
		what = flag + " - (stdin)"
	} else {
		f, err := os.Open(path)
		if err != nil {
			return "", usageErrorf("%s: %v", flag, err) // the error names the path
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxKeyFile+1))
	if err != nil {
		return "", usageErrorf("%s: %v", what, err)
	}
	key := strings.TrimSpace(string(b))
	switch {
	case len(b) > maxKeyFile:
		return "", usageErrorf("%s: more than %d bytes: not a file holding one API key", what, maxKeyFile)
	case key == "":
		return "", usageErrorf("%s is empty: it should hold one API key (hop_…), as 'hopper keys generate' prints it", what)
	case strings.ContainsAny(key, " \t\r\n"):
		return "", usageErrorf("%s holds more than one word: it should hold one API key (hop_…) alone", what)
	}
	if _, _, err := apikey.Parse(key); err != nil {
		return "", usageErrorf("%s: %v", what, err)
	}
	return key, nil
}
