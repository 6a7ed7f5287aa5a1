import { z } from 'zod';
import { SCOPES, scopeSchema } from './scopes.js';
import { tokenPolicySchema, tokenPolicyViewSchema } from './policy.schemas.js';

// Wire shapes of the token governance calls (docs/contract.md, Wire format). The HTTP routes validate
// with the input schemas and document the output schemas in OpenAPI; MCP can reuse both.

/** Latest instant a JavaScript Date (and so a timestamptz round trip) can hold, in Unix ms. */
export const MAX_TS = 8_640_000_000_000_000;

const ts = z.number().int();
const tsOrNull = ts.nullable();

export const createTokenInputSchema = z
  .object({
    tokenName: z.string().trim().min(1).max(200),
    scopes: z.array(scopeSchema).min(1).max(SCOPES.length),
    // Unix ms; beyond MAX_TS a Date is invalid and would reach the database as garbage.
    expiresAtTs: z.number().int().positive().max(MAX_TS).optional().nullable(),
    /** Narrows the outbound policy for this token and its children (docs/api.md, "Token policy"). */
    policy: tokenPolicySchema.optional().nullable(),
  })
  .strict();
export type CreateTokenInput = z.infer<typeof createTokenInputSchema>;

/** An opaque id in a path (token, mailbox); unknown ids are 404, absurdly long ones 400 (as for messages). */
export const idParam = z.string().trim().min(1).max(200);
export const tokenIdParamsSchema = z.object({ tokenId: idParam });
export const domainMailboxParamsSchema = z.object({ mailboxId: idParam });
export const domainTokenParamsSchema = z.object({ mailboxId: idParam, tokenId: idParam });

export const tokenRecordSchema = z.object({
  tokenId: z.string(),
  tokenName: z.string(),
  tokenPrefix: z.string(),
  scopes: z.array(scopeSchema),
  createdSource: z.string(),
  expiresAtTs: tsOrNull,
  disabledAtTs: tsOrNull,
  lastUsedAtTs: tsOrNull,
  lastUsedRemoteIp: z.string().nullable(),
  canRevealPlaintext: z.boolean(),
  createdAtTs: ts,
  policy: tokenPolicyViewSchema,
});

export const tokenCreatedSchema = z.object({
  tokenId: z.string(),
  tokenName: z.string(),
  tokenPrefix: z.string(),
  scopes: z.array(scopeSchema),
  createdSource: z.string(),
  accessToken: z.string(),
  expiresAtTs: tsOrNull,
  createdAtTs: ts,
  policy: tokenPolicyViewSchema,
});

export const tokenRevealedSchema = z.object({ tokenId: z.string(), accessToken: z.string() });
export const tokenDeletedSchema = z.object({ tokenId: z.string(), deleted: z.literal(true) });
