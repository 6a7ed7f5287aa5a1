import { signal } from '@preact/signals';

/**
 * Screens that depend on routes other work adds (approval queue, audit trail, drafts, scheduled
 * sends, thread states) appear only when the server's OpenAPI document lists those routes.
 */
export const features = signal({
  approvals: false,
  audit: false,
  mailboxAudit: false,
  domainAudit: false,
  drafts: false,
  /** GET /api/messages takes status=scheduled. */
  scheduled: false,
  /** GET /api/threads (threads by state). */
  threads: false,
});

interface OpenApiDoc {
  paths?: Record<string, { get?: { parameters?: { name?: string }[] } }>;
}

export async function detectFeatures(): Promise<void> {
  try {
    const doc = (await (await fetch('/api/openapi.json')).json()) as OpenApiDoc;
    const paths = doc.paths ?? {};
    const mailboxAudit = '/api/mailbox/audit' in paths;
    const domainAudit = '/api/domain/audit' in paths;
    features.value = {
      approvals: '/api/messages/{messageId}/approve' in paths,
      audit: mailboxAudit || domainAudit,
      mailboxAudit,
      domainAudit,
      drafts: '/api/drafts' in paths,
      scheduled: (paths['/api/messages']?.get?.parameters ?? []).some((p) => p.name === 'status'),
      threads: '/api/threads' in paths,
    };
  } catch {
    // No document, no optional screens.
  }
}
