import type { ConsoleServer } from './console-server.js';

/** A call of the real API, as an agent or a person beside the console makes it; the envelope's data. */
export async function apiCall(
  server: ConsoleServer,
  token: string,
  method: string,
  apiPath: string,
  body?: unknown,
): Promise<any> {
  const r = await fetch(`${server.url}${apiPath}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const envelope = (await r.json()) as { data: any; errMsg: string | null };
  if (!r.ok) throw new Error(`${method} ${apiPath}: ${r.status} ${envelope.errMsg}`);
  return envelope.data;
}

/** The quick-start mailbox's token, from its password (resources/example.yaml). */
export async function agentToken(server: ConsoleServer): Promise<string> {
  const r = await fetch(`${server.url}/api/mailbox/auth/login/password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ mailboxAddress: 'agent@example.test', password: 'agent-password-123' }),
  });
  return ((await r.json()) as { data: { accessToken: string } }).data.accessToken;
}

/** An upload (POST /api/messages/attachments); its id for attachmentIds. */
export async function upload(server: ConsoleServer, token: string, name: string, type: string, bytes: Buffer) {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type }), name);
  const r = await fetch(`${server.url}/api/messages/attachments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
  const envelope = (await r.json()) as { data: { attachmentUploadId: string }; errMsg: string | null };
  if (r.status !== 201) throw new Error(`upload ${name}: ${r.status} ${envelope.errMsg}`);
  return envelope.data.attachmentUploadId;
}

/** The page's document, as far as the width checks read it (the tests compile without the DOM types). */
export type Doc = { document: { documentElement: { scrollWidth: number } } };
