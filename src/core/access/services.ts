import type { TokenCipher } from './token-cipher.js';
import type { TokenAuthenticator } from './token-authenticator.js';
import type { TokenGovernance } from './token-governance.js';
import type { TokenMinter } from './token-minter.js';
import type { UsageRecorder } from './usage-recorder.js';
import type { LoginService } from './login.service.js';
import type { PasswordHashGate } from './password-hash-gate.js';
import type { ApprovalCredentials } from './approval-credential.js';

/** The access floor's share of `Services`: who is calling, and their tokens. */
export interface AccessServices {
  cipher: TokenCipher;
  usage: UsageRecorder;
  /** Every channel authenticates here (HTTP, MCP, Socket.IO, SMTP AUTH). */
  tokenAuth: TokenAuthenticator;
  /** Writes new tokens (bootstrap, login, governance, declared resources). */
  tokenMinter: TokenMinter;
  /** The token governance routes (self and domain). */
  tokens: TokenGovernance;
  login: LoginService;
  /** Concurrent password hashes, per client address and overall. */
  hashes: PasswordHashGate;
  /** Mints and opens the one-time credentials of approval links (a key of its own). */
  approvalCredentials: ApprovalCredentials;
}
