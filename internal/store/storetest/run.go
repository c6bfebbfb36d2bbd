package storetest

import "testing"

// Run runs the whole conformance suite against the store opener returns. Every test gets a
// fresh database and runs in parallel with the others.
func Run(t *testing.T, opener Opener) {
	t.Helper()
	groups := []struct {
		name string
		run  func(t *testing.T, opener Opener)
	}{
		{"Insert", testInsert},
		{"Crash", testCrash},
		{"Claim", testClaim},
		{"Batch", testBatch},
		{"Fair", testFair},
		{"Fencing", testFencing},
		{"Lease", testLease},
		{"Finish", testFinish},
		{"FailWith", testFailWith},
		{"Progress", testProgress},
		{"Cancel", testCancel},
		{"Idempotency", testIdempotency},
		{"Merge", testMerge},
		{"Compact", testCompact},
		{"History", testHistory},
		{"List", testList},
		{"Cluster", testCluster},
		{"Due", testDue},
		{"Caps", testCaps},
		{"Kinds", testKinds},
		{"Rates", testRates},
		{"KeyLimits", testKeyLimits},
		{"Keys", testKeys},
		{"Schedules", testSchedules},
		{"Suspend", testSuspend},
		{"Results", testResults},
		{"DeadLetters", testDeadLetters},
		{"Incidents", testIncidents},
		{"Text", testText},
		{"Rescues", testRescues},
		{"Stats", testStats},
		{"Deps", testDeps},
		{"Workflow", testWorkflows},
		{"WorkflowEnded", testWorkflowsEnded},
		{"Parents", testParents},
		{"Spawn", testSpawn},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.run(t, opener)
		})
	}
}

// parallel runs fn as a parallel subtest on a fresh database.
func parallel(t *testing.T, opener Opener, name string, fn func(t *testing.T, b *bundle)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		fn(t, setup(t, opener))
	})
}
