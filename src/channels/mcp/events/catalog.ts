import { z } from 'zod';
import { mailboxEventSchema } from '../../../core/state/events/event.schemas.js';
import { EVENT_TYPES, type EventType } from '../../../types/mailbox-event.js';

/** The extension's identifier, as `capabilities.extensions` names it. */
export const EVENTS_EXTENSION = 'io.modelcontextprotocol/events';

/** How an occurrence can reach a client; webhook is offered only where subscriptions are stored. */
export type DeliveryMode = 'poll' | 'push' | 'webhook';

const DESCRIPTIONS: Record<EventType, string> = {
  'message.received': 'A message arrived in the mailbox (SMTP port 25, or local delivery from another mailbox).',
  'message.sent': 'The mailbox queued a message for sending (send_mail, reply_message, HTTP or SMTP submission).',
  'message.delivery':
    "A recipient's delivery status of a sent message changed (delivered, deferred, failed; cancelled for a scheduled send that was cancelled).",
  'message.read-state': 'Messages were marked read or unread.',
  'message.deleted': 'Messages were deleted.',
  'message.approval-required': 'An outgoing message is held for approval before it is sent.',
  'message.approved': 'A held message was approved and queued.',
  'message.rejected': 'A held message was rejected and will not be sent.',
  'thread.state-changed':
    "A thread's workflow state (open, awaiting_reply, needs_human, closed) or follow-up time was set.",
  'thread.follow-up-due': 'A thread still awaiting a reply reached its follow-up time (emitted once per follow-up).',
  'draft.created':
    'A draft was saved in the mailbox (create_draft or POST /api/drafts), e.g. one an agent prepared for a person.',
  'draft.updated': 'A draft was changed (update_draft or PATCH /api/drafts/{draftId}).',
  'draft.deleted':
    'A draft left the mailbox: deleted, or sent (data.reason "sent" with the messageId of the message it became).',
  'webhook.disabled': 'A webhook of the mailbox was disabled: failing for too long, or its registering token is gone.',
};

/** Subscription arguments: which mailbox, by the rule every tool uses. */
export const eventArgumentsSchema = z
  .object({
    mailboxAddress: z
      .string()
      .trim()
      .max(320)
      .optional()
      .describe(
        "The mailbox to watch. A mailbox token may omit it (its own); a domain token must name one of its domain's.",
      ),
  })
  .strict();

const inputSchema = z.toJSONSchema(eventArgumentsSchema, { target: 'draft-7', io: 'input' });

/** The payload of every occurrence is the real-time event object (docs/contract.md, Real-time). */
const payloadSchema = (type: EventType) =>
  z.toJSONSchema(mailboxEventSchema.extend({ type: z.literal(type) }), { target: 'draft-7', io: 'output' });

export interface EventDefinition {
  name: EventType;
  description: string;
  delivery: DeliveryMode[];
  inputSchema: Record<string, unknown>;
  payloadSchema: Record<string, unknown>;
}

export function eventDefinitions(delivery: DeliveryMode[]): EventDefinition[] {
  return EVENT_TYPES.map((name) => ({
    name,
    description: DESCRIPTIONS[name],
    delivery: [...delivery],
    inputSchema: inputSchema as Record<string, unknown>,
    payloadSchema: payloadSchema(name) as Record<string, unknown>,
  }));
}

export const isEventType = (name: string): name is EventType => (EVENT_TYPES as readonly string[]).includes(name);
