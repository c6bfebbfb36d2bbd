// Workflows through WorkflowService (docs/workflows.md#workflows), and batches with a callback
// built on them (docs/workflows.md#batches-with-a-callback).

import { create } from "@bufbuild/protobuf";
import { jobSpec } from "./enqueue-options.js";
import type { EnqueueOptions } from "./enqueue-options.js";
import { WorkflowStepSchema } from "./gen/hopper/v1/hopper_pb.js";
import type { Workflow as WorkflowProto, WorkflowStep as WorkflowStepProto } from "./gen/hopper/v1/hopper_pb.js";
import type { ParentResult } from "./handler.js";
import type { Job, JobState } from "./job.js";
import { fromTimestamp } from "./time.js";

/** WorkflowState is a workflow's state, derived from its steps'. */
export type WorkflowState = "running" | "completed" | "failed" | "canceled";

/**
 * WorkflowStep is one step of a workflow to enqueue: a job (kind, args, options) with a name
 * unique in the workflow; after names the steps it runs after, onParentFailure what a
 * parent's failure does to it (cancel, the default; run; skip). idempotencyKey and mergeKey
 * are refused (a step's job is its workflow's own).
 */
export interface WorkflowStep<A = unknown> extends EnqueueOptions {
  name: string;
  kind: string;
  args?: A;
}

/** NewWorkflow is a workflow to enqueue: its name (listings filter by it) and its steps, in any order. */
export interface NewWorkflow {
  name: string;
  steps: WorkflowStep[];
}

/** WorkflowInfo is a stored workflow with what its steps say of it. */
export interface WorkflowInfo {
  id: string;
  name: string;
  state: WorkflowState;
  /** steps is the number of steps it was enqueued with. */
  steps: number;
  /** stepStates counts its steps by state. */
  stepStates: Partial<Record<JobState, number>>;
  createdAt?: Date;
  /** startedAt: when its first step started; finishedAt: once it has ended, when its last step ended. */
  startedAt?: Date;
  finishedAt?: Date;
}

/** EnqueuedWorkflow is an enqueued workflow and its steps' jobs, in the order of its steps. */
export interface EnqueuedWorkflow {
  workflow: WorkflowInfo;
  jobs: Job[];
}

/** WorkflowDetail is a workflow with its steps, parents first: each its job and the steps it runs after. */
export interface WorkflowDetail {
  workflow: WorkflowInfo;
  steps: { job: Job; after: string[] }[];
}

/** WorkflowListOptions select a page of workflows; unset fields don't filter. */
export interface WorkflowListOptions {
  name?: string;
  states?: WorkflowState[];
  cursor?: string;
  /** limit is the page size (default 100, at most 10,000). */
  limit?: number;
  ascending?: boolean;
}

/** WorkflowPage is a page of workflows; nextCursor is "" on the last page. */
export interface WorkflowPage {
  workflows: WorkflowInfo[];
  nextCursor: string;
}

/** BatchJob is one job of a batch, or its callback: a kind, its args and options (not after). */
export interface BatchJob<A = unknown> extends EnqueueOptions {
  kind: string;
  args?: A;
}

/**
 * NewBatch is a batch with a callback: jobs, and a callback that runs once every one of them
 * has ended, completed, failed or canceled (policy run). At most the server's
 * inputLimits.maxWorkflowSteps - 1 jobs (9,999): the server refuses more.
 */
export interface NewBatch {
  name: string;
  jobs: BatchJob[];
  callback: BatchJob;
}

/** BatchCounts is how a batch's jobs ended, as its callback reads them (countBatch). */
export interface BatchCounts<R = unknown> {
  jobs: number;
  completed: number;
  failed: number;
  canceled: number;
  /** results are the jobs, in the batch's order, as parentResults reads them. */
  results: ParentResult<R>[];
}

/** The step names of a batch's workflow: its jobs job-0, job-1…, its callback "callback". */
export const batchCallbackStep = "callback";
export const batchJobStep = (i: number): string => `job-${i}`;

/**
 * batchWorkflow is the workflow that is batch b, as the Go API builds it: its jobs as steps
 * job-0, job-1…, its callback as step "callback" after all of them with policy run.
 */
export function batchWorkflow(b: NewBatch): NewWorkflow {
  if (b.callback.onParentFailure && b.callback.onParentFailure !== "run") {
    throw new TypeError(`callback.onParentFailure: ${b.callback.onParentFailure}: a batch's callback runs whatever its jobs did (run)`);
  }
  const steps: WorkflowStep[] = b.jobs.map((j, i) => ({ ...j, name: batchJobStep(i) }));
  steps.push({ ...b.callback, name: batchCallbackStep, after: steps.map((s) => s.name), onParentFailure: "run" });
  return { name: b.name, steps };
}

/** countBatch counts a batch callback's parents (await job.parentResults()) by how they ended. */
export function countBatch<R = unknown>(parents: ParentResult<R>[]): BatchCounts<R> {
  const out: BatchCounts<R> = { jobs: parents.length, completed: 0, failed: 0, canceled: 0, results: parents };
  for (const p of parents) {
    if (p.outcome === "completed") out.completed++;
    else if (p.outcome === "failed") out.failed++;
    else if (p.outcome === "canceled" || p.outcome === "skipped") out.canceled++;
  }
  return out;
}

/** stepsToProto is a workflow's steps as WorkflowService takes them. */
export function stepsToProto(steps: WorkflowStep[]): WorkflowStepProto[] {
  return steps.map((s) => create(WorkflowStepSchema, { name: s.name, job: jobSpec(s.kind, s.args, s) }));
}

/** workflowFromProto reads a stored workflow. */
export function workflowFromProto(w: WorkflowProto): WorkflowInfo {
  return {
    id: w.id, name: w.name, state: w.state as WorkflowState, steps: w.steps,
    stepStates: { ...w.stepStates } as Partial<Record<JobState, number>>,
    createdAt: fromTimestamp(w.createdAt), startedAt: fromTimestamp(w.startedAt), finishedAt: fromTimestamp(w.finishedAt),
  };
}
