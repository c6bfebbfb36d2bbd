import { hostname } from "node:os";
import { create } from "@bufbuild/protobuf";
import { Code, createClient } from "@connectrpc/connect";
import type { Client as RpcClient } from "@connectrpc/connect";
import { loopPolicy, Tracker, workPolicy } from "./backoff.js";
import { createTransport } from "./connection.js";
import type { ConnectionOptions } from "./connection.js";
import { type HopperError, isRefusal, NoLimitsError, toHopperError } from "./errors.js";
import { execute } from "./execute.js";
import type { Executor } from "./execute.js";
import { ActivateRequestSchema, BatchKindSchema, ServerService, StreamJobsRequestSchema, WorkerService } from "./gen/hopper/v1/hopper_pb.js";
import type { ActivatedJob } from "./gen/hopper/v1/hopper_pb.js";
import { executeBatch } from "./batch.js";
import type { BatchHandlerOptions, BatchHandlers, HandlerOptions, Handlers } from "./handler.js";
import { ShutdownError } from "./handler-errors.js";
import { silent } from "./logger.js";
import type { Logger } from "./logger.js";
import { Notifier } from "./notifier.js";
import type { Observer } from "./observe.js";
import { LeaseKeeper } from "./lease-keeper.js";
import { KindSlots, pollLoop } from "./poll-intake.js";
import { Batcher } from "./reporter.js";
import type { Reporter } from "./reporter.js";
import { Attempt } from "./running-job.js";
import { aborted, sleep } from "./sleep.js";
import { streamLoop } from "./stream-intake.js";
import { clipText, type Limits, limitsOf } from "./text.js";
import { toDuration } from "./time.js";

/** WorkerOptions configures a Worker. url and handlers (or batchHandlers) are required; durations are milliseconds. */
export interface WorkerOptions extends ConnectionOptions {
  /** handlers maps each kind this worker takes one job at a time to its handler. */
  handlers?: Handlers;
  /**
   * batchHandlers maps each kind this worker takes in batches to its batch handler (see
   * BatchHandler, docs/workers.md "Batches"): the server claims a kind's queued jobs of one
   * group (with ungrouped, its jobs without a group too) together, up to maxJobs, lingering
   * up to maxWait to fill, and the worker runs each batch with one call. In stream mode a
   * batch costs one credit per job and takes one slot (of concurrency, and of its kind's
   * kindConcurrency); in poll mode a poll's batch is cut to the free slots, one per job, held
   * until the handler returns. A kind is in handlers or batchHandlers, not both. Needs a
   * server that batches (an older one sends the kind's jobs one by one: each runs as a batch
   * of one).
   */
  batchHandlers?: BatchHandlers;
  /** queue to work (default "default" when queues is empty too). */
  queue?: string;
  /**
   * queues to work as well as queue: merged, a queue named twice counting once, at most 64.
   * The server shares the worker's jobs between them by the weights stored for the queues
   * (default 1): a stream's credit (concurrency), a poll's jobs. Needs a server that knows of
   * several queues (an older one works the first only).
   */
  queues?: string[];
  /** concurrency is the most jobs run at once (default 10, 1–1000); in stream mode, the stream's credit with prefetch. */
  concurrency?: number;
  /**
   * prefetch is how many jobs a worker in stream mode holds beyond concurrency (default 0):
   * its stream's credit is concurrency + prefetch (at most 1000), and the jobs pushed while
   * every slot is busy wait in the worker, in the order they came, for a slot, their leases
   * renewed with the running jobs'. A freed slot takes the job that waited longest at once,
   * instead of after a round trip to the server, so short jobs run faster; but a waiting job
   * waits for a running one to end, however long, while another worker may have a free slot:
   * set it for short jobs. Jobs still waiting when the worker stops go back to their queue,
   * attempt unspent. Poll mode does not take it.
   */
  prefetch?: number;
  /**
   * kindConcurrency bounds the jobs of a kind that run at once (kind → at most that many),
   * while the other slots run other kinds. A saturated kind is left out of the worker's
   * claims, so its jobs stay queued for other workers. In poll mode a poll leaves out the
   * saturated kinds and asks for no more jobs than the capped kinds it names have room for;
   * in stream mode the stream asks the server for the caps (StreamJobsRequest.kindConcurrency,
   * a bound above the credit taken as the credit), which pushes no more jobs of a kind than
   * its bound until the worker reports on them; at most 64 kinds. The worker counts its
   * handlers per kind too: a job pushed while its kind has no room (jobs of an earlier stream
   * still running, or a server older than that field, which ignores it) waits, as prefetched
   * jobs do, for a job of its kind to end. Each kind named needs a handler; each bound is a
   * whole number of at least 1.
   */
  kindConcurrency?: Record<string, number>;
  /**
   * fetchParentResults asks the server for each job's parents' results with the job
   * (ActivateRequest.fetch_parent_results), so that a handler's job.parentResults() reads
   * them without a call of its own; the server leaves out those larger than its
   * max_args_bytes, which parentResults then reads with a call. It costs the server a read per
   * job claimed: set it for workers of fan-in steps. Default false: parentResults calls.
   */
  fetchParentResults?: boolean;
  /** name identifies this worker on leases and attempts (default host-pid). */
  name?: string;
  /** mode: "stream" (default) has the server push jobs; "poll" asks for them with long polls. */
  mode?: "stream" | "poll";
  /** leaseDuration is each job's lease (default 30 s), renewed every third of it. */
  leaseDuration?: number;
  /** pollWait is how long one long poll waits for a job (default 30 s, at most 5 min). */
  pollWait?: number;
  /** logger hears of outages, recoveries and unreported outcomes (default: nothing is logged). */
  logger?: Logger;
  /**
   * observer hears each attempt this worker runs start and end (with its outcome and run
   * time): the events a Go worker's observers hear, to count as metrics. See WorkerEvent.
   */
  observer?: Observer;
}

