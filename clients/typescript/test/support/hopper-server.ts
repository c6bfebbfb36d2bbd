// A real `hopper serve` for tests and the benchmark: on a fresh SQLite file and a free port,
// with or without an API key, killed (and restarted) at will.

import { execFileSync, spawn } from "node:child_process";
import type { ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * hopperBinary is $HOPPER_BIN, or the hopper command built from this repository into dir
 * (`go build -o <dir>/hopper ./cmd/hopper`).
 */
export function hopperBinary(dir: string): string {
  if (process.env.HOPPER_BIN) return process.env.HOPPER_BIN;
  const out = join(dir, "hopper");
  execFileSync("go", ["build", "-o", out, "./cmd/hopper"], { cwd: findRoot(), stdio: "inherit" });
  return out;
}

/** findRoot is the repository's root: the nearest directory above this file with a go.mod. */
function findRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  for (let dir = here; dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, "go.mod"))) return dir;
  }
  throw new Error(`no go.mod above ${here}: set HOPPER_BIN`);
}

/** freePort asks the kernel for a port nobody listens on. */
export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once("error", fail);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => ok(port));
    });
  });
}

/** ServerOptions configure a HopperServer. */
export interface ServerOptions {
  /** apiKey creates a key with every scope before the server starts, so every call needs it. */
  apiKey?: boolean;
  /** args are more flags for `hopper serve`. */
  args?: string[];
  /** log gets the server's output (default: kept, shown by output()). */
  log?: (chunk: string) => void;
}

/** HopperServer is one `hopper serve` process, on its own database and port. */
export class HopperServer {
  readonly url: string;
  readonly apiKey: string | undefined;
  private proc: ChildProcess | undefined;
  private out = "";

  private constructor(
    private readonly bin: string,
    private readonly dir: string,
    private readonly port: number,
    apiKey: string | undefined,
    private readonly opts: ServerOptions,
  ) {
    this.url = `http://127.0.0.1:${port}`;
    this.apiKey = apiKey;
  }

  /** start runs `hopper serve` with bin on a fresh database and waits until it is ready. */
  static async start(bin: string, opts: ServerOptions = {}): Promise<HopperServer> {
    const dir = mkdtempSync(join(tmpdir(), "hopper-sdk-"));
    const db = join(dir, "hopper.db");
    let key: string | undefined;
    if (opts.apiKey) {
      execFileSync(bin, ["migrate", "--database", db], { stdio: "ignore" });
      const out = execFileSync(bin, ["keys", "create", "--database", db, "--name", "sdk-test", "--scope", "enqueue,work,read,admin", "--json"], { stdio: ["ignore", "pipe", "ignore"] });
      key = (JSON.parse(out.toString()) as { key: string }).key;
    }
    const s = new HopperServer(bin, dir, await freePort(), key, opts);
    await s.restart();
    return s;
  }

  /** restart starts the server again (same database, same port) and waits until it is ready. */
  async restart(): Promise<void> {
    const args = ["serve", "--database", join(this.dir, "hopper.db"), "--addr", `127.0.0.1:${this.port}`, "--no-echo", ...(this.opts.args ?? [])];
    const proc = spawn(this.bin, args, { stdio: ["ignore", "pipe", "pipe"] });
    this.proc = proc;
    const keep = (b: Buffer) => {
      const s = b.toString();
      if (this.opts.log) this.opts.log(s);
      else this.out += s;
    };
    proc.stdout!.on("data", keep);
    proc.stderr!.on("data", keep);
    await this.ready(proc);
  }

  private async ready(proc: ChildProcess): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      if (proc.exitCode !== null) throw new Error(`hopper serve exited with ${proc.exitCode}:\n${this.out}`);
      try {
        if ((await fetch(`${this.url}/readyz`)).ok) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`hopper serve not ready after 20 s:\n${this.out}`);
  }

  /** kill ends the server at once (SIGKILL: a crash) and waits for it to exit. */
  async kill(): Promise<void> {
    await this.signal("SIGKILL");
  }

  /** stop ends the server gracefully (SIGTERM) and waits for it to exit. */
  async stop(): Promise<void> {
    await this.signal("SIGTERM");
  }

  private async signal(sig: NodeJS.Signals): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once("exit", r));
    proc.kill(sig);
    await exited;
  }

  /** close kills the server and removes its database. */
  async close(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** output is what the server printed (unless opts.log took it). */
  output(): string {
    return this.out;
  }
}
