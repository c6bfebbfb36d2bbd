// Command hopper inspects, enqueues and cancels jobs in a Hopper database.
package main

import (
	"os"

	"github.com/hopperjobs/hopper/internal/cli"
)

func main() { os.Exit(cli.Execute()) }
