package store

import (
	"context"
	"fmt"

	"github.com/hopperjobs/hopper/hoppertype"
)

// Fan-out at run time (docs/workflows.md): a running job (the spawner) adds jobs, in the
// transaction of one call, fenced by its lease token. Each new job goes in the spawner's
// workflow, when it has one, under a step name (given, or SpawnedStep), and becomes a parent
// of every job that waits for the spawner: a job_deps row and one more pending parent on each
// such child, so the children are released only once the spawner and the spawned jobs have
// all ended. While the spawner runs, its children cannot have been released (they wait for
// it): each waits, or was canceled (by a user, or another parent's failure). A canceled one
// gets the dependency row too, not counted, so that a re-arm (the failed parent retried in
// place) makes it wait for the spawned jobs as well. A spawned job that the call finds already there (its step name in the workflow,
// or its idempotency key) is returned as it is (Existing), and becomes a parent of the
// waiting children that do not wait for it yet: a retried attempt that spawns again gets the
// first attempt's jobs, and adds no second dependency.

// SpawnStore adds jobs at run time.
type SpawnStore interface {
	// JobSpawn inserts p.Jobs for the running job p.ID, in one transaction, all or none (as
	// JobInsertMany: each item may name earlier ones in After). NoSuchJob when no job has the
	// id, ErrLeaseLost when it is not running under p.Token; a *SpawnError (ErrInvalid) for a
	// job the spawn cannot take, naming its field.
	JobSpawn(ctx context.Context, p *SpawnParams) ([]*InsertResult, error)
}

// SpawnParams are jobs a running job adds. Each job's Step is its step name in the spawner's
// workflow ("" for one the store generates); the store sets WorkflowID.
type SpawnParams struct {
	ID    string
	Token int64
	Jobs  []*InsertParams
}

// SpawnError refuses item Item of a spawn: Name is its field (step, after[2], merge_key), Why
// what is wrong. errors.Is(err, ErrInvalid) holds; the client names the field.
type SpawnError struct {
	Item      int
	Name, Why string
}

func (e *SpawnError) Error() string {
	return fmt.Sprintf("item %d: invalid %s: %s", e.Item, e.Name, e.Why)
}

// Field is the field the error names.
func (e *SpawnError) Field() string { return e.Name }

// Reason says what is wrong with the field.
func (e *SpawnError) Reason() string { return e.Why }

// Is makes errors.Is(err, ErrInvalid) true.
func (e *SpawnError) Is(target error) bool { return target == ErrInvalid }

// CheckSpawn refuses a spawn a store cannot take before it reads anything: no jobs, a job of
// another workflow, a merge key (a job merged into is another's), or what CheckBatch and
// CheckParentOrder refuse.
func CheckSpawn(p *SpawnParams) error {
	if len(p.Jobs) == 0 {
		return fmt.Errorf("spawn for job %s: %w: no jobs", p.ID, ErrInvalid)
	}
	for i, j := range p.Jobs {
		switch {
		case j.MergeKey != "":
			return &SpawnError{Item: i, Name: "merge_key", Why: "a spawned job is never merged"}
		case j.WorkflowID != "":
			return &SpawnError{Item: i, Name: "workflow", Why: "a spawned job goes in its spawner's workflow"}
		}
	}
	if err := CheckBatch(p.Jobs); err != nil {
		return err
	}
	return CheckParentOrder(p.Jobs)
}

// Spawner is the running job that spawns, as the spawn's transaction read it.
type Spawner struct {
	ID, WorkflowID, Step string
	State                hoppertype.JobState
	Token                int64
}

// PrepareSpawn checks that s (nil: no such job) runs under p.Token, and puts p's jobs in its
// workflow: each keeps its step name or gets SpawnedStep's. Outside a workflow, a step name is
// refused: there is no workflow to name it in.
func PrepareSpawn(s *Spawner, p *SpawnParams) error {
	switch {
	case s == nil:
		return NoSuchJob(p.ID)
	case s.State != hoppertype.StateRunning || s.Token != p.Token:
		return fmt.Errorf("job %s token %d: %w", p.ID, p.Token, ErrLeaseLost)
	}
	for i, j := range p.Jobs {
		if s.WorkflowID == "" {
			if j.Step != "" {
				return &SpawnError{Item: i, Name: "step", Why: fmt.Sprintf("job %s is not a step of a workflow: no step to name", s.ID)}
			}
			continue
		}
		j.WorkflowID = s.WorkflowID
		if j.Step == "" {
			j.Step = SpawnedStep(s.Step, j.ID)
		}
	}
	return nil
}

// SpawnedStep is the step name of a job spawned without one: the spawner's step and the job's
// id, unique in the workflow. (A retried attempt spawns such a job again: name the steps to
// make a spawn idempotent.)
func SpawnedStep(spawnerStep, jobID string) string { return spawnerStep + "." + jobID }

// Ancestor is a parent found by AncestorsFunc: its id and whether it waits.
type Ancestor struct {
	ID      string
	Waiting bool
}

// AncestorsFunc returns the parents of the jobs ids (one level), each with whether it waits.
type AncestorsFunc func(ctx context.Context, ids []string) ([]Ancestor, error)

// WaitsFor tells whether one of the jobs from (those that wait) waits, through any chain of
// waiting jobs, for spawner: a spawned job must not be a parent of such a job, nor wait for
// one, or it would wait for itself. Only waiting jobs are walked: while the spawner runs, every
// job that waits for it waits. It returns the job of from found so, or "".
func WaitsFor(ctx context.Context, parents AncestorsFunc, spawner string, from []Ancestor) (string, error) {
	for _, start := range from {
		if start.ID == spawner || !start.Waiting {
			continue
		}
		seen := map[string]bool{start.ID: true}
		for level := []string{start.ID}; len(level) > 0; {
			up, err := parents(ctx, level)
			if err != nil {
				return "", fmt.Errorf("walk the parents of job %s: %w", start.ID, err)
			}
			level = level[:0:0]
			for _, a := range up {
				if a.ID == spawner {
					return start.ID, nil
				}
				if a.Waiting && !seen[a.ID] {
					seen[a.ID] = true
					level = append(level, a.ID)
				}
			}
		}
	}
	return "", nil
}

// WaitsForSpawner is the *SpawnError of item whose field (step, after[k]) names job id, which
// waits for the spawner.
func WaitsForSpawner(item int, field, id string) error {
	return &SpawnError{Item: item, Name: field,
		Why: fmt.Sprintf("job %s waits for the spawner: a spawned job would wait for itself", id)}
}
