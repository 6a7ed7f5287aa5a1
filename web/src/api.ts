/** The API client of the console: bearer token from the session, the envelope unwrapped. */
import { session } from './session';

export interface Envelope<T> {
  data: T | null;
  code: number;
  msg: string | null;
  errMsg: string | null;
  errorCode?: string;
  tid: string;
}

/**
 * An error answer, with a sentence a person can act on: the server's own message (it names the
 * field, the limit, the reason), with what to do next; a generic sentence only when it sent none.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errMsg: string | null,
    readonly errorCode: string | null,
    readonly tid: string | null,
    /** Whether the request carried a token: a 401 then means it is no longer valid. */
    readonly withToken = true,
  ) {
    super(plainWords(status, errMsg, withToken));
  }
}

const NEXT_STEP: Record<number, string> = {
  429: 'Wait a moment and try again.',
};

export function plainWords(status: number, errMsg: string | null, withToken = true): string {
  if (status === 0) return 'The server cannot be reached. Check that it is running, then try again.';
  if (status === 401 && withToken)
    return `${(errMsg ?? 'Your token is no longer valid').replace(/\.$/, '')}. Sign in again.`;
  if (status >= 500) return `The server could not do that right now${errMsg ? ` (${errMsg})` : ''}. Try again shortly.`;
  if (errMsg) return NEXT_STEP[status] ? `${errMsg} ${NEXT_STEP[status]}` : errMsg;
  if (status === 401) return 'Not signed in.';
  if (status === 403) return 'This token is not allowed to do that.';
  if (status === 404) return 'Not found: it was deleted or this token cannot see it.';
  if (status === 409) return 'That conflicts with the current state.';
  if (status === 413) return 'That is too large for the server.';
  if (status === 429) return 'Too many requests; wait a moment and try again.';
  return `The request was refused (HTTP ${status}).`;
}

type Query = Record<string, string | number | boolean | undefined | null>;

export async function api<T>(
  method: string,
  path: string,
  options: { query?: Query; body?: unknown; token?: string | null; headers?: Record<string, string> } = {},
): Promise<T> {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(options.query ?? {}))
    if (v !== undefined && v !== null && v !== '') url.searchParams.set(k, String(v));
  const token = options.token === undefined ? session.token.value : options.token;
  const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
  if (token) headers.Authorization = `Bearer ${token}`;
  let body: BodyInit | undefined;
  if (options.body instanceof FormData) body = options.body;
  else if (options.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  let response: Response;
  try {
    response = await fetch(url, { method, headers, body, credentials: 'omit', cache: 'no-store' });
  } catch {
    throw new ApiError(0, null, null, null);
  }
  const envelope = (await response.json().catch(() => null)) as Envelope<T> | null;
  if (!response.ok || !envelope) {
    if (response.status === 401 && token === session.token.value) session.expired.value = true;
    throw new ApiError(
      response.status,
      envelope?.errMsg ?? null,
      envelope?.errorCode ?? null,
      envelope?.tid ?? null,
      Boolean(token),
    );
  }
  return envelope.data as T;
}

/** Downloads need the bearer header too, so they are fetched and handed to the browser as a blob. */
export async function download(path: string, filename: string): Promise<void> {
  const response = await fetch(path, { headers: { Authorization: `Bearer ${session.token.value}` } });
  if (!response.ok) {
    const envelope = (await response.json().catch(() => null)) as Envelope<unknown> | null;
    throw new ApiError(response.status, envelope?.errMsg ?? null, envelope?.errorCode ?? null, envelope?.tid ?? null);
  }
  const url = URL.createObjectURL(await response.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.rel = 'noopener';
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** A text resource (a raw source) fetched with the bearer header; errors as ApiError. */
export async function fetchText(path: string): Promise<string> {
  const response = await fetch(path, { headers: { Authorization: `Bearer ${session.token.value}` } });
  if (!response.ok) {
    const envelope = (await response.json().catch(() => null)) as Envelope<unknown> | null;
    throw new ApiError(response.status, envelope?.errMsg ?? null, envelope?.errorCode ?? null, envelope?.tid ?? null);
  }
  return response.text();
}

export const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
