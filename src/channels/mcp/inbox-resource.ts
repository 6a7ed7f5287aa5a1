import { ResourceTemplate, type McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Principal } from '../../core/access/principal.js';
import { isAppError } from '../../core/base/errors.js';
import type { Services } from '../../core/services.js';
import { resourceError } from './errors.js';

/** Messages a read of the inbox resource shows: the newest page a model can take in at once. */
const INBOX_PAGE = 20;

const inboxUri = (address: string) => `mailbox://${address}/inbox`;

function addressOf(variable: string | string[] | undefined): string {
  const raw = Array.isArray(variable) ? (variable[0] ?? '') : (variable ?? '');
  try {
    return decodeURIComponent(raw); // clients may percent-encode the @ when expanding {address}
  } catch {
    return raw;
  }
}

/** The inboxes this token may read: its own, or (domain token with DomainManage) its domain's. */
async function inboxAddresses(services: Services, principal: Principal): Promise<string[]> {
  if (principal.mailboxAddress) return [principal.mailboxAddress];
  try {
    return (await services.mailboxes.list(principal, { limit: 200 })).items.map((m) => m.address);
  } catch (err) {
    // Without DomainManage a domain token cannot enumerate mailboxes; it can still read an
    // inbox by address through the template.
    if (isAppError(err) && err.status === 403) return [];
    throw resourceError(err, services.log, 'resources/list');
  }
}

export const INBOX_TEMPLATE = 'mailbox://{address}/inbox';

export const inboxMetadata = {
  title: 'Inbox',
  description: `The ${INBOX_PAGE} newest received messages of a mailbox (summaries, newest first; same shape as list_messages). Needs MailboxRead.`,
  mimeType: 'application/json',
};

/** resources/list of the template: one entry per inbox this token may read. */
export const listInboxes = async (services: Services, principal: Principal) => ({
  resources: (await inboxAddresses(services, principal)).map((address) => ({
    uri: inboxUri(address),
    name: `${address} inbox`,
    mimeType: 'application/json',
  })),
});

/** resources/read of one inbox, on either protocol revision. */
export async function readInbox(
  services: Services,
  principal: Principal,
  uri: URL,
  address: string | string[] | undefined,
): Promise<{ contents: { uri: string; mimeType: string; text: string }[] }> {
  try {
    const page = await services.messages.list(principal, {
      mailboxAddress: addressOf(address),
      limit: INBOX_PAGE,
      direction: 'inbound',
    });
    return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(page) }] };
  } catch (err) {
    throw resourceError(err, services.log, uri.href);
  }
}

/**
 * `mailbox://{address}/inbox`: the newest received messages as JSON (the list_messages page
 * shape). On 2025-11-25 a resource, not a push: there is no session to hold a
 * resources/subscribe, so "tell me when mail arrives" is wait_for_message or, on 2026-07-28, the
 * events extension.
 */
export function registerInboxResource(mcp: McpServer, services: Services, principal: Principal): void {
  mcp.registerResource(
    'inbox',
    new ResourceTemplate(INBOX_TEMPLATE, { list: () => listInboxes(services, principal) }),
    inboxMetadata,
    (uri, variables) => readInbox(services, principal, uri, variables.address),
  );
}
