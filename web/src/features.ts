import { signal } from '@preact/signals';

/**
 * Screens that depend on routes other work adds (approval queue, audit trail, drafts) appear only when
 * the server's OpenAPI document lists those routes.
 */
export const features = signal({
  approvals: false,
  audit: false,
  mailboxAudit: false,
  domainAudit: false,
  drafts: false,
});

export async function detectFeatures(): Promise<void> {
  try {
    const doc = (await (await fetch('/api/openapi.json')).json()) as { paths?: Record<string, unknown> };
    const paths = doc.paths ?? {};
    const mailboxAudit = '/api/mailbox/audit' in paths;
    const domainAudit = '/api/domain/audit' in paths;
    features.value = {
      approvals: '/api/messages/{messageId}/approve' in paths,
      audit: mailboxAudit || domainAudit,
      mailboxAudit,
      domainAudit,
      drafts: '/api/drafts' in paths,
    };
  } catch {
    // No document, no optional screens.
  }
}