/** BatchHandlerOptions.maxJobs when it is 0 or unset (the Go worker's BatchOpts default). */
const defaultBatchMaxJobs = 100;

/** The most queues one worker works (the server's limit). */
const maxQueues = 64;

/** How long stop waits for handlers after aborting them at its deadline. */
const stopGrace = 500;

/** How long a stopping worker waits for another push before it closes its stream, and at most. */
const settleQuiet = 100;
const settleMax = 1000;

/** How long releasing a job this worker will not run may take. */
const releaseTimeout = 30_000;

/**
 * Worker runs jobs from `hopper serve` with the handlers of its kinds: start it, then stop it.
 *
 * Handlers run concurrently, at most concurrency at once. What a handler returns completes
 * its job with that result; what it throws fails the attempt (see Handler). The worker renews
 * its jobs' leases itself, in both modes. A stream that drops, or a server that restarts,
 * stops no handler: the stream is reconnected with backoff, leases are renewed and outcomes
 * reported once a server answers again.
 */
export class Worker {
  private readonly api: RpcClient<typeof WorkerService>;
  private readonly info: RpcClient<typeof ServerService>;
  /** limits are the server's input limits, once it has said them (learnLimits): no job is taken before. */
  private limits: Limits | undefined;
  private readonly url: string;
  private readonly reporter: Reporter;
  private readonly executor: Executor;
  private readonly handlers = new Map<string, HandlerOptions>();
  private readonly batchHandlers = new Map<string, BatchHandlerOptions>();
  private readonly log: Logger;
  private readonly mode: "stream" | "poll";
  private readonly concurrency: number;
  private readonly prefetch: number;
  private readonly lease: number;
  private readonly pollWait: number;
  private readonly fetchParentResults: boolean;
  private readonly queues: string[];
  private readonly kindConcurrency: Record<string, number>;
  /** name is this worker's name on leases and attempts. */
  readonly name: string;

