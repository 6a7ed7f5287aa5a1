/**
 * Concurrent connections per client address on one listener, so one client cannot take every
 * slot of SMTP_MAX_CONNECTIONS (smtp-server's maxClients) from the others.
 */
export class ClientLimits {
  private readonly open = new Map<string, number>();

  constructor(private readonly perClient: number) {}

  /** Takes a slot for the address; false when it has none left. */
  acquire(address: string): boolean {
    const n = this.open.get(address) ?? 0;
    if (n >= this.perClient) return false;
    this.open.set(address, n + 1);
    return true;
  }

  release(address: string): void {
    const n = (this.open.get(address) ?? 1) - 1;
    if (n <= 0) this.open.delete(address);
    else this.open.set(address, n);
  }
}
