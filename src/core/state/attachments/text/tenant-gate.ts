export interface Tenant {
  domainId: string;
  mailboxId: string;
}

/**
 * At most `width` tasks run at once; the waiting ones take turns by domain, then by mailbox within
 * a domain (round robin), and in arrival order within one mailbox. A tenant with a hundred files
 * queued therefore delays another tenant's file by at most the tasks already running, not by its
 * whole queue (docs/attachment-extraction.md, "Fairness").
 */
export class TenantGate {
  private running = 0;
  /** domain → mailbox → waiters; the Maps' insertion order is the order of turns. */
  private readonly waiting = new Map<string, Map<string, (() => void)[]>>();

  constructor(readonly width: number) {
    if (!Number.isInteger(width) || width < 1) throw new Error('TenantGate width must be a positive integer');
  }

  async run<T>(tenant: Tenant, task: () => Promise<T>): Promise<T> {
    if (this.running < this.width) this.running++;
    else await new Promise<void>((resolve) => this.enqueue(tenant, resolve));
    try {
      return await task();
    } finally {
      // The slot passes straight to the next turn, so a newcomer cannot overtake the queue.
      const next = this.nextTurn();
      if (next) next();
      else this.running--;
    }
  }

  private enqueue(tenant: Tenant, resolve: () => void): void {
    let mailboxes = this.waiting.get(tenant.domainId);
    if (!mailboxes) this.waiting.set(tenant.domainId, (mailboxes = new Map()));
    let queue = mailboxes.get(tenant.mailboxId);
    if (!queue) mailboxes.set(tenant.mailboxId, (queue = []));
    queue.push(resolve);
  }

  private nextTurn(): (() => void) | undefined {
    const domain = this.waiting.entries().next();
    if (domain.done) return undefined;
    const [domainId, mailboxes] = domain.value;
    const [mailboxId, queue] = mailboxes.entries().next().value!;
    const next = queue.shift();
    // Whoever just had a turn goes to the back: its mailbox within the domain, the domain overall.
    mailboxes.delete(mailboxId);
    if (queue.length > 0) mailboxes.set(mailboxId, queue);
    this.waiting.delete(domainId);
    if (mailboxes.size > 0) this.waiting.set(domainId, mailboxes);
    return next;
  }

  /** Tasks running and waiting (for tests and metrics). */
  get load(): { running: number; waiting: number } {
    let waiting = 0;
    for (const mailboxes of this.waiting.values()) for (const queue of mailboxes.values()) waiting += queue.length;
    return { running: this.running, waiting };
  }
}
