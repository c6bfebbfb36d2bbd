// Worker metrics: what a worker's observer hears, the same events a Go worker's observers
// (remote.Config.Observers, hopper.JobEvent) hear.

import type { Decision } from "./outcome.js";

/**
 * WorkerEvent is one thing that happened to an attempt this worker runs: "started" when its
 * handler starts (the job was activated), "ended" when the handler returned, with how
 * (outcome) and how long it ran (runMs).
 */
export interface WorkerEvent {
  type: "started" | "ended";
  jobId: string;
  kind: string;
  queue: string;
  attempt: number;
  /**
   * outcome, on "ended": "ok", "error", "panic", "timeout", "snoozed", "suspended" or
   * "canceled" (given back: the worker stops, or the job's lease was lost), as Hopper names
   * attempt outcomes everywhere.
   */
  outcome?: string;
  /** runMs, on "ended": how long the handler ran, in milliseconds. */
  runMs?: number;
}

/**
 * Observer hears the attempts a worker runs (WorkerOptions.observer), to count them as
 * metrics. It is called synchronously: it must be quick and must not throw (what it throws is
 * logged and otherwise ignored).
 */
export type Observer = (event: WorkerEvent) => void;

/** outcomeOf names how an attempt ended, from what the worker decided to do with it. */
export function outcomeOf(d: Decision): string {
  if (d.action !== "report") return "canceled"; // declined (stopping) or no longer ours
  const o = d.outcome;
  switch (o.type) {
    case "complete":
      return "ok";
    case "fail":
      return o.outcome;
    case "snooze":
      return "snoozed";
    case "suspend":
      return "suspended";
    case "release":
      return "canceled";
  }
}
