import type { Clock } from '../../base/time.js';
import type { TokenMinter } from '../../access/token-minter.js';
import type { Scope, TokenKind } from '../../access/scopes.js';
import { hashToken } from '../../access/token-format.js';
import type { Sql } from '../../../storage/database.js';
import { ownedToken } from './resource.store.js';

/** The keys of a token secret (docs/contract.md): the same for a Domain's and a Mailbox's secret. */
export interface TokenSecretData {
  accessToken: string;
  tokenId: string;
  expiresAtTs: string;
}

export interface TokenOwner {
  kind: TokenKind;
  domainId: string;
  mailboxId: string | null;
  /** `<namespace>/<name>`; the token is named `resource:<key>` so it is recognisable in lists. */
  resourceKey: string;
  scopes: readonly Scope[];
  ttlMs: number;
}

/** A token is renewed once less than this share of its lifetime is left (rotation before expiry). */
const RENEW_WHEN_REMAINING = 1 / 3;

// access_token.name is varchar(200); the name is for people reading token lists, nothing looks it up.
export const resourceTokenName = (key: string): string => `resource:${key}`.slice(0, 200);

/**
 * Keeps the token a secret already holds while it still authenticates, has every wanted scope
 * and is not close to expiry; otherwise mints one. Re-applying therefore mints nothing.
 * Other tokens are never disabled here (only deleting the resource does that): two processes
 * with separate secret stores on one database would otherwise disable each other's token on
 * every pass. A renewed token's predecessor stays valid until its own expiry, so consumers
 * have time to pick up the new one. Runs inside the caller's transaction.
 */
export async function keepOrMintToken(
  trx: Sql,
  minter: TokenMinter,
  clock: Clock,
  owner: TokenOwner,
  held: Record<string, string> | null,
): Promise<{ data: TokenSecretData; minted: boolean }> {
  const now = clock.now();
  const current =
    held?.tokenId && held.accessToken ? await findUsable(trx, owner, held.tokenId, held.accessToken, now) : undefined;
  if (current && current.remainingMs > owner.ttlMs * RENEW_WHEN_REMAINING) {
    return {
      data: { accessToken: held!.accessToken!, tokenId: current.id, expiresAtTs: current.expiresAtTs },
      minted: false,
    };
  }
  const created = await minter.mint(trx, {
    kind: owner.kind,
    domainId: owner.domainId,
    mailboxId: owner.mailboxId,
    name: resourceTokenName(owner.resourceKey),
    scopes: owner.scopes,
    expiresAt: new Date(now.getTime() + owner.ttlMs),
    createdSource: 'resource',
    parentTokenId: null,
  });
  return {
    data: { accessToken: created.accessToken, tokenId: created.tokenId, expiresAtTs: String(created.expiresAtTs) },
    minted: true,
  };
}

/** The held token when it authenticates for this owner with every wanted scope. */
async function findUsable(trx: Sql, owner: TokenOwner, tokenId: string, plaintext: string, now: Date) {
  const row = await ownedToken(trx, owner, tokenId, hashToken(plaintext));
  if (!row || !owner.scopes.every((s) => row.scopes.includes(s))) return undefined;
  const expiresAt = row.expires_at === null ? Infinity : new Date(row.expires_at).getTime();
  if (expiresAt <= now.getTime()) return undefined;
  return {
    id: row.id,
    remainingMs: expiresAt - now.getTime(),
    expiresAtTs: row.expires_at === null ? '' : String(expiresAt),
  };
}

/** True when the stored secret already holds exactly `data` (so it is not rewritten). */
export function sameSecret(held: Record<string, string> | null, data: TokenSecretData): boolean {
  return (
    held !== null &&
    held.accessToken === data.accessToken &&
    held.tokenId === data.tokenId &&
    held.expiresAtTs === data.expiresAtTs
  );
}
