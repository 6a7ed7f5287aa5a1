// The event's wire shape, shared by every layer (storage carries it on the bus, the core writes it,
// channels emit it): it imports nothing.

export const EVENT_TYPES = [
  'message.received',
  'message.sent',
  'message.delivery',
  'message.read-state',
  'message.deleted',
  // The approval gate (docs/api.md, "Approval gate").
  'message.approval-required',
  'message.approved',
  'message.rejected',
  /** A thread's workflow state was set by PUT /api/threads/{threadId}/state (docs/workflow.md). */
  'thread.state-changed',
  /** A thread still awaiting_reply reached its followUpAt (docs/workflow.md, "Follow-ups"). */
  'thread.follow-up-due',
  /** A draft was created, changed, or removed (deleted, or sent: data.reason) (docs/workflow.md, "Drafts"). */
  'draft.created',
  'draft.updated',
  'draft.deleted',
  /** A webhook was disabled: failing for WEBHOOK_DISABLE_AFTER, or its registering token gone (docs/webhooks.md). */
  'webhook.disabled',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The wire shape of one event (docs/contract.md, Real-time). */
export interface MailboxEvent {
  eventId: string;
  type: EventType;
  mailboxId: string;
  mailboxAddress: string;
  occurredAtTs: number;
  data: Record<string, unknown>;
}
