package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/hopperjobs/hopper/internal/apikey"
	// Named hstore because this package's store interface (open.go) takes the name store.
	hstore "github.com/hopperjobs/hopper/internal/store"
	"github.com/spf13/cobra"
)

func newKeysCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Create, import, generate, list and revoke API keys",
		Long: `API keys let programs call 'hopper serve'. Each key has scopes: enqueue (add jobs),
work (run jobs), read (look at jobs, queues and workers) and admin (everything, including
pausing queues, canceling jobs and managing keys). Only a hash of a key is stored: it is shown
once, when created. A key can also be made elsewhere ('keys generate', a secret manager) and
imported with its secret ('keys import').`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRunE,
	}
	cmd.AddCommand(newKeysCreateCmd(), newKeysImportCmd(), newKeysGenerateCmd(), newKeysLsCmd(), newKeysRevokeCmd())
	return cmd
}

// keyManager creates, imports, lists and revokes keys: in the database (--database,
// localKeys) or through a server's admin API (--server, a *hopperclient.Client).
type keyManager interface {
	CreateKey(ctx context.Context, name string, scopes ...string) (plaintext string, key *hopperclient.APIKey, err error)
	// ImportKey stores a key made elsewhere (keys_import.go); created is false when it was
	// stored already, alike.
	ImportKey(ctx context.Context, plaintext, name string, scopes ...string) (key *hopperclient.APIKey, created bool, err error)
	Keys(ctx context.Context) ([]*hopperclient.APIKey, error)
	RevokeKey(ctx context.Context, idOrName string) (*hopperclient.APIKey, error)
}

var (
	_ keyManager = localKeys{}
	_ keyManager = (*hopperclient.Client)(nil)
)

// withKeys runs fn with the keys of --server, or of the database named by --database, which
// must exist.
func withKeys(cmd *cobra.Command, fn func(keyManager) error) error {
	if url := serverURL(cmd); url != "" {
		c, err := newRemote(url)
		if err != nil {
			return err
		}
		return remoteErr(fn(c))
	}
	return withStore(cmd, true, func(st store) error {
		ks, ok := st.(hstore.KeyStore)
		if !ok {
			return fmt.Errorf("%T keeps no API keys", st)
		}
		return fn(localKeys{ks})
	})
}

type localKeys struct{ hstore.KeyStore }

func (l localKeys) CreateKey(ctx context.Context, name string, scopes ...string) (string, *hopperclient.APIKey, error) {
	parsed, err := apikey.ParseScopes(scopes)
	if err != nil {
		return "", nil, usageErrorf("invalid --scope: %v", err)
	}
	plaintext, key, err := apikey.New(name, parsed)
	if errors.Is(err, apikey.ErrInvalidName) {
		return "", nil, usageErrorf("invalid --name: %v", err)
	}
	if err != nil {
		return "", nil, err
	}
	if err := l.KeyCreate(ctx, key); err != nil {
		return "", nil, err
	}
	return plaintext, keyOf(key), nil
}

func (l localKeys) Keys(ctx context.Context) ([]*hopperclient.APIKey, error) {
	keys, err := l.KeyList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*hopperclient.APIKey, len(keys))
	for i, k := range keys {
		out[i] = keyOf(k)
	}
	return out, nil
}

func (l localKeys) RevokeKey(ctx context.Context, idOrName string) (*hopperclient.APIKey, error) {
	// Key ids and names are both of the name alphabet: anything else names no key, and a
	// byte PostgreSQL cannot keep (NUL) must not reach it.
	if err := apikey.ValidateName(idOrName); err != nil {
		return nil, usageErrorf("no API key has id or name %q: ids and names are 1 to 64 letters, digits, '.', '_' or '-'", idOrName)
	}
	k, err := l.KeyRevoke(ctx, idOrName)
	if err != nil {
		return nil, err
	}
	return keyOf(k), nil
}

// keyOf is a stored key as the CLI shows it: without its hash.
func keyOf(k *hstore.APIKey) *hopperclient.APIKey {
	return &hopperclient.APIKey{ID: k.ID, Name: k.Name, Scopes: k.Scopes, CreatedAt: k.CreatedAt,
		LastUsedAt: k.LastUsedAt, RevokedAt: k.RevokedAt}
}

type keysCreateFlags struct {
	name   string
	scopes []string
}

