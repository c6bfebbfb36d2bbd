package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newMigrateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create the database or apply pending migrations, and print the schema version",
		Args:  cobra.NoArgs,
		RunE:  runMigrate,
	}
	addJSONFlag(cmd)
	return cmd
}

func runMigrate(cmd *cobra.Command, _ []string) error {
	path, err := databasePath(cmd)
	if err != nil {
		return err
	}
	// Opening the store applies the embedded migrations.
	return withStore(cmd, false, func(st store) error {
		version, err := st.SchemaVersion(cmd.Context())
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if wantJSON(cmd) {
			return printJSON(cmd.OutOrStdout(), map[string]any{"database": describe(cmd, path), "schema_version": version})
		}
		_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: schema version %d\n", describe(cmd, path), version)
		return err
	})
}