  private readonly attempts = new Map<string, Attempt>();
  private declined: ActivatedJob[] = []; // pushed to a stopping worker: released once its stream is closed
  private busy = 0; // stream mode: slots taken by handlers, at most concurrency
  private waiting: Attempt[][] = []; // stream mode: jobs (a job, or a batch's) pushed while every slot, or its kind's room, was taken, in push order
  // stream mode: the running handlers of the capped kinds, a second guard behind the server's
  // caps (for jobs of a stream that closed still running as another opens, and for a server
  // that ignores the caps)
  private readonly kinds: KindSlots;
  private readonly releasing = new Set<Promise<void>>(); // releases of waiting jobs whose leases were lost
  private readonly declines = new Notifier();
  private readonly intake = new AbortController(); // the stream or the polls
  private readonly leases: LeaseKeeper; // renews the running jobs' leases, in both modes
  private readonly keeping = new AbortController(); // the lease renewals: end when stop has drained
  private loops: Promise<void>[] = [];
  private state: "new" | "started" | "stopping" = "new";
  private stopped: Promise<void> | undefined;
  private refusal: HopperError | undefined;

  /** The constructor checks options; it throws a TypeError naming a bad one. */
  constructor(options: WorkerOptions) {
    this.mode = options.mode ?? "stream";
    this.concurrency = options.concurrency ?? 10;
    this.prefetch = options.prefetch ?? 0;
    this.lease = options.leaseDuration ?? 30_000;
    this.pollWait = options.pollWait ?? 30_000;
    this.fetchParentResults = options.fetchParentResults ?? false;
    for (const [i, q] of (options.queues ?? []).entries()) check(typeof q === "string" && q !== "", `queues[${i}] is empty`);
    this.queues = [...new Set([...(options.queue ? [options.queue] : []), ...(options.queues ?? [])])];
    if (this.queues.length === 0) this.queues.push("default");
    check(this.queues.length <= maxQueues, `queues: ${this.queues.length} queues, more than ${maxQueues}`);
    this.name = options.name ?? `${hostname()}-${process.pid}`;
    this.log = options.logger ?? silent;
    for (const [kind, h] of Object.entries(options.handlers ?? {})) {
      this.handlers.set(kind, typeof h === "function" ? { handle: h } : h);
    }
    for (const [kind, h] of Object.entries(options.batchHandlers ?? {})) {
      this.batchHandlers.set(kind, typeof h === "function" ? { handle: h } : h);
    }
    check(this.handlers.size + this.batchHandlers.size > 0, "handlers has no handler");
    for (const [kind, h] of this.handlers) checkHandler(`handlers[${JSON.stringify(kind)}]`, h);
    for (const [kind, h] of this.batchHandlers) {
      check(!this.handlers.has(kind), `batchHandlers[${JSON.stringify(kind)}]: the kind has a handler in handlers too`);
      checkBatchHandler(`batchHandlers[${JSON.stringify(kind)}]`, h);
    }
    check(this.mode === "stream" || this.mode === "poll", `mode ${JSON.stringify(this.mode)} is neither "stream" nor "poll"`);
    check(Number.isInteger(this.concurrency) && this.concurrency >= 1 && this.concurrency <= 1000, `concurrency ${this.concurrency} is outside 1–1000`);
    check(Number.isInteger(this.prefetch) && this.prefetch >= 0, `prefetch ${this.prefetch} is not a whole number of jobs`);
    check(this.prefetch === 0 || this.mode === "stream", "prefetch is for stream mode; a poll asks only for free slots");
    check(this.concurrency + this.prefetch <= 1000, `concurrency ${this.concurrency} and prefetch ${this.prefetch}: together at most 1000, a stream's credit`);
    check(this.lease >= 1000, `leaseDuration ${this.lease} is under 1000 ms`);
    check(this.pollWait > 0 && this.pollWait <= 300_000, `pollWait ${this.pollWait} is outside 1–300000 ms`);
    this.kindConcurrency = { ...options.kindConcurrency };
    for (const [kind, n] of Object.entries(this.kindConcurrency)) {
      check(Number.isInteger(n) && n >= 1, `kindConcurrency[${JSON.stringify(kind)}] ${n} is not a whole number of at least 1`);
      check(this.handlers.has(kind) || this.batchHandlers.has(kind), `kindConcurrency[${JSON.stringify(kind)}] names a kind with no handler`);
    }
    check(this.mode === "poll" || Object.keys(this.kindConcurrency).length <= 64,
      `kindConcurrency caps ${Object.keys(this.kindConcurrency).length} kinds; a stream caps at most 64`);
    this.kinds = new KindSlots(this.kindConcurrency);
    this.url = options.url;
    const transport = createTransport(options);
    this.api = createClient(WorkerService, transport);
    this.info = createClient(ServerService, transport);
    this.reporter = new Batcher(this.api);
    this.leases = new LeaseKeeper({
      api: this.api, lease: this.lease, backoff: new Tracker("extend leases", loopPolicy, this.log, { worker: this.name }),
      running: () => [...this.attempts.values(), ...this.waiting.flat()], // a waiting job's lease is the worker's too
      refused: (err) => this.refused(err),
    });
    this.executor = {
      api: this.api, reporter: this.reporter, mode: this.mode, log: this.log,
      handler: (kind) => this.handlers.get(kind), batchHandler: (kind) => this.batchHandlers.get(kind), decline: (a) => this.decline(a.job), leaseSet: () => this.leases.shortened(),
      refused: (err) => this.refused(err),
      observer: options.observer,
    };
  }