func newKeysCreateCmd() *cobra.Command {
	var f keysCreateFlags
	cmd := &cobra.Command{
		Use:   "create --name NAME --scope SCOPE...",
		Short: "Create an API key and print it, once",
		Example: `  hopper keys create --name billing-workers --scope work --scope enqueue
  hopper keys create --name ops --scope admin --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runKeysCreate(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", "what the key is for: 1 to 64 letters, digits, '.', '_' or '-'; unique among live keys")
	fl.StringSliceVar(&f.scopes, "scope", nil, "enqueue, work, read or admin (repeatable or comma-separated)")
	_ = cmd.MarkFlagRequired("name")
	_ = cmd.MarkFlagRequired("scope")
	addJSONFlag(cmd)
	return cmd
}

func runKeysCreate(cmd *cobra.Command, f *keysCreateFlags) error {
	scopes, err := apikey.ParseScopes(f.scopes)
	if err != nil {
		return usageErrorf("invalid --scope: %v", err)
	}
	if err := apikey.ValidateName(f.name); err != nil {
		return usageErrorf("invalid --name: %v", err)
	}
	return withKeys(cmd, func(km keyManager) error {
		plaintext, key, err := km.CreateKey(cmd.Context(), f.name, apikey.ScopeNames(scopes)...)
		if errors.Is(err, hstore.ErrDuplicate) {
			msg := fmt.Sprintf("an API key named %q exists: revoke it first, or choose another name", f.name)
			return &exitError{code: ExitConflict, msg: msg, err: err}
		}
		if err != nil {
			return err
		}
		const warning = "Copy the key now: it cannot be shown again (Hopper keeps only a hash of it)."
		if wantJSON(cmd) {
			out := newKeyJSON(key)
			out.Key = plaintext
			fmt.Fprintln(cmd.ErrOrStderr(), warning)
			return printJSON(cmd.OutOrStdout(), out)
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "API key %s created (id %s, scopes %s):\n\n    %s\n\n%s\n",
			key.Name, key.ID, strings.Join(key.Scopes, ", "), plaintext, warning)
		return err
	})
}

func newKeysLsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List API keys, revoked ones included, by name",
		Args:    cobra.NoArgs,
		RunE:    runKeysLs,
	}
	addJSONFlag(cmd)
	return cmd
}

func runKeysLs(cmd *cobra.Command, _ []string) error {
	return withKeys(cmd, func(km keyManager) error {
		keys, err := km.Keys(cmd.Context())
		if err != nil {
			return err
		}
		if wantJSON(cmd) {
			out := make([]*keyJSON, len(keys))
			for i, k := range keys {
				out[i] = newKeyJSON(k)
			}
			return printJSON(cmd.OutOrStdout(), &struct {
				Keys []*keyJSON `json:"keys"`
			}{out})
		}
		return printKeyTable(cmd.OutOrStdout(), keys)
	})
}

func printKeyTable(w io.Writer, keys []*hopperclient.APIKey) error {
	if len(keys) == 0 {
		_, err := fmt.Fprintln(w, "no API keys")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSCOPES\tCREATED\tLAST_USED\tREVOKED")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, strings.Join(k.Scopes, ","),
			showTime(k.CreatedAt, tableTime), showTime(k.LastUsedAt, tableTime), showTime(k.RevokedAt, tableTime))
	}
	return tw.Flush()
}

func newKeysRevokeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "revoke ID_OR_NAME",
		Short: "Revoke an API key, by id or name",
		Long: `Revoke an API key: the server refuses it from then on. The argument is a key's id or,
when no key has that id, the name of a live key. Revoking a revoked key changes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: runKeysRevoke,
	}
	addJSONFlag(cmd)
	return cmd
}

func runKeysRevoke(cmd *cobra.Command, args []string) error {
	return withKeys(cmd, func(km keyManager) error {
		k, err := km.RevokeKey(cmd.Context(), args[0])
		if errors.Is(err, hstore.ErrNotFound) {
			msg := fmt.Sprintf("no API key has id or name %q", args[0])
			return &exitError{code: ExitNotFound, msg: msg, err: err}
		}
		if err != nil {
			return err
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), newKeyJSON(k))
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "API key %s (id %s) revoked at %s\n",
			k.Name, k.ID, showTime(k.RevokedAt, tableTime))
		return err
	})
}

// keyJSON is an API key as the CLI prints it. Key (the plaintext) is set only by create; the
// hash is never printed.
type keyJSON struct {
	ID         string   `json:"id"`
	Name       string   `json:"name"`
	Scopes     []string `json:"scopes"`
	Key        string   `json:"key,omitempty"`
	CreatedAt  string   `json:"created_at,omitempty"`
	LastUsedAt string   `json:"last_used_at,omitempty"`
	RevokedAt  string   `json:"revoked_at,omitempty"`
}

func newKeyJSON(k *hopperclient.APIKey) *keyJSON {
	scopes := k.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return &keyJSON{
		ID: k.ID, Name: k.Name, Scopes: scopes, CreatedAt: jsonTime(k.CreatedAt),
		LastUsedAt: jsonTime(k.LastUsedAt), RevokedAt: jsonTime(k.RevokedAt),
	}
}
