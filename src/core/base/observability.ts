/**
 * What the core reports about itself, as a port: src/telemetry/core-telemetry.ts implements it with
 * OpenTelemetry and Prometheus, and the composition root (src/runtime) installs that implementation
 * once at start. The core never imports a telemetry library (ARCHITECTURE.md, import rules). Until
 * something is installed (a unit test building a core piece alone) reports go nowhere.
 */
export interface Observability {
  /** W3C traceparent of the active span, stored with an outbox job so delivery continues the trace. */
  currentTraceparent(): string | null;
  /**
   * Runs one queued job in a consumer span that continues `traceparent` (the sender's request),
   * marked as failed when `fn` throws.
   */
  inConsumerSpan<T>(
    name: string,
    traceparent: string | null,
    attributes: Record<string, string | number>,
    fn: () => Promise<T>,
  ): Promise<T>;
  /**
   * `count` per-recipient delivery attempts by route (local, relay, mx) and result; route `inbound`
   * is port 25's queue (one per mailbox copy stored, one per message deferred or set aside).
   */
  deliveryOutcome(route: string, result: string, count?: number): void;
}

const nothing: Observability = {
  currentTraceparent: () => null,
  inConsumerSpan: (_name, _traceparent, _attributes, fn) => fn(),
  deliveryOutcome: () => undefined,
};

let installed: Observability = nothing;

/** The implementation in force (the runtime's, or one that reports nothing). */
export const observability = (): Observability => installed;

/** Called by the composition root; idempotent. */
export function installObservability(impl: Observability): void {
  installed = impl;
}