  /**
   * error is why the worker stopped taking jobs by itself: the server refused its API key
   * (code Unauthenticated or PermissionDenied: no key where one is required, a bad or revoked
   * key, a key without the work scope) on any call, a poll, its stream, an outcome's report or
   * a lease renewal; or it serves no input limits (a NoLimitsError: the worker takes its limits
   * only from its server, and no job before it has them); or it refused the worker's own
   * requests for jobs as INVALID_ARGUMENT (code InvalidArgument, naming the field: a
   * batchHandlers maxJobs it does not take is batch_kinds[i].max_jobs). Asking again cannot help, so the
   * worker does not (it renews no lease either): start a new one with a valid key, against an
   * upgraded server. Undefined while it did not stop by itself.
   */
  get error(): HopperError | undefined {
    return this.refusal;
  }

  /** refused stops the worker taking jobs, for good, and says why once. */
  private refused(err: HopperError): void {
    if (this.refusal) return;
    this.refusal = err;
    if (err instanceof NoLimitsError) this.log.error(`the worker takes no jobs: ${err.rawMessage}`, { worker: this.name });
    else if (err.code === Code.InvalidArgument) {
      this.log.error("the server refused the worker's requests for jobs: it takes no jobs until it is started again with options the server takes", {
        worker: this.name, err: err.message,
      });
    } else {
      this.log.error("the server refused the worker's API key: it takes no more jobs until it is started again with a valid key", {
        worker: this.name, err: err.message,
      });
    }
    this.intake.abort();
    this.keeping.abort();
  }

  /** running is the number of jobs this worker runs now. */
  get running(): number {
    return this.attempts.size;
  }

