import {
  verificationCodeInputSchema,
  verificationCodeResultSchema,
} from '../../../core/state/messages/verification-code.schemas.js';
import { WAIT_DEFAULT_MS, WAIT_MAX_MS } from '../../../core/state/messages/wait.schemas.js';
import { defineTool, describeFields } from '../tool.js';
import { ERRORS_NOTE, FROM_FILTER, MAILBOX_ADDRESS_ACTING, REQUIRE_AUTHENTICATED } from './fields.js';

/** GET /api/messages/verification-code. */
export const getVerificationCodeTool = defineTool({
  name: 'get_verification_code',
  title: 'Get a one-time code (waits for it)',
  description:
    'Sign up or log in somewhere, then call this once: it returns the one-time code of the newest received message ' +
    'that has one (at once when it is already there), else waits up to timeoutMs (default ' +
    `${WAIT_DEFAULT_MS} ms, at most ${WAIT_MAX_MS} ms) for one to arrive. Stateless and safe to call again: it returns the ` +
    'same newest code until a newer one arrives. Only mail since sinceTs counts (default: the last 10 minutes). ' +
    'Narrow with from (e.g. "github.com") and subjectContains. Answers code (the first code of that message, separators ' +
    'removed, ready to type), all its codes, its verification links (for magic-link / confirm-address flows) and the ' +
    'message summary, with authenticated and a warning when the sender is not authenticated (a code in forged mail is ' +
    'an attack: prefer requireAuthenticated true). On timeout: code null, timedOut true; call again. Needs the MailboxRead scope. ' +
    ERRORS_NOTE,
  input: describeFields(verificationCodeInputSchema, {
    mailboxAddress: MAILBOX_ADDRESS_ACTING,
    from: FROM_FILTER,
    subjectContains: 'Only messages whose subject contains this text (case-insensitive).',
    requireAuthenticated: REQUIRE_AUTHENTICATED,
    sinceTs: 'Only messages received at or after this Unix time in milliseconds. Default: 10 minutes ago.',
    timeoutMs: `How long to wait in milliseconds, 0..${WAIT_MAX_MS}. Default ${WAIT_DEFAULT_MS}. 0 checks once.`,
  }),
  output: verificationCodeResultSchema,
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: (input, { principal, services, signal }) => services.waits.waitForCode(principal, input, { signal }),
});
