package cli

import (
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Flags from the environment. The global flags (--database, --schema, --server) of every
// command, and every flag of a command marked with envFlagsAll (`hopper serve`, whose
// configuration lives in a container's or a unit file's environment), can be set with a
// variable named HOPPER_ and the flag's name in upper case with "-" as "_": --max-rescues is
// HOPPER_MAX_RESCUES. A flag on the command line wins over its variable. This file is the
// only place that reads them; the rule is applied to the flag set, never flag by flag.

// envPrefix starts the name of every variable that sets a flag.
const envPrefix = "HOPPER_"

// envFlagsAll is the annotation (key and value) of a command every flag of which may come from
// the environment.
const envFlagsAll = "hopper.env-flags"

// envName is the variable of the flag named flag: HOPPER_MAX_RESCUES for max-rescues.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// fromEnv reports whether flag f of cmd may be set from the environment.
func fromEnv(cmd *cobra.Command, f *pflag.Flag) bool {
	if f.Name == "help" {
		return false
	}
	return cmd.Annotations[envFlagsAll] == envFlagsAll || cmd.Root().PersistentFlags().Lookup(f.Name) == f
}

// flagsFromEnv sets each flag of cmd that may come from the environment and that the command
// line left unset from its variable, when lookup finds one. A value the flag refuses is a
// usage error that names the variable and the flag.
func flagsFromEnv(cmd *cobra.Command, lookup func(string) (string, bool)) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || !fromEnv(cmd, f) {
			return
		}
		name := envName(f.Name)
		v, ok := lookup(name)
		if !ok {
			return
		}
		if serr := cmd.Flags().Set(f.Name, v); serr != nil {
			err = usageErrorf("%s: %v", name, serr) // pflag's error names the value and the flag
		}
	})
	return err
}

// applyEnvFlags is the root command's hook that runs before every command: flags from the
// process's environment, then the check of --server, whatever the command.
func applyEnvFlags(cmd *cobra.Command, _ []string) error {
	onLine := cmd.Flags().Changed(flagServer)
	if err := flagsFromEnv(cmd, os.LookupEnv); err != nil {
		return err
	}
	name := "--" + flagServer
	if !onLine {
		name = envName(flagServer)
	}
	return checkServerURL(name, serverURL(cmd))
}

// documentEnvFlags adds its variable to the help of each flag that may come from the
// environment, in root and the commands below it.
func documentEnvFlags(root *cobra.Command) {
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) { f.Usage += " [$" + envName(f.Name) + "]" })
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if cmd.Annotations[envFlagsAll] == envFlagsAll {
			cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) { f.Usage += " [$" + envName(f.Name) + "]" })
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