  /** start begins taking jobs. It throws when the worker was started before. */
  start(): void {
    if (this.state !== "new") throw new Error("hopper: worker already started");
    this.state = "started";
    const kinds = [...this.handlers.keys(), ...this.batchHandlers.keys()].sort();
    // One queue alone, as a server that knows of only one expects; several: the first and all.
    const queues = this.queues.length > 1 ? this.queues : [];
    const batchKinds = [...this.batchHandlers].sort(([a], [b]) => (a < b ? -1 : 1)).map(([kind, h]) => create(BatchKindSchema, {
      kind, maxJobs: h.maxJobs || defaultBatchMaxJobs, maxWait: h.maxWait ? toDuration(h.maxWait) : undefined, ungrouped: h.ungrouped ?? false,
    }));
    const common = { worker: this.name, queue: this.queues[0], queues, kinds, batchKinds, leaseTimeout: toDuration(this.lease),
      fetchParentResults: this.fetchParentResults };
    this.loops.push(this.leases.run(this.keeping.signal));
    // No job is taken before the server has said its limits.
    let limitsKnown: (known: boolean) => void = () => {};
    const known = new Promise<boolean>((resolve) => { limitsKnown = resolve; });
    this.loops.push(this.learnLimits(this.intake.signal, limitsKnown));
    const after = (loop: () => Promise<void>) => known.then((ok) => (ok && !this.intake.signal.aborted ? loop() : undefined));
    if (this.mode === "stream") {
      const credit = this.concurrency + this.prefetch;
      // A bound above the credit bounds nothing: the server takes none above it.
      const kindConcurrency = Object.fromEntries(Object.entries(this.kindConcurrency).map(([kind, n]) => [kind, Math.min(n, credit)]));
      const request = create(StreamJobsRequestSchema, { ...common, credit, kindConcurrency });
      const backoff = new Tracker("job stream", workPolicy, this.log, { worker: this.name });
      this.loops.push(after(() => streamLoop({
        api: this.api, request, backoff, launch: (jobs) => this.admit(jobs), decline: (j) => this.decline(j),
        refused: (err) => this.refused(err),
      }, this.intake.signal)));
      return;
    }
    const request = create(ActivateRequestSchema, { ...common, requestTimeout: toDuration(this.pollWait) });
    this.loops.push(after(() => pollLoop({
      api: this.api, request, backoff: new Tracker("activate jobs", workPolicy, this.log, { worker: this.name }),
      concurrency: this.concurrency, kindConcurrency: this.kindConcurrency, launch: (jobs, handled) => this.launch(jobs, handled), release: (j, why) => this.release(j, why),
      refused: (err) => this.refused(err),
    }, this.intake.signal)));
  }

  /**
   * learnLimits asks the server for its input limits (ServerService.Info), which the worker
   * makes its reports fit, again with backoff while the server cannot be reached. A server
   * that serves none (or a limit the worker needs), or answers the call with another error (a
   * server that predates it, something else at the URL), stops the worker with a
   * NoLimitsError; one that refuses the key stops it as any refused call does. known is called
   * once: true with the limits known, false when the worker will take no job.
   */
  private async learnLimits(signal: AbortSignal, known: (ok: boolean) => void): Promise<void> {
    const backoff = new Tracker("read the server's input limits", workPolicy, this.log, { worker: this.name });
    try {
      while (!signal.aborted) {
        let res;
        try {
          res = await this.info.info({}, { signal });
        } catch (e) {
          const err = toHopperError(e);
          if (signal.aborted) return;
          if (isRefusal(err)) return this.refused(err);
          if (err.code !== Code.Unavailable) return this.refused(new NoLimitsError(this.url, undefined, { cause: err }));
          await sleep(backoff.fail(err.message), signal);
          continue;
        }
        try {
          this.limits = limitsOf(res.server?.inputLimits, this.url);
        } catch (e) {
          if (e instanceof NoLimitsError) return this.refused(e);
          throw e;
        }
        backoff.succeed();
        known(true);
        return;
      }
    } finally {
      known(false);
    }
  }

  /** served are the server's limits: only jobs taken once they are known are run. */
  private served(): Limits {
    if (!this.limits) throw new Error("hopper: a job taken before the server's limits were known");
    return this.limits;
  }

  /**
   * stop shuts down gracefully: it starts no new job and lets running jobs finish until
   * signal aborts (never, without one; `AbortSignal.timeout(ms)` gives a grace period, an
   * aborted signal stops hard), then aborts their signals with a ShutdownError and waits a
   * moment (500 ms) for them. Jobs it will not run go back to their queue at once. A handler
   * that ignores its signal is left running (stop resolves without it) and its job is not
   * released: its lease, no longer renewed, expires and the job returns to its queue, counted
   * as a lost worker (a rescue). If it returns later with success, that is still reported
   * (and refused if the job is no longer its own). Calling stop again returns the same
   * promise; stopping a worker never started does nothing.
   */
  stop(signal?: AbortSignal): Promise<void> {
    if (this.state === "new") return Promise.resolve();
    this.stopped ??= this.shutdown(signal);
    return this.stopped;
  }

