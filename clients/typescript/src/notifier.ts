/** Notifier wakes whoever waits for something to happen (a slot freed, a job declined, a lease shortened). */
export class Notifier {
  private waiters = new Set<() => void>();

  /** wait resolves at the next notify, or when signal aborts. */
  wait(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        signal?.removeEventListener("abort", done);
        this.waiters.delete(done);
        resolve();
      };
      this.waiters.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  /** notify wakes every waiter. */
  notify(): void {
    const ws = this.waiters;
    this.waiters = new Set();
    for (const w of ws) w();
  }
}
