import { io, type Socket } from 'socket.io-client';
import { signal } from '@preact/signals';
import { EVENT_TYPES } from '../../src/types/mailbox-event';

export type LiveState = 'connecting' | 'live' | 'offline';
export const liveState = signal<LiveState>('offline');

/** Every event the hub sends (docs/api.md, "Real-time events"): the server's own list, so none is missed. */
export const MAILBOX_EVENTS = EVENT_TYPES;

export interface LiveEvent {
  eventId: string;
  type: string;
  mailboxAddress: string;
  data: Record<string, unknown>;
}

/**
 * One Socket.IO connection for the mailbox on screen, resuming from the last event it saw.
 * The token goes in the handshake's `auth` payload, never in the URL (the server refuses that).
 */
export function connectLive(
  token: string,
  mailboxAddress: string | null,
  onEvent: (event: LiveEvent) => void,
  onReady: (mailboxAddress: string) => void,
): () => void {
  liveState.value = 'connecting';
  const auth: Record<string, string> = { token };
  if (mailboxAddress) auth.mailboxAddress = mailboxAddress;
  const socket: Socket = io({ path: '/hubs/mailbox-events', transports: ['websocket'], auth });
  const remember = (event: LiveEvent) => {
    auth.lastEventId = event.eventId;
    onEvent(event);
  };
  for (const name of MAILBOX_EVENTS) socket.on(name, remember);
  socket.on('subscription.ready', (ready: { mailboxAddress: string; lastEventId: string | null }) => {
    if (ready.lastEventId && !auth.lastEventId) auth.lastEventId = ready.lastEventId;
    liveState.value = 'live';
    onReady(ready.mailboxAddress);
  });
  socket.on('resync.required', (r: { headEventId: string }) => {
    auth.lastEventId = r.headEventId;
    onEvent({ eventId: r.headEventId, type: 'resync.required', mailboxAddress: '', data: {} });
  });
  socket.on('disconnect', () => (liveState.value = 'offline'));
  socket.on('connect_error', () => (liveState.value = 'offline'));
  socket.on('subscription.closed', () => (liveState.value = 'offline'));
  return () => {
    socket.disconnect();
    liveState.value = 'offline';
  };
}

/** The newest event, for screens to react to (the inbox refreshes its first page). */
export const lastEvent = signal<LiveEvent | null>(null);
