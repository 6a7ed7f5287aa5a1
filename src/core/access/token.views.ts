import type { Principal } from './principal.js';
import type { Scope, TokenKind } from './scopes.js';
import type { TokenPolicy } from './policy.schemas.js';

export type CreatedSource = 'bootstrap' | 'self' | 'domain' | 'login' | 'resource' | 'cli';

/** A token as the governance routes show it: never its plaintext. */
export interface TokenRecordView {
  tokenId: string;
  tokenName: string;
  tokenPrefix: string;
  scopes: Scope[];
  createdSource: string;
  expiresAtTs: number | null;
  disabledAtTs: number | null;
  lastUsedAtTs: number | null;
  lastUsedRemoteIp: string | null;
  canRevealPlaintext: boolean;
  createdAtTs: number;
  policy: TokenPolicy | null;
}

/** A token just minted: the one answer that carries its plaintext. */
export interface TokenCreatedView {
  tokenId: string;
  tokenName: string;
  tokenPrefix: string;
  scopes: Scope[];
  createdSource: string;
  accessToken: string;
  expiresAtTs: number | null;
  createdAtTs: number;
  policy: TokenPolicy | null;
}

export interface MintSpec {
  kind: TokenKind;
  domainId: string;
  mailboxId: string | null;
  name: string;
  scopes: readonly Scope[];
  expiresAt: Date | null;
  createdSource: CreatedSource;
  parentTokenId: string | null;
  /** The token's own policy narrowing (already checked against its creator's chain). */
  policy?: TokenPolicy | null;
}

/** The owner whose tokens a governance call manages, and the token it acts with. */
export interface Governance {
  mailboxId: string;
  caller: Principal;
  onlyLaterThanCaller: boolean;
}
