import { z } from 'zod';
import { limitSchema } from '../../base/paging/cursor.js';
import { EVENT_TYPES } from '../../../types/mailbox-event.js';

/** An event id as the wire carries it: the per-mailbox sequence, a decimal string (numbers accepted). */
export const eventIdSchema = z
  .union([
    z
      .string()
      .trim()
      .regex(/^\d{1,15}$/, 'an eventId (digits)'),
    z.number().int().min(0).max(1e15),
  ])
  .transform((v) => Number(v));

/** GET /api/events query; `after` absent starts at the oldest retained event. */
export const listEventsInputSchema = z.object({
  mailboxAddress: z.string().trim().max(320).optional(),
  after: eventIdSchema.optional(),
  limit: limitSchema,
});
export type ListEventsInput = z.infer<typeof listEventsInputSchema>;

export const mailboxEventSchema = z.object({
  eventId: z.string(),
  type: z.enum(EVENT_TYPES),
  mailboxId: z.string(),
  mailboxAddress: z.string(),
  occurredAtTs: z.number().int(),
  data: z.record(z.string(), z.unknown()),
});

export const eventPageSchema = z.object({
  items: z.array(mailboxEventSchema),
  /** Pass as `after` for the next call (the last item's id; after a resync, the head). */
  lastEventId: z.string(),
  hasMore: z.boolean(),
  /**
   * True when events after `after` were already removed by retention: items is empty, the
   * client refetches its state (GET /api/messages) and continues from lastEventId.
   */
  resyncRequired: z.boolean(),
  /** The oldest event id the log still holds, null when it holds none. */
  oldestEventId: z.string().nullable(),
  /** The newest event id of the mailbox when the page was read. */
  headEventId: z.string(),
});
export type EventPage = z.infer<typeof eventPageSchema>;
