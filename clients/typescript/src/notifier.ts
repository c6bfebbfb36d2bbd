/** Notifier wakes whoever waits for something to happen (a slot freed, a job declined). */
export class Notifier {
  private waiters: (() => void)[] = [];

  /** wait resolves at the next notify. */
  wait(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** notify wakes every waiter. */
  notify(): void {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) w();
  }
}