  private async shutdown(signal: AbortSignal | undefined): Promise<void> {
    this.state = "stopping";
    for (const a of this.waiting.splice(0).flat()) this.decline(a.job); // never started: released with the stream closed
    if (this.mode === "poll") this.intake.abort(); // no more polls; a stream stays open until its jobs are done
    const drained = Promise.all([...this.attempts.values()].map((a) => a.done)).then(() => true);
    if (!(await Promise.race([drained, aborted(signal).then(() => false)]))) {
      this.abortAll();
      if (!(await Promise.race([drained, sleep(stopGrace).then(() => false)]))) {
        this.log.warn("handlers did not return after shutdown; leaving them", { worker: this.name, running: this.attempts.size });
      }
    }
    if (this.mode === "stream") await this.settle();
    this.intake.abort();
    this.keeping.abort();
    await Promise.all(this.loops);
    await Promise.all(this.releasing);
    await this.releaseDeclined();
    this.abortAll();
  }

  private abortAll(): void {
    for (const a of this.attempts.values()) a.abort(new ShutdownError());
  }

  /**
   * launch runs jobs, a job or a batch's jobs, and calls handled once its handler has returned
   * (its outcome may still be on its way); false when the worker is stopping.
   */
  private launch(jobs: ActivatedJob[], handled: () => void): boolean {
    if (this.state !== "started") return false;
    this.run(this.attemptsOf(jobs, handled));
    return true;
  }

  /**
   * admit takes a job pushed on the stream, or a batch's jobs: it starts at once on a free
   * slot (a batch takes one) if its kind has room (kindConcurrency), else waits for both
   * (prefetch: the server pushes no more than the stream's credit); false when the worker is
   * stopping.
   */
  private admit(jobs: ActivatedJob[]): boolean {
    if (this.state !== "started") return false;
    const kind = jobs[0]!.kind;
    const as = this.attemptsOf(jobs, () => this.slotFreed(kind));
    if (this.busy < this.concurrency && this.kinds.room(kind)) {
      this.busy++;
      this.kinds.take(kind);
      this.run(as);
    } else {
      this.waiting.push(as);
    }
    return true;
  }

  /** attemptsOf makes the attempts of jobs (a job, or a batch's), the first calling handled. */
  private attemptsOf(jobs: ActivatedJob[], handled: () => void): Attempt[] {
    return jobs.map((j, i) => new Attempt(j, this.lease, i === 0 ? handled : undefined, this.served()));
  }

  /**
   * slotFreed hands the slot of a job of kind whose handler returned, and its kind's room, to
   * the job that has waited longest whose kind has room. A job whose lease was lost while it
   * waited (a renewal refused it: canceled, say) is not run; it is released, which the server
   * refuses as the lease is gone, and that frees its credit.
   */
  private slotFreed(kind: string): void {
    this.kinds.give(kind);
    for (let i = 0; i < this.waiting.length && this.state === "started";) {
      const as = this.waiting[i]!;
      const alive = as.some((a) => a.cause === undefined);
      const kind = as[0]!.job.kind;
      if (alive && !this.kinds.room(kind)) {
        i++; // its kind has no room: it waits for a job of its kind to end
        continue;
      }
      this.waiting.splice(i, 1);
      if (alive) {
        this.kinds.take(kind);
        this.run(as);
        return;
      }
      for (const a of as) {
        const p = this.release(a.job, "lease lost while waiting for a slot");
        this.releasing.add(p);
        void p.finally(() => this.releasing.delete(p));
      }
    }
    this.busy--;
  }

  /**
   * run starts the handler of as: a job's, or a batch's (the jobs of a batch kind, even one
   * the server sent alone, run in a batch); each attempt's handled is called once it has returned.
   */
  private run(as: Attempt[]): void {
    const job = as[0]!.job;
    for (const a of as) this.attempts.set(a.key, a);
    const running = this.batchHandlers.has(job.kind) ? executeBatch(this.executor, as) : execute(this.executor, as[0]!);
    const done = running
      .catch((err: unknown) => this.log.error("run job", { jobId: job.id, err: String(err) }))
      .finally(() => {
        for (const a of as) {
          this.attempts.delete(a.key);
          a.handled();
        }
      });
    for (const a of as) a.done = done;
  }

