package hopper

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"github.com/stretchr/testify/require"
)

// Every limit declared in validate.go is among the InputLimits a server serves, with its
// value: a limit added there without being served fails here, so that no worker SDK has to
// keep a copy of it.
func TestEveryLimitIsServed(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, func(c *Config) { c.MaxArgsBytes = 12345 })
	l := b.client.InputLimits()
	served := map[string][2]any{ // a limit of validate.go: its value, and what is served
		"maxKindLen": {maxKindLen, l.MaxKindLen}, "maxKeyLen": {maxKeyLen, l.MaxKeyLen},
		"maxPriority": {maxPriority, l.MaxPriority}, "maxAttemptsCap": {maxAttemptsCap, l.MaxAttempts},
		"maxRescuesCap": {maxRescuesCap, l.MaxRescues}, "maxTimeout": {maxTimeout, l.MaxTimeout},
		"maxRetention": {maxRetention, l.MaxRetention}, "maxResultTTL": {maxResultTTL, l.MaxResultTTL},
		"maxHeaderBytes": {maxHeaderBytes, l.MaxHeaderBytes}, "maxIDLen": {maxIDLen, l.MaxIDLen},
		"maxNameLen": {maxNameLen, l.MaxNameLen}, "maxCap": {maxCap, l.MaxCap},
		"MaxReasonBytes":          {MaxReasonBytes, l.MaxReasonBytes},
		"MaxProgressMessageBytes": {MaxProgressMessageBytes, l.MaxProgressMessageBytes},
		"MaxErrorBytes":           {MaxErrorBytes, l.MaxErrorBytes},
		"maxFilterCodes":          {maxFilterCodes, l.MaxFilterCodes},
	}
	for _, name := range constsOf(t, "validate.go") {
		v, ok := served[name]
		require.True(t, ok, "the limit %s of validate.go is not served: add it to InputLimits (hoppertype), Client.InputLimits, the proto's InputLimits and apispec", name)
		require.EqualValues(t, v[0], v[1], "%s is served with another value", name)
		delete(served, name)
	}
	require.Empty(t, served, "limits this test names that validate.go no longer declares")

	// The limits that come from elsewhere, and the server's own setting.
	require.Equal(t, 12345, l.MaxArgsBytes)
	require.Equal(t, field.MaxQueueLen, l.MaxQueueLen)
	require.Equal(t, field.MaxErrorCodeLen, l.MaxErrorCodeLen)
	require.Equal(t, MaxRunAtPast, l.MaxRunAtPast)
	require.Equal(t, MaxRunAtFuture, l.MaxRunAtFuture)
	require.Equal(t, workerapi.MaxActivateJobs, l.MaxActivateJobs)
	require.Equal(t, workerapi.MaxActivateWait, l.MaxActivateWait)
	require.Equal(t, workerapi.MaxActivateQueues, l.MaxActivateQueues)
	require.Equal(t, workerapi.MaxStreamCredit, l.MaxStreamCredit)
	require.Equal(t, workerapi.MaxStreamKindCaps, l.MaxStreamKindCaps)
	require.Equal(t, MaxParents, l.MaxParents)
	require.Equal(t, MaxWorkflowSteps, l.MaxWorkflowSteps)
	require.Greater(t, l.MaxRunAtFuture, time.Hour)
}

// constsOf lists the constants a file of this package declares.
func constsOf(t *testing.T, file string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			for _, n := range s.(*ast.ValueSpec).Names {
				names = append(names, n.Name)
			}
		}
	}
	require.NotEmpty(t, names)
	return names
}
