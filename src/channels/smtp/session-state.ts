import { context, trace, SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import type { SMTPServerSession } from 'smtp-server';
import { tracer } from '../../telemetry/tracing.js';
import type { InboundRecipient } from '../../core/flows/inbound/inbound-envelope.js';
import { smtpFlowWaits, smtpMessages, smtpSessions } from '../../telemetry/metric-registry.js';
import type { FlowOutcome } from '../../core/flows/intake/intake-flow.js';

export type Listener = 'submission' | 'mx';

/**
 * Per-connection state the hooks share: the session span (one per SMTP connection), the span of
 * the mail transaction in progress (MAIL FROM to the DATA reply), and what the session achieved,
 * for the `mailbox_smtp_sessions_total` outcome.
 */
export class SessionState {
  readonly span: Span;
  private tx: Span | null = null;
  accepted = 0;
  refused = false;
  holdsSlot = false;
  /** Ends the session at SMTP_SESSION_TIMEOUT; cleared on close. */
  deadline: NodeJS.Timeout | null = null;
  /** MX: accepted recipients of the transaction in progress and the mailbox each reaches. */
  recipients = new Map<string, InboundRecipient>();

  constructor(
    readonly listener: Listener,
    session: SMTPServerSession,
  ) {
    this.span = tracer().startSpan(`smtp.${listener}.session`, {
      kind: SpanKind.SERVER,
      attributes: { 'smtp.listener': listener, 'client.address': session.remoteAddress, 'smtp.session_id': session.id },
    });
  }

  /** Opens the transaction span (at MAIL FROM); a previous unfinished one ends as abandoned. */
  beginTransaction(mailFrom: string): void {
    this.endTransaction('abandoned');
    this.recipients.clear();
    this.tx = tracer().startSpan(
      `smtp.${this.listener}.transaction`,
      { attributes: { 'smtp.mail_from': mailFrom } },
      trace.setSpan(context.active(), this.span),
    );
  }

  /**
   * Flow control before MAIL FROM is answered (intake-flow.ts): resolves when the core's admit
   * does; a held MAIL FROM is counted and marked on its transaction.
   */
  async admitted(admit: Promise<FlowOutcome>): Promise<void> {
    const outcome = await admit;
    if (outcome === 'open') return;
    smtpFlowWaits.inc({ listener: this.listener, outcome });
    this.tx?.setAttribute('smtp.flow', outcome);
  }

  /** Runs `fn` inside the transaction span, so the core (and the outbox job's trace) continue it. */
  inTransaction<T>(fn: () => Promise<T>): Promise<T> {
    const span = this.tx ?? this.span;
    return context.with(trace.setSpan(context.active(), span), fn);
  }

  /** Ends the transaction with the DATA reply code and counts the message outcome. */
  finishMessage(replyCode: number): void {
    smtpMessages.inc({
      listener: this.listener,
      outcome: replyCode === 250 ? 'accepted' : replyCode >= 500 ? 'rejected' : 'deferred',
    });
    if (replyCode === 250) this.accepted++;
    this.endTransaction(String(replyCode), replyCode !== 250);
  }

  close(): void {
    if (this.deadline) clearTimeout(this.deadline);
    this.endTransaction('abandoned');
    const outcome = this.refused ? 'refused' : this.accepted > 0 ? 'accepted' : 'no_message';
    smtpSessions.inc({ listener: this.listener, outcome });
    this.span.setAttribute('smtp.messages_accepted', this.accepted);
    this.span.end();
  }

  private endTransaction(outcome: string, failed = false): void {
    if (!this.tx) return;
    this.tx.setAttribute('smtp.outcome', outcome);
    if (failed) this.tx.setStatus({ code: SpanStatusCode.ERROR });
    this.tx.end();
    this.tx = null;
  }
}

const states = new WeakMap<SMTPServerSession, SessionState>();

export function openSession(listener: Listener, session: SMTPServerSession): SessionState {
  const state = new SessionState(listener, session);
  states.set(session, state);
  return state;
}

/** The state of a session; sessions are always opened in onConnect, before any other hook. */
export function stateOf(listener: Listener, session: SMTPServerSession): SessionState {
  return states.get(session) ?? openSession(listener, session);
}