  /** release hands a job this worker will not run back to its queue, with one try. */
  private async release(job: ActivatedJob, why: string): Promise<void> {
    try {
      await this.reporter.report({ type: "release", job, reason: clipText(why, this.served().reasonBytes) }, releaseTimeout);
    } catch (e) {
      const err = toHopperError(e);
      if (err.code !== Code.FailedPrecondition) this.log.warn("release job", { jobId: job.id, err: err.message });
    }
  }

  // A worker in stream mode stops without stranding jobs. A job pushed to it stays its own
  // after the stream closes (until its lease expires, then a rescue counted against the job's
  // maxRescues). So a stopping worker reports on its running jobs (or releases them) while its
  // stream is open, keeps (without starting) the jobs pushed to it meanwhile, waits for the
  // pushes in flight, closes the stream, and only then releases the jobs it kept: released
  // earlier, they would free credit and the server would push them, or others, straight back.

  private decline(job: ActivatedJob): void {
    this.declined.push(job);
    this.declines.notify();
  }

  /**
   * settle waits until the server can push no more (declined and running jobs fill the
   * credit) or nothing was pushed for settleQuiet: a job in flight when the stream closes
   * would never be received, and would count as lost.
   */
  private async settle(): Promise<void> {
    const deadline = Date.now() + settleMax;
    while (this.declined.length + this.attempts.size < this.concurrency + this.prefetch) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      const quiet = new AbortController();
      const pushed = await Promise.race([this.declines.wait().then(() => true), sleep(Math.min(settleQuiet, left), quiet.signal).then(() => false)]);
      quiet.abort();
      if (!pushed) return;
    }
  }

  /** releaseDeclined releases the declined jobs, a few at a time. */
  private async releaseDeclined(): Promise<void> {
    const jobs = this.declined;
    this.declined = [];
    for (let i = 0; i < jobs.length; i += 16) {
      await Promise.all(jobs.slice(i, i + 16).map((j) => this.release(j, "worker stopping")));
    }
  }
}

/**
 * checkHandler checks a kind's options as the server would: a kind's retryPolicy goes with
 * each failure, and one the server refuses would fail every attempt with its reason instead.
 */
function checkHandler(name: string, h: HandlerOptions | BatchHandlerOptions): void {
  check(typeof h.handle === "function", `${name} is not a function`);
  check(h.timeout === undefined || (Number.isFinite(h.timeout) && h.timeout >= 0), `${name}.timeout ${h.timeout} is not a duration in ms`);
  const p = h.retryPolicy;
  if (!p) return;
  check((p.base ?? 0) >= 0 && (p.cap ?? 0) >= 0, `${name}.retryPolicy: base and cap must not be negative`);
  check(!p.multiplier || (p.multiplier >= 1 && Number.isFinite(p.multiplier)), `${name}.retryPolicy: multiplier ${p.multiplier} must be at least 1`);
  check(!((p.jitter ?? 0) > 1) && !Number.isNaN(p.jitter), `${name}.retryPolicy: jitter ${p.jitter} must be at most 1 (negative disables jitter)`);
}

/**
 * checkBatchHandler checks a batch kind's options as checkHandler does, and its batching:
 * maxJobs a whole number (the server says how many it takes, refusing the worker's requests
 * with INVALID_ARGUMENT naming batch_kinds[i].max_jobs otherwise), maxWait a duration.
 */
function checkBatchHandler(name: string, h: BatchHandlerOptions): void {
  checkHandler(name, h);
  check(h.maxJobs === undefined || (Number.isInteger(h.maxJobs) && h.maxJobs >= 0), `${name}.maxJobs ${h.maxJobs} is not a whole number of jobs`);
  check(h.maxWait === undefined || (Number.isFinite(h.maxWait) && h.maxWait >= 0), `${name}.maxWait ${h.maxWait} is not a duration in ms`);
}

function check(ok: boolean, what: string): asserts ok {
  if (!ok) throw new TypeError(`hopper: WorkerOptions: ${what}`);
}
