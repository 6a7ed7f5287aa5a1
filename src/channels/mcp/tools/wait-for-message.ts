import {
  waitInputSchema,
  waitResultSchema,
  WAIT_DEFAULT_MS,
  WAIT_MAX_MS,
} from '../../../core/state/messages/wait.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { ERRORS_NOTE, FROM_FILTER, MAILBOX_ADDRESS_ACTING, REQUIRE_AUTHENTICATED } from './fields.js';

/** GET /api/messages/wait. */
export const waitForMessageTool = defineTool({
  name: 'wait_for_message',
  title: 'Wait for the next message',
  description:
    'Block until a new message matching the filters arrives in a mailbox, or until timeoutMs passes (default ' +
    `${WAIT_DEFAULT_MS} ms, at most ${WAIT_MAX_MS} ms). Made for sign-up and one-time-code flows: ` +
    '(1) call it with timeoutMs 0 to get the current eventId, (2) trigger the e-mail (e.g. submit the sign-up form), ' +
    '(3) call it again with sinceEventId = that eventId and a from / subjectContains filter, repeating while timedOut is true ' +
    "and passing each answer's eventId on. Without sinceEventId only mail arriving after the call counts. On a match it returns " +
    'the message summary (with a warning when its sender is not authenticated; call get_message for the body) and its eventId; pass that eventId as sinceEventId to wait for the ' +
    'next one without seeing this one again. On timeout: message null, timedOut true. Needs the MailboxRead scope. ' +
    ERRORS_NOTE,
  input: describeFields(waitInputSchema, {
    mailboxAddress: MAILBOX_ADDRESS_ACTING,
    from: FROM_FILTER,
    subjectContains: 'Only messages whose subject contains this text (case-insensitive), e.g. "verification code".',
    requireAuthenticated: REQUIRE_AUTHENTICATED,
    direction: '"inbound" (received, the default) or "outbound" (sent by this mailbox).',
    sinceEventId: 'Only messages that arrived after this eventId (from a previous wait_for_message answer).',
    timeoutMs: `How long to wait in milliseconds, 0..${WAIT_MAX_MS}. Default ${WAIT_DEFAULT_MS}. 0 checks once and returns.`,
  }),
  output: waitResultSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: async (input, { principal, services, signal, progress }) => {
    // Progress every MCP_PROGRESS_INTERVAL while waiting, when the client passed a progressToken: a
    // client that resets its request timeout on progress can then wait without guessing our timing.
    const started = performance.now();
    const ticker = progress
      ? setInterval(
          () =>
            void progress(Math.round(performance.now() - started), input.timeoutMs, 'waiting for a message').catch(
              () => undefined,
            ),
          services.config.MCP_PROGRESS_INTERVAL,
        )
      : undefined;
    try {
      return await services.waits.wait(principal, input, { signal });
    } finally {
      clearInterval(ticker);
    }
  },
});
