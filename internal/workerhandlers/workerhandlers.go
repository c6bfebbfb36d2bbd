// Package workerhandlers lets the module's packages that run jobs outside the engine (the
// remote worker) reach the handlers a *hopper.Workers holds, which package hopper does not
// export. Package hopper sets Of when it is initialized.
package workerhandlers

import "github.com/hopperjobs/hopper/internal/engine"

// Of returns the handlers of workers, a *hopper.Workers, by kind.
var Of func(workers any) map[string]engine.Handler
